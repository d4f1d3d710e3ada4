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
                                 ("sub/..", ".", b"."), ("sub/.", "sub", b"."),
                                 ("relsub/.", "sub", b".")]:
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


# -- limits and flags (found by `make mutation`) ------------------------------------------


def _chain(root, prefix: str, n: int, target: str = "sub") -> str:
    """prefix1 -> prefix2 -> ... -> prefixN -> target: N links; returns the first name."""
    for i in range(1, n + 1):
        os.symlink(f"{prefix}{i + 1}" if i < n else target, root / f"{prefix}{i}")
    return f"{prefix}1"


def test_forty_links_are_followed_and_the_forty_first_is_eloop(tree, mode):
    """MAX_SYMLINKS is the kernel's 40, in the walk as with openat2."""
    forty, forty_one = _chain(tree, "a", 40), _chain(tree, "b", 41)
    assert read(tree, f"{forty}/f") == b"in"
    with pytest.raises(OSError) as info:
        read(tree, f"{forty_one}/f")
    assert info.value.errno == errno.ELOOP


def test_parent_follows_at_most_forty_final_links(tree, mode):
    """A write goes through parent(): it must give up where an open does (it followed up
    to 48 final links before: the limit was shared with the swap retries)."""
    forty, forty_one = _chain(tree, "a", 40, "sub/f"), _chain(tree, "b", 41, "sub/f")
    with Root(tree) as r:
        fd, name = r.parent(forty)
        os.close(fd)
        assert name == b"f"
        with pytest.raises(OSError) as info:
            r.parent(forty_one)
        assert info.value.errno == errno.ELOOP and not isinstance(info.value, Escape)


def _flapping_readlink(monkeypatch, times: int):
    """os.readlink says "not a link" (EINVAL) `times` times, as if the link were swapped
    for a file and back while the walk looked, then answers truly."""
    real = os.readlink
    seen = [0]

    def readlink(path, *a, **k):
        seen[0] += 1
        if seen[0] <= times:
            raise OSError(errno.EINVAL, "Invalid argument")
        return real(path, *a, **k)

    monkeypatch.setattr(os, "readlink", readlink)
    return seen


def test_the_walk_looks_again_at_a_flapping_name_eight_times_then_gives_up(tree, monkeypatch):
    monkeypatch.setattr(safeopen, "_openat2_state", False)
    _flapping_readlink(monkeypatch, safeopen.MAX_FLAPS)
    assert read(tree, "lf") == b"in"  # settled on the last look: followed
    monkeypatch.undo()
    monkeypatch.setattr(safeopen, "_openat2_state", False)
    seen = _flapping_readlink(monkeypatch, 1000)
    with pytest.raises(safeopen.Changed) as info:
        read(tree, "lf")
    assert seen[0] == 9 and info.value.errno == errno.EAGAIN and "lf kept changing" in str(info.value)
    assert safeopen.MAX_FLAPS == 8


def _kernel_has_openat2() -> bool:
    release = tuple(int(p) for p in os.uname().release.split("-")[0].split(".")[:2])
    try:
        with open("/proc/self/status") as fh:
            seccomp = next((ln.split()[1] for ln in fh if ln.startswith("Seccomp:")), "0")
    except OSError:
        seccomp = "?"
    return os.uname().sysname == "Linux" and release >= (5, 6) and seccomp == "0"


def test_openat2_is_used_where_the_kernel_has_it(monkeypatch):
    """Not silently the slower walk: the probe finds the syscall on Linux >= 5.6 without a
    seccomp filter (a wrong syscall number would fall back to the walk unnoticed)."""
    if not _kernel_has_openat2():
        pytest.skip("no openat2 here (kernel before 5.6, or a seccomp filter)")
    monkeypatch.setattr(safeopen, "_openat2_state", None)
    fd = os.open("/", os.O_RDONLY)
    try:
        assert safeopen.have_openat2(fd) is True
    finally:
        os.close(fd)


