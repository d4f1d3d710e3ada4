"""Tests for dashfloat.tools.safeopen: every open beneath a descriptor of the root, by the
kernel's openat2 (RESOLVE_BENEATH) and by the descriptor walk, with the same answers."""

from __future__ import annotations

import errno
import os
import stat
import threading

import pytest

from dashfloat.tools import safeopen
from dashfloat.tools.safeopen import Escape, Root


def have_openat2() -> bool:
    fd = os.open("/", os.O_RDONLY)
    try:
        return safeopen.have_openat2(fd)
    finally:
        os.close(fd)


@pytest.fixture(params=["openat2", "walk"])
def mode(request, monkeypatch):
    if request.param == "walk":
        monkeypatch.setattr(safeopen, "_openat2_state", False)
    elif not have_openat2():
        pytest.skip("this kernel has no usable openat2")
    return request.param


@pytest.fixture
def tree(tmp_path):
    """root/ with sub/f ("in"), links of every kind; outside/f ("SECRET"); link -> root."""
    root, out = tmp_path / "root", tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    out.mkdir()
    (root / "sub" / "f").write_text("in")
    (out / "f").write_text("SECRET")
    (root / "file").write_text("plain")
    os.symlink("sub", root / "relsub")
    os.symlink(root / "sub", root / "abssub")  # absolute, inside: allowed as today
    os.symlink("sub/f", root / "lf")
    os.symlink("../sub/f", root / "sub" / "up")
    os.symlink("../outside", root / "esc")
    os.symlink(out, root / "absesc")
    os.symlink("../outside/f", root / "escf")
    os.symlink("loop", root / "loop")
    os.symlink("sub/new/x.txt", root / "dangling")
    os.symlink(root, tmp_path / "link")
    os.symlink(tmp_path / "link" / "sub", root / "vialink")  # absolute, through a link to the root
    return root


def read(root, rel) -> bytes:
    with Root(root) as r:
        fd = r.open(rel, os.O_RDONLY)
    try:
        return os.read(fd, 100)
    finally:
        os.close(fd)


@pytest.mark.parametrize("rel", ["sub/f", "relsub/f", "abssub/f", "lf", "sub/up", "vialink/f",
                                 "sub/../sub/f", "./sub//f", "relsub/../sub/f"])
def test_paths_that_stay_inside_open(tree, mode, rel):
    assert read(tree, rel) == b"in"


def test_the_root_spelled_through_a_link(tree, mode):
    assert read(tree.parent / "link", "abssub/f") == b"in"
    assert read(tree.parent / "link", "lf") == b"in"


@pytest.mark.parametrize("rel, names", [
    ("esc/f", "esc"), ("absesc/f", "absesc"), ("escf", "escf"), ("..", None),
    ("sub/../../outside/f", None), ("relsub/../../outside/f", None),
])
def test_paths_that_lead_outside_are_an_escape(tree, mode, rel, names):
    with pytest.raises(Escape) as info:
        read(tree, rel)
    assert info.value.errno == errno.EXDEV
    if names:  # the message names the link that leads out
        assert names in info.value.strerror and "symbolic link leads outside" in info.value.strerror
    else:
        assert "above the working directory" in info.value.strerror


@pytest.mark.parametrize("rel, err", [("loop", errno.ELOOP), ("loop/x", errno.ELOOP),
                                      ("file/x", errno.ENOTDIR), ("nope/x", errno.ENOENT),
                                      ("nope", errno.ENOENT)])
def test_other_failures_keep_their_errno(tree, mode, rel, err):
    with pytest.raises(OSError) as info:
        read(tree, rel)
    assert info.value.errno == err and not isinstance(info.value, Escape)


def test_o_nofollow_is_kept_for_the_last_component(tree, mode):
    with Root(tree) as r, pytest.raises(OSError) as info:
        r.open("lf", os.O_RDONLY | os.O_NOFOLLOW)
    assert info.value.errno == errno.ELOOP