def test_each_resolve_flag_means_what_the_kernel_says():
    """RESOLVE_BENEATH keeps beneath yet crosses mount points; RESOLVE_NO_MAGICLINKS
    refuses /proc's magic links (ELOOP) and nothing else: the values are the kernel's."""
    if not have_openat2():
        pytest.skip("this kernel has no usable openat2")
    if os.stat("/").st_dev == os.stat("/proc/self/status").st_dev:
        pytest.skip("/proc is not a mount of its own here")
    dfd = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
    target = os.open("/proc/self/status", os.O_RDONLY)
    magic = f"proc/self/fd/{target}".encode()
    try:
        for resolve in (safeopen.RESOLVE_BENEATH, safeopen.RESOLVE_NO_MAGICLINKS):
            os.close(safeopen.openat2(dfd, b"proc/self/status", os.O_RDONLY, resolve=resolve))
        with pytest.raises(OSError) as info:
            safeopen.openat2(dfd, magic, os.O_RDONLY, resolve=safeopen.RESOLVE_NO_MAGICLINKS)
        assert info.value.errno == errno.ELOOP
        with pytest.raises(OSError):
            safeopen.openat2(dfd, magic, os.O_RDONLY)  # the default: both flags
        os.close(safeopen.openat2(dfd, magic, os.O_RDONLY, resolve=0))  # the test's own check
    finally:
        os.close(target)
        os.close(dfd)


def test_a_probe_that_itself_failed_is_tried_again(tree, monkeypatch):
    """EACCES (or EBADF...) from the probe says nothing about the kernel: the walk is used
    this time and the next call probes again."""
    def refused(*a, **k):
        raise OSError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(safeopen, "_openat2_state", None)
    with monkeypatch.context() as m:
        m.setattr(safeopen, "openat2", refused)
        with Root(tree) as r:
            assert safeopen.have_openat2(r.fd) is False
    assert safeopen._openat2_state is None
    if _kernel_has_openat2():
        with Root(tree) as r:
            assert safeopen.have_openat2(r.fd) is True


def test_descriptor_zero_is_a_descriptor(tree, mode):
    """With stdin closed (`dashfloat --headless <&-`) the kernel hands out fd 0: it is a
    result like any other, and close() closes it."""
    saved = os.dup(0)
    try:
        with Root(tree) as r:
            os.close(0)
            fd = r.open("sub/f", os.O_RDONLY)
            assert os.read(fd, 10) == b"in"
            assert fd == 0 or mode == "walk"  # the walk's first directory takes 0 there
            os.close(fd)
            r2 = Root(tree)
            assert r2.fd == 0
            r2.close()
            with pytest.raises(OSError) as info:
                os.fstat(0)
            assert info.value.errno == errno.EBADF
    finally:
        os.dup2(saved, 0)
        os.close(saved)


def test_closing_twice_never_closes_a_descriptor_reused_meanwhile(tree):
    r = Root(tree)
    number = r.fd
    r.close()
    other = os.open(tree / "file", os.O_RDONLY)
    try:
        assert other == number  # the kernel reuses the lowest free number
        r.close()
        with r:
            pass  # __exit__ closes again
        assert os.read(other, 5) == b"plain"
    finally:
        os.close(other)


def test_links_to_the_root_itself_and_to_a_sibling_that_shares_its_name(tree, mode):
    """An absolute link to the root is inside; one to ``root-evil`` (the root's name plus
    more) is outside, though its text starts with the root's."""
    os.symlink(tree, tree / "self")
    sibling = tree.parent / (tree.name + "-evil")
    sibling.mkdir()
    (sibling / "f").write_text("SECRET")
    (tree / "-evil").mkdir()
    (tree / "-evil" / "f").write_text("decoy")
    os.symlink(sibling / "f", tree / "sib")
    os.symlink(sibling, tree / "sibdir")
    assert read(tree, "self/sub/f") == b"in"
    for rel in ("sib", "sibdir/f"):
        with pytest.raises(Escape):
            read(tree, rel)
    with Root(tree) as r:
        fd, name = r.parent("self")
        try:
            assert os.path.samestat(os.fstat(fd), os.stat(tree)) and name == b"."
        finally:
            os.close(fd)
        with pytest.raises(Escape):
            r.parent("sib")


def test_parent_follows_a_final_absolute_link_inside(tree, mode):
    os.symlink(tree / "sub" / "f", tree / "absf")
    os.symlink(tree / "sub" / "missing.txt", tree / "absnew")
    with Root(tree) as r:
        for rel, name in (("absf", b"f"), ("absnew", b"missing.txt")):
            fd, got = r.parent(rel)
            try:
                assert os.path.samestat(os.fstat(fd), os.stat(tree / "sub")) and got == name
            finally:
                os.close(fd)


def test_descriptors_are_not_inherited_by_commands(tree, mode):
    """The raw openat2 syscall does not add O_CLOEXEC as os.open does: Root.open must."""
    with Root(tree) as r:
        fd = r.open("sub/f", os.O_RDONLY)
        dfd = r.open_dir("sub")
        try:
            assert not os.get_inheritable(fd) and not os.get_inheritable(dfd)
        finally:
            os.close(fd)
            os.close(dfd)


@pytest.mark.skipif(not hasattr(os, "O_PATH"), reason="no O_PATH here")
def test_directories_on_the_way_need_no_read_permission(tree, mode):
    """Walking through a directory is a lookup (O_PATH, as the kernel needs only search
    permission); listing opens it for reading."""
    import fcntl

    with Root(tree) as r:
        walk, listing = r.open_dir("sub"), r.open_dir("sub", read=True)
        try:
            assert fcntl.fcntl(walk, fcntl.F_GETFL) & os.O_PATH
            assert not fcntl.fcntl(listing, fcntl.F_GETFL) & os.O_PATH
            assert sorted(os.listdir(listing)) == ["f", "up"]
        finally:
            os.close(walk)
            os.close(listing)
        with pytest.raises(NotADirectoryError):
            r.open_dir("file", read=True)


def test_a_file_created_through_open_gets_the_usual_mode(tree, mode):
    old = os.umask(0o022)
    try:
        with Root(tree) as r:
            os.close(r.open("sub/new", os.O_WRONLY | os.O_CREAT | os.O_EXCL))
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tree / "sub" / "new").st_mode) == 0o644


def _open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def test_parent_names_the_link_that_leads_outside_and_follows_links_in_subdirectories(tree, mode):
    os.symlink("../../outside/f", tree / "sub" / "out")
    with Root(tree) as r:
        fd, name = r.parent("sub/up")  # sub/up -> ../sub/f
        try:
            assert os.path.samestat(os.fstat(fd), os.stat(tree / "sub")) and name == b"f"
        finally:
            os.close(fd)
        with pytest.raises(Escape) as info:
            r.parent("sub/out")
        assert "a symbolic link leads outside: sub/out" in info.value.strerror
        with pytest.raises(Escape) as info:
            r.parent("../x")  # no link at all: the walk's own message
        assert "above the working directory" in info.value.strerror


def test_parent_looks_again_at_a_flapping_final_link_eight_times_then_gives_up(tree, mode, monkeypatch):
    with Root(tree) as r:
        _flapping_readlink(monkeypatch, safeopen.MAX_FLAPS)
        fd, name = r.parent("lf")
        os.close(fd)
        assert name == b"f"
        monkeypatch.undo()
        if mode == "walk":
            monkeypatch.setattr(safeopen, "_openat2_state", False)
        seen = _flapping_readlink(monkeypatch, 1000)
        with pytest.raises(safeopen.Changed):
            r.parent("lf")
        assert seen[0] == 9