def test_parent_follows_a_final_link_to_its_target(tree, mode):
    with Root(tree) as r:
        for rel, where, name in [("lf", "sub", b"f"), ("sub/new", "sub", b"new"),
                                 ("abssub/f", "sub", b"f"), ("vialink/f", "sub", b"f"),
                                 ("sub/..", ".", b".")]:
            fd, got = r.parent(rel)
            try:
                assert os.path.samestat(os.fstat(fd), os.stat(tree / where)) and got == name, rel
            finally:
                os.close(fd)
        with pytest.raises(Escape) as info:
            r.parent("escf")
        assert "escf" in info.value.strerror
        with pytest.raises(FileNotFoundError):
            r.parent("dangling")  # its target's directory does not exist
        fd, name = r.parent("dangling", make_parents=True)
        os.close(fd)
        assert name == b"x.txt" and (tree / "sub" / "new").is_dir()


def test_makedirs_creates_inside_and_never_through_a_link_outside(tree, mode):
    with Root(tree) as r:
        r.makedirs("a/b/c")
        assert (tree / "a" / "b" / "c").is_dir()
        with pytest.raises(Escape):
            r.makedirs("esc/new/deeper")
    assert sorted(os.listdir(tree.parent / "outside")) == ["f"]


def test_stat_follows_inside_links_and_never_opens_a_fifo(tree, mode):
    os.mkfifo(tree / "fifo")
    done = {}
    with Root(tree) as r:
        t = threading.Thread(target=lambda: done.update(st=r.stat("fifo")), daemon=True)
        t.start()
        t.join(5)
        assert not t.is_alive(), "stat blocked on a FIFO"
        assert stat.S_ISFIFO(done["st"].st_mode)
        assert r.stat("lf").st_size == 2 and stat.S_ISREG(r.stat("lf").st_mode)
        assert stat.S_ISDIR(r.stat(".").st_mode)
        with pytest.raises(Escape):
            r.stat("escf")


def test_a_relative_path_is_required(tree):
    with Root(tree) as r, pytest.raises(ValueError):
        r.open(str(tree / "sub" / "f"), os.O_RDONLY)


# -- openat2 itself ---------------------------------------------------------------------


def test_openat2_syscall_refuses_what_leads_outside(tree):
    if not have_openat2():
        pytest.skip("this kernel has no usable openat2")
    dfd = os.open(tree, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fd = safeopen.openat2(dfd, b"relsub/f", os.O_RDONLY)
        assert os.read(fd, 10) == b"in"
        os.close(fd)
        for path in (b"../outside/f", b"esc/f", str(tree / "sub" / "f").encode(), b"abssub/f"):
            with pytest.raises(OSError) as info:
                safeopen.openat2(dfd, path, os.O_RDONLY)
            assert info.value.errno == errno.EXDEV, path  # absolute links too: the walk judges them
    finally:
        os.close(dfd)


def test_without_openat2_the_walk_is_used(tree, monkeypatch):
    """A kernel before 5.6 or a seccomp filter: ENOSYS (or EPERM) once, then the walk only."""
    calls = []

    def absent(*a, **k):
        calls.append(a)
        raise OSError(errno.ENOSYS, "Function not implemented")

    monkeypatch.setattr(safeopen, "openat2", absent)
    monkeypatch.setattr(safeopen, "_openat2_state", None)
    assert read(tree, "abssub/f") == b"in"
    assert safeopen._openat2_state is False and len(calls) == 1
    with pytest.raises(Escape):
        read(tree, "esc/f")
    assert len(calls) == 1, "probed once, then never again"


def test_seccomp_eperm_also_falls_back(tree, monkeypatch):
    def refused(*a, **k):
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(safeopen, "openat2", refused)
    monkeypatch.setattr(safeopen, "_openat2_state", None)
    assert read(tree, "lf") == b"in"
    assert safeopen._openat2_state is False