def test_parent_and_makedirs_leak_no_descriptor_on_any_path(tree, mode, monkeypatch):
    with Root(tree) as r:
        before = _open_fds()
        os.close(r.parent("lf")[0])
        r.makedirs("made/deeper")
        with monkeypatch.context() as m:
            _flapping_readlink(m, 2)
            os.close(r.parent("lf")[0])
        for exc in (OSError(errno.EIO, "Input/output error"), KeyboardInterrupt()):
            def failing(*a, _exc=exc, **k):
                raise _exc

            with monkeypatch.context() as m:
                m.setattr(os, "readlink", failing)
                with pytest.raises(type(exc)) as info:
                    r.parent("lf")
            assert not isinstance(info.value, OSError) or info.value.errno == errno.EIO
        assert _open_fds() == before


def test_stat_never_follows_a_name_that_became_a_link(tree, mode, monkeypatch):
    """parent() saw no link; if the name is one by the time it is stat'ed (swapped
    meanwhile), it is looked at again, never followed: after eight looks, Changed."""
    with Root(tree) as r:
        looks = [0]

        def swapped(rel, **k):
            looks[0] += 1
            return r.open_dir("."), b"escf"  # a link to the outside now

        monkeypatch.setattr(r, "parent", swapped)
        with pytest.raises(safeopen.Changed):
            r.stat("f")
        assert looks[0] == safeopen.MAX_FLAPS


def test_makedirs_makes_the_usual_mode_and_checks_what_it_made(tree, mode, monkeypatch):
    old = os.umask(0o022)
    try:
        with Root(tree) as r:
            r.makedirs("m1/m2")
            assert stat.S_IMODE(os.stat(tree / "m1").st_mode) == 0o755
            assert stat.S_IMODE(os.stat(tree / "m1" / "m2").st_mode) == 0o755
            outside = tree.parent / "outside"

            def mkdir_swapped(name, mode=0o777, *, dir_fd=None):
                os.symlink(outside, name, dir_fd=dir_fd)  # swapped for a link right away

            monkeypatch.setattr(os, "mkdir", mkdir_swapped)
            with pytest.raises(Escape):
                r.makedirs("m3")
    finally:
        os.umask(old)


@pytest.mark.parametrize("system, machine", [("Linux", "vax"), ("Darwin", "x86_64")])
def test_no_syscall_is_made_where_the_number_is_not_known(tree, monkeypatch, system, machine):
    """437 is openat2 only on Linux's unified syscall table: elsewhere ENOSYS (the walk),
    never a raw syscall of some other meaning."""
    monkeypatch.setattr(safeopen, "_syscall", None)
    real = os.uname()
    monkeypatch.setattr(os, "uname", lambda: os.uname_result((system, *real[1:4], machine)))
    dfd = os.open(tree, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with pytest.raises(OSError) as info:
            safeopen.openat2(dfd, b"sub/f", os.O_RDONLY)
        assert info.value.errno == errno.ENOSYS and safeopen._syscall is None
    finally:
        os.close(dfd)


@pytest.mark.parametrize("rel, message", [
    ("sub/../absesc/f", "a symbolic link leads outside: absesc"),  # ".." forgets "sub"
    ("sub/absback/../esc/f", "a symbolic link leads outside: esc"),  # an absolute link restarts at the root
])
def test_the_escape_names_the_link_as_walked(tree, mode, rel, message):
    os.symlink(tree / "sub", tree / "sub" / "absback")
    with pytest.raises(Escape) as info:
        read(tree, rel)
    assert info.value.strerror == message


def test_an_absolute_link_met_deeper_in_the_walk_restarts_at_the_root(tree, mode):
    os.symlink(tree / "sub", tree / "sub" / "absback")
    assert read(tree, "sub/absback/absback/f") == b"in"


@pytest.mark.skipif(not hasattr(os, "O_PATH"), reason="no O_PATH here")
def test_an_o_path_open_follows_a_final_link_inside(tree, mode):
    """O_PATH|O_NOFOLLOW opens a link itself instead of failing: the walk must notice, and
    close the descriptor of the link it opened (none is left behind)."""
    with Root(tree) as r:
        before = _open_fds()
        fd = r.open("lf", os.O_PATH)
        try:
            assert os.path.samestat(os.fstat(fd), os.stat(tree / "sub" / "f"))
        finally:
            os.close(fd)
        assert _open_fds() == before


def test_the_walk_passes_on_a_readlink_failure_and_leaks_nothing(tree, monkeypatch):
    monkeypatch.setattr(safeopen, "_openat2_state", False)
    before = _open_fds()
    assert read(tree, "sub/up") == b"in"

    def failing(*a, **k):
        raise OSError(errno.EIO, "Input/output error")

    with monkeypatch.context() as m:
        m.setattr(os, "readlink", failing)
        with pytest.raises(OSError) as info:
            read(tree, "sub/up")
    assert info.value.errno == errno.EIO
    assert _open_fds() == before


def test_a_dangling_link_that_flapped_is_walked_as_a_link(tree, monkeypatch):
    """A link (dangling here) whose readlink said "not a link" once is looked at again:
    the answer is the link's own (ENOENT), not ENOTDIR."""
    monkeypatch.setattr(safeopen, "_openat2_state", False)
    _flapping_readlink(monkeypatch, 1)
    with pytest.raises(OSError) as info:
        read(tree, "dangling/x")
    assert info.value.errno == errno.ENOENT


def test_a_name_that_cannot_be_looked_at_keeps_the_open_s_own_error(tree, monkeypatch):
    """"file/x": the open says ENOTDIR, readlink "not a link"; when the name cannot even be
    stat'ed (removed meanwhile, no permission) the kernel's ENOTDIR stands: it is not taken
    for a link that flapped (eight more looks, then "kept changing; try again")."""
    monkeypatch.setattr(safeopen, "_openat2_state", False)
    real_stat = os.stat

    def no_stat_beneath(path, *a, dir_fd=None, **k):
        if dir_fd is not None:
            raise OSError(errno.EACCES, "Permission denied")
        return real_stat(path, *a, dir_fd=dir_fd, **k)

    monkeypatch.setattr(os, "stat", no_stat_beneath)
    with pytest.raises(OSError) as info:
        read(tree, "file/x")
    assert info.value.errno == errno.ENOTDIR and not isinstance(info.value, safeopen.Changed)


def test_an_empty_symbolic_link_names_nothing(tree, monkeypatch):
    """Some filesystems hold a link with an empty target; the kernel resolves it to ENOENT.
    So does parent(): never the directory the link is in (the root here)."""
    os.symlink("sub/f", tree / "empty")
    real = os.readlink

    def readlink(path, *a, **k):
        return b"" if os.fsencode(path) == b"empty" else real(path, *a, **k)

    monkeypatch.setattr(os, "readlink", readlink)
    with Root(tree) as r:
        with pytest.raises(OSError) as info:
            r.parent("empty")
    assert info.value.errno == errno.ENOENT and "empty symbolic link" in str(info.value)


def test_the_probe_is_made_once_and_openat2_serves_every_open_after_it(tree, monkeypatch):
    """have_openat2 remembers its answer: the second open is served by the kernel too, not
    by the slower walk."""
    if not _kernel_has_openat2():
        pytest.skip("no openat2 here (kernel before 5.6, or a seccomp filter)")
    monkeypatch.setattr(safeopen, "_openat2_state", None)

    def no_walk(self, *a, **k):
        raise AssertionError("the walk was used")

    monkeypatch.setattr(Root, "_walk", no_walk)
    assert read(tree, "sub/f") == b"in"
    assert read(tree, "lf") == b"in"
    with Root(tree) as r:
        assert safeopen.have_openat2(r.fd) is True
