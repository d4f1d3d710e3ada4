"""Tests for dashfloat.tools.pathpolicy: the ADR 0007 §3 three-step path policy."""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import socket
import stat
import threading

import pytest

from dashfloat.tools import edit, files, pathpolicy, results, safeopen
from dashfloat.tools.pathpolicy import Resolved, resolve


def no_block(fn, timeout=5.0):
    """Run fn on a thread; fail (instead of hanging the suite) if it does not return in time."""
    out: dict = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as exc:  # surfaced below
            out["exc"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout)
    assert not t.is_alive(), "the call blocked"
    if "exc" in out:
        raise out["exc"]
    return out["value"]


@pytest.fixture
def tree(tmp_path):
    """tmp/root (the working directory), tmp/outside, tmp/root-evil, and links of every kind."""
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    evil = tmp_path / "root-evil"
    for d in (root, outside, evil, root / "sub" / "deeper", outside / "dir"):
        d.mkdir(parents=True, exist_ok=True)
    (root / "file.txt").write_text("hello\n")
    (root / "sub" / "inner.txt").write_text("inner\n")
    (outside / "secret.txt").write_text("secret\n")
    (evil / "x.txt").write_text("evil\n")
    links = {
        "link_in": "sub/inner.txt",
        "link_dir_in": "sub",
        "link_out": "../outside/secret.txt",
        "link_out_abs": str(outside / "secret.txt"),
        "linkdir_out": "../outside",
        "dangling_in": "sub/missing.txt",
        "dangling_out": "../outside/missing.txt",
        "dangling_out_dir": "../outside/nodir/x",
        "loop_a": "loop_b",
        "loop_b": "loop_a",
        "self_loop": "self_loop",
        "chain": "link_dir_in/deeper",
        "back_in": "../root/file.txt",
        "evil_link": "../root-evil/x.txt",
        "dev_null": "/dev/null",
    }
    for name, target in links.items():
        os.symlink(target, root / name)
    os.symlink("../../outside", root / "sub" / "up_out")
    os.mkfifo(root / "fifo")
    (root / os.fsdecode(b"caf\xe9.txt")).write_bytes(b"latin-1 name\n")
    return root


# (path, expected code or "ok", expected rel or None, expected exists or None)
CASES = [
    ("file.txt", "ok", "file.txt", True),
    ("sub/inner.txt", "ok", "sub/inner.txt", True),
    ("sub/../file.txt", "ok", "file.txt", True),
    ("./sub/./inner.txt", "ok", "sub/inner.txt", True),
    ("sub//inner.txt", "ok", "sub/inner.txt", True),
    ("../outside/secret.txt", "path_escape", None, None),
    ("../../etc/passwd", "path_escape", None, None),
    ("sub/../../outside", "path_escape", None, None),
    ("a/b/../../../x", "path_escape", None, None),
    ("..", "path_escape", None, None),
    ("../root-evil/x.txt", "path_escape", None, None),
    ("/etc/passwd", "path_escape", None, None),
    ("/dev/null", "path_escape", None, None),
    ("//etc/passwd", "path_escape", None, None),
    ("/", "path_escape", None, None),
    ("link_in", "ok", "link_in", True),
    ("link_dir_in/inner.txt", "ok", "link_dir_in/inner.txt", True),
    ("chain", "ok", "chain", True),
    ("back_in", "ok", "back_in", True),
    ("link_out", "path_escape", None, None),
    ("link_out_abs", "path_escape", None, None),
    ("evil_link", "path_escape", None, None),
    ("dev_null", "path_escape", None, None),
    ("linkdir_out", "path_escape", None, None),
    ("linkdir_out/secret.txt", "path_escape", None, None),
    ("linkdir_out/new_file.txt", "path_escape", None, None),
    ("linkdir_out/dir/new/deeper.txt", "path_escape", None, None),
    ("sub/up_out/secret.txt", "path_escape", None, None),
    ("dangling_in", "ok", "dangling_in", False),
    ("dangling_out", "path_escape", None, None),
    ("dangling_out_dir", "path_escape", None, None),
    ("loop_a", "io_error", None, None),
    ("self_loop", "io_error", None, None),
    ("self_loop/x", "io_error", None, None),
    ("", "bad_arguments", None, None),
    ("a\0b", "bad_arguments", None, None),
    ("file.txt\0../../etc/passwd", "bad_arguments", None, None),
    # a path written as if for a shell: nothing expands it, so it is refused (issue 14 §4)
    ("~", "bad_arguments", None, None),
    ("~/x", "bad_arguments", None, None),
    ("~/.bashrc", "bad_arguments", None, None),
    ("~root/.ssh", "bad_arguments", None, None),
    ("~/../file.txt", "bad_arguments", None, None),
    ("$HOME/x", "bad_arguments", None, None),
    ("${HOME}", "bad_arguments", None, None),
    ("$PWD", "bad_arguments", None, None),
    # ... and a ~ or $ anywhere else is a plain character, ./~ the file named ~
    ("./~", "ok", "~", False),
    ("./~/x", "ok", "~/x", False),
    ("a/~b", "ok", "a/~b", False),
    ("x~", "ok", "x~", False),
    ("sub/~", "ok", "sub/~", False),
    ("./$HOME", "ok", "$HOME", False),
    ("Outer$Inner.class", "ok", "Outer$Inner.class", False),
    ("$", "ok", "$", False),
    # a trailing slash names a directory: on a file it is "not a directory", as the kernel says
    ("sub/", "ok", "sub", True),
    ("link_dir_in/", "ok", "link_dir_in", True),
    ("file.txt/", "not_a_directory", None, None),
    ("file.txt/.", "not_a_directory", None, None),
    ("link_in/", "not_a_directory", None, None),
    ("fifo/", "not_a_directory", None, None),
    ("new.txt/", "ok", "new.txt", False),
    # NAME_MAX (255 bytes a component) and PATH_MAX (4095 bytes), counted in bytes
    ("n" * 255, "ok", "n" * 255, False),
    ("n" * 256, "name_too_long", None, None),
    ("sub/" + "é" * 128, "name_too_long", None, None),
    ("sub/" + "é" * 127, "ok", "sub/" + "é" * 127, False),
    ("/".join(["d" * 200] * 21), "name_too_long", None, None),
    ("./" * 2048, "name_too_long", None, None),
    # a name written with \xNN escapes (as list_directory writes it) is the same file
    ("caf\\xe9.txt", "ok", os.fsdecode(b"caf\xe9.txt"), True),
    ("sub/../caf\\xe9.txt", "ok", os.fsdecode(b"caf\xe9.txt"), True),
    ("caf\\xc3\\xa9.txt", "ok", "caf\\xc3\\xa9.txt", False),
    ("caf\\XE9.txt", "ok", "caf\\XE9.txt", False),
    (".", "ok", ".", True),
    ("./", "ok", ".", True),
    ("sub/..", "ok", ".", True),
    ("file.txt/x", "not_found", None, None),
    ("new/dir/file.txt", "ok", "new/dir/file.txt", False),
    ("fifo", "ok", "fifo", True),
    (os.fsdecode(b"caf\xe9.txt"), "ok", os.fsdecode(b"caf\xe9.txt"), True),
    (os.fsdecode(b"new-\xff\xfe"), "ok", os.fsdecode(b"new-\xff\xfe"), False),
]


@pytest.mark.parametrize(("path", "expected", "rel", "exists"), CASES)
def test_resolve_table(tree, path, expected, rel, exists):
    got = no_block(lambda: resolve(tree, path))
    if expected == "ok":
        assert isinstance(got, Resolved), got
        assert got.rel == rel
        assert got.exists is exists
        assert pathpolicy._inside(os.fsencode(got.real), os.fsencode(os.path.realpath(tree)))
        assert got.abs == os.path.normpath(os.path.join(str(tree), rel))
    else:
        assert isinstance(got, dict), got
        assert got["ok"] is False and got["code"] == expected, got
        json.dumps(got).encode("utf-8")  # always encodable


def test_at_least_thirty_cases():
    assert len(CASES) >= 30


def test_absolute_paths_inside_are_fine(tree):
    got = resolve(tree, str(tree / "sub" / "inner.txt"))
    assert isinstance(got, Resolved) and got.rel == "sub/inner.txt"
    assert resolve(tree, str(tree)).rel == "."


def test_sibling_with_the_root_as_prefix_is_outside(tree):
    evil = str(tree) + "-evil/x.txt"
    got = resolve(tree, evil)
    assert got["code"] == "path_escape"
    assert evil in got["error"]


def test_escape_message_names_the_given_path_and_what_is_allowed(tree):
    got = resolve(tree, "../../etc/passwd")
    assert got["error"].startswith("path escapes the working directory: ../../etc/passwd")
    assert "inside the working directory" in got["error"]


def test_message_escapes_terminal_controls(tree):
    got = resolve(tree, "../\x1b]0;pwned\x07\u202e")
    assert got["code"] == "path_escape"
    assert "\x1b" not in got["error"] and "\x07" not in got["error"]
    assert "\u202e" not in got["error"]
    assert "\\e]0;pwned" in got["error"]


def test_symlinked_file_resolves_to_its_target(tree):
    got = resolve(tree, "link_in")
    assert got.real == os.path.realpath(tree / "sub" / "inner.txt")
    assert got.abs == str(tree / "link_in")


def test_dangling_link_inside_is_a_new_file_at_its_target(tree):
    got = resolve(tree, "dangling_in")
    assert got.exists is False
    assert got.real == os.path.join(os.path.realpath(tree), "sub", "missing.txt")
    assert resolve(tree, "dangling_in", must_exist=True)["code"] == "not_found"


def test_must_exist(tree):
    assert resolve(tree, "missing.txt", must_exist=True)["code"] == "not_found"
    assert "missing.txt" in resolve(tree, "missing.txt", must_exist=True)["error"]
    assert isinstance(resolve(tree, "missing.txt"), Resolved)


def test_link_loop_is_a_clear_error_not_a_hang(tree):
    got = no_block(lambda: resolve(tree, "loop_a/x/y", must_exist=True))
    assert got["code"] == "io_error"
    assert "symbolic links" in got["error"]


def test_non_string_paths_are_bad_arguments(tree):
    for bad in (None, 3, ["a"]):
        assert resolve(tree, bad)["code"] == "bad_arguments"


def test_lone_surrogate_is_bad_arguments(tree):
    got = resolve(tree, "x\ud800")
    assert got["code"] == "bad_arguments" and "\\ud800" in got["error"]
    results.encode(got).encode("utf-8")


def test_a_surrogate_escape_from_the_model_is_the_byte(tree):
    """The model's own "\\udce9" stands for the byte 0xe9, like Python's surrogateescape;
    the one that spells valid UTF-8 ("\\udcc3\\udca9") finds the valid name (é)."""
    got = resolve(tree, "caf\udce9.txt", must_exist=True)
    assert isinstance(got, Resolved) and os.fsencode(got.real).endswith(b"/caf\xe9.txt")
    (tree / "é.txt").write_text("x")
    got = resolve(tree, "\udcc3\udca9.txt", must_exist=True)
    assert isinstance(got, Resolved) and got.rel == "é.txt"


def test_bytes_paths_with_non_utf8_names(tree):
    got = resolve(tree, b"caf\xe9.txt", must_exist=True)
    assert isinstance(got, Resolved)
    assert os.fsencode(got.real).endswith(b"caf\xe9.txt")
    assert pathpolicy.shown(got.rel) == "caf\\xe9.txt"
    assert resolve(tree, b"../outside")["code"] == "path_escape"


def test_root_given_as_a_symlink(tree, tmp_path):
    os.symlink(tree, tmp_path / "root_link")
    via = tmp_path / "root_link"
    got = resolve(via, "file.txt")
    assert isinstance(got, Resolved)
    assert got.abs == str(via / "file.txt")
    assert got.real == os.path.realpath(tree / "file.txt")
    # the root's real path is the same place: inside, named relative to the root, spelled via it
    got = resolve(via, str(tree / "sub" / "inner.txt"))
    assert isinstance(got, Resolved), got
    assert (got.rel, got.abs, got.exists) == ("sub/inner.txt", str(via / "sub" / "inner.txt"), True)
    assert resolve(via, str(tree)).rel == "."


@pytest.mark.parametrize("given", ["link", "real"])
def test_absolute_paths_spelled_through_either_name_of_the_root(tree, tmp_path, given):
    """Issue 14 §2: the root entered through a link (a linked project, macOS /tmp): a path
    spelled through the link or through the real path is inside, whichever the root is."""
    link = tmp_path / "root_link"
    os.symlink(tree, link)
    os.symlink(tree / "sub", tmp_path / "shortcut")  # a link from outside to a directory inside
    root = link if given == "link" else tree
    for spelled, rel, exists in [
        (link / "file.txt", "file.txt", True),
        (tree / "file.txt", "file.txt", True),
        (link / "sub" / "inner.txt", "sub/inner.txt", True),
        (link / "new" / "dir" / "x.txt", "new/dir/x.txt", False),
        (tree / "new.txt", "new.txt", False),
        (link, ".", True),
        (tmp_path / "shortcut" / "inner.txt", "sub/inner.txt", True),
        (link / "link_in", "link_in", True),
    ]:
        got = resolve(root, str(spelled))
        assert isinstance(got, Resolved), (spelled, got)
        assert (got.rel, got.exists) == (rel, exists), spelled
        assert got.abs == os.path.normpath(os.path.join(str(root), rel))
    # what is outside stays outside, however it is spelled
    for spelled in [link / ".." / "outside" / "secret.txt", tmp_path / "outside" / "secret.txt",
                    link / "link_out", link / "linkdir_out" / "secret.txt", link / "dangling_out",
                    str(link) + "-evil/x.txt", tmp_path / "root-evil" / "x.txt", link / "..",
                    link / "sub" / "up_out" / "secret.txt"]:
        got = resolve(root, str(spelled))
        assert isinstance(got, dict) and got["code"] == "path_escape", (spelled, got)
    # relative paths are never respelled: ".." leaves the root, whatever it leads back into
    assert resolve(tree, "../root_link/file.txt")["code"] == "path_escape"
    assert resolve(link, "../root/file.txt")["code"] == "path_escape"


def _a_link_below_the_filesystem_root() -> str | None:
    for name in ("bin", "sbin", "lib", "lib64", "tmp"):  # merged /usr; macOS's /tmp
        if os.path.islink("/" + name) and os.path.isdir("/" + name):
            return name
    return None


def test_a_link_right_below_the_filesystem_root_spells_the_root_too():
    """The shortest leading part that is the root may be one name long (macOS: /tmp ->
    private/tmp, the working directory /private/tmp; merged /usr: /bin -> usr/bin): the
    root itself and a new file spelled through it are inside. Nothing is written."""
    name = _a_link_below_the_filesystem_root()
    if name is None:
        pytest.skip("no symbolic link to a directory right below / here")
    root = os.path.realpath("/" + name)
    got = resolve(root, "/" + name)
    assert isinstance(got, Resolved), got
    assert (got.rel, got.abs, got.exists) == (".", root, True)
    got = resolve(root, f"/{name}/dashfloat-no-such-file")
    assert isinstance(got, Resolved), got
    assert (got.rel, got.exists) == ("dashfloat-no-such-file", False)


def test_relative_root(tree, monkeypatch):
    monkeypatch.chdir(tree.parent)
    got = resolve("root", "sub/inner.txt")
    assert isinstance(got, Resolved) and got.rel == "sub/inner.txt"
    assert resolve("root", "../outside")["code"] == "path_escape"


def test_missing_root(tmp_path):
    assert resolve(tmp_path / "nope", "x")["code"] == "not_found"


def test_filesystem_root_as_root_admits_everything(tree):
    got = resolve("/", str(tree / "file.txt"))
    assert isinstance(got, Resolved)


def test_swapping_a_directory_for_a_link_is_caught(tree, tmp_path):
    # resolved once inside; then the directory is replaced by a link outside: resolving again
    assert isinstance(resolve(tree, "sub/inner.txt"), Resolved)
    os.rename(tree / "sub", tmp_path / "sub_moved")
    os.symlink(tmp_path / "outside", tree / "sub")
    assert resolve(tree, "sub/secret.txt")["code"] == "path_escape"


# -- special files -------------------------------------------------------------------------


def test_fifo_refused_without_blocking(tree):
    res = resolve(tree, "fifo")
    got = no_block(lambda: pathpolicy.check_regular(res))
    assert got["code"] == "special_file"
    assert "FIFO" in got["error"] and "fifo" in got["error"]
    assert no_block(lambda: pathpolicy.check_directory(res))["code"] == "special_file"
    assert no_block(lambda: files.read_file(tree, "fifo"))["code"] == "special_file"
    assert no_block(lambda: files.list_directory(tree, "fifo"))["code"] == "special_file"
    assert no_block(lambda: files.write_file(tree, "fifo", "x"))["code"] == "special_file"
    assert stat.S_ISFIFO(os.lstat(tree / "fifo").st_mode)  # untouched


def test_open_regular_refuses_a_fifo_without_blocking(tree):
    with safeopen.Root(tree) as beneath:
        got = no_block(lambda: files.open_regular(beneath, "fifo"))
    assert isinstance(got, dict) and got["code"] == "special_file"


def test_socket_refused(tree, tmp_path):
    path = tree / "s"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        try:
            sock.bind(str(path))
        except OSError as exc:  # path too long for AF_UNIX on some systems
            pytest.skip(f"cannot bind a unix socket here: {exc}")
        res = resolve(tree, "s")
        assert isinstance(res, Resolved)
        got = no_block(lambda: pathpolicy.check_regular(res))
        assert got["code"] == "special_file" and "socket" in got["error"]
        assert no_block(lambda: files.read_file(tree, "s"))["code"] == "special_file"
    finally:
        sock.close()


def test_char_device_inside_refused(tree):
    try:
        os.mknod(tree / "null", 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    except (PermissionError, OSError) as exc:
        pytest.skip(f"cannot mknod here: {exc}")
    res = resolve(tree, "null")
    got = pathpolicy.check_regular(res)
    assert got["code"] == "special_file" and "character device" in got["error"]
    assert no_block(lambda: files.read_file(tree, "null"))["code"] == "special_file"


def test_check_regular_and_directory(tree):
    assert pathpolicy.check_regular(resolve(tree, "file.txt")) is None
    assert pathpolicy.check_regular(resolve(tree, "link_in")) is None
    assert pathpolicy.check_regular(resolve(tree, "sub"))["code"] == "not_a_file"
    assert pathpolicy.check_directory(resolve(tree, "sub")) is None
    assert pathpolicy.check_directory(resolve(tree, "link_dir_in")) is None
    assert pathpolicy.check_directory(resolve(tree, "file.txt"))["code"] == "not_a_directory"
    assert pathpolicy.check_regular(resolve(tree, "nothing"))["code"] == "not_found"


def test_shown_is_json_and_terminal_safe():
    assert pathpolicy.shown("lib/foo.ex") == "lib/foo.ex"
    assert pathpolicy.shown(b"caf\xe9") == "caf\\xe9"
    assert pathpolicy.shown(os.fsdecode(b"caf\xe9")) == "caf\\xe9"
    assert pathpolicy.shown("a\nb\tc\x1bd") == "a\\nb\\tc\\ed"


# -- bounds and error paths (found by `make mutation`) ---------------------------------------


@pytest.mark.parametrize("n", [40, 41])
def test_forty_links_resolve_and_the_forty_first_is_a_loop_as_in_the_kernel(tree, n):
    prev = "file.txt"
    for i in range(n):
        os.symlink(prev, tree / f"c{i}")
        prev = f"c{i}"
    got = resolve(tree, prev)
    if n == 40:
        assert isinstance(got, Resolved) and got.real == os.path.realpath(tree / "file.txt")
        assert (tree / prev).read_text() == "hello\n"   # the kernel follows 40 too
    else:
        assert got["code"] == "io_error" and "symbolic links" in got["error"]
        with pytest.raises(OSError) as kernel:
            (tree / prev).read_text()
        assert kernel.value.errno == errno.ELOOP


def test_a_file_used_as_a_directory_in_a_link_target_is_not_a_directory(tree):
    os.symlink("file.txt/..", tree / "up_from_file")
    with pytest.raises(NotADirectoryError):   # what the kernel says
        os.stat(tree / "up_from_file")
    got = resolve(tree, "up_from_file")
    assert got["code"] == "not_found"
    assert got["error"] == "not a directory: file.txt (in path up_from_file)"


def test_not_a_directory_names_the_component(tree):
    got = resolve(tree, "sub/inner.txt/x")
    assert got["error"] == "not a directory: sub/inner.txt (in path sub/inner.txt/x)"


@pytest.mark.parametrize(("exc", "code", "message"), [
    (PermissionError(errno.EACCES, "Permission denied"), "permission_denied",
     "permission denied resolving: sub/inner.txt"),
    (OSError(errno.EIO, "Input/output error"), "io_error", "cannot resolve sub/inner.txt: Input/output error"),
    (OSError(errno.ELOOP, "Too many levels of symbolic links"), "io_error",
     "too many levels of symbolic links (a symlink loop?) resolving: sub/inner.txt"),
    # a directory swapped for a file between two lstat calls
    (NotADirectoryError(errno.ENOTDIR, "Not a directory"), "not_found", "not a directory: sub (in path sub/inner.txt)"),
])
def test_lstat_failures_are_results_that_say_what_failed(tree, monkeypatch, exc, code, message):
    real_lstat = os.lstat
    failing = os.fsencode(os.path.realpath(tree / "sub" / "inner.txt"))

    def lstat(path, *args, **kwargs):
        if os.fsencode(path) == failing:
            raise exc
        return real_lstat(path, *args, **kwargs)

    monkeypatch.setattr(os, "lstat", lstat)
    got = resolve(tree, "sub/inner.txt")
    assert got == {"ok": False, "code": code, "error": message}


@pytest.mark.parametrize(("exc", "code", "message"), [
    (PermissionError(errno.EACCES, "Permission denied"), "permission_denied", "permission denied: file.txt"),
    (OSError(errno.EIO, "Input/output error"), "io_error", "cannot stat file.txt: Input/output error"),
])
def test_stat_failures_are_results(tree, monkeypatch, exc, code, message):
    res = resolve(tree, "file.txt")

    def failing_stat(path, *args, **kwargs):
        raise exc

    monkeypatch.setattr(os, "stat", failing_stat)
    assert pathpolicy.check_regular(res) == {"ok": False, "code": code, "error": message}


def test_a_root_that_cannot_be_resolved_does_not_exist(tmp_path):
    os.symlink("loop", tmp_path / "loop")
    got = resolve(tmp_path / "loop", "x")
    assert got["code"] == "not_found"
    assert got["error"].startswith("the working directory does not exist: ")


def test_real_root(tree, tmp_path):
    os.symlink(tree, tmp_path / "root_link")
    assert pathpolicy.real_root(tmp_path / "root_link") == os.path.realpath(tree)
    with pytest.raises(FileNotFoundError):
        pathpolicy.real_root(tmp_path / "nope")


def test_an_admitted_path_cannot_be_altered(tree):
    got = resolve(tree, "file.txt")
    with pytest.raises(dataclasses.FrozenInstanceError):
        got.real = "/etc/passwd"


@pytest.mark.parametrize(("mode", "name"), [
    (stat.S_IFREG, "file"), (stat.S_IFDIR, "dir"), (stat.S_IFLNK, "link"), (stat.S_IFIFO, "fifo"),
    (stat.S_IFSOCK, "socket"), (stat.S_IFCHR, "char_device"), (stat.S_IFBLK, "block_device"), (0, "other"),
])
def test_kind_of_every_file_type(mode, name):
    assert pathpolicy.kind(mode | 0o644) == name


def test_a_block_device_is_refused_by_name():
    got = pathpolicy.special_error("sda", stat.S_IFBLK | 0o660)
    assert got["code"] == "special_file" and "refusing a block device: sda" in got["error"]


    assert pathpolicy.shown("x\ud800") == "x\ufffd"  # stands for no byte
    # a backslash in a name written with escapes is doubled, as names.written writes it
    assert pathpolicy.shown(b"a\\b\xff") == "a\\\\b\\xff"


# -- the lexical step: refused before anything on disk is looked at (issue 14 §4) ----------


@pytest.mark.parametrize(
    ("path", "code", "words"),
    [
        ("~", "bad_arguments", ["relative to the working directory", "~ is not expanded", "./~"]),
        ("~/.bashrc", "bad_arguments", ["~ is not expanded", "no shell", "./~"]),
        ("~root/x", "bad_arguments", ["~ is not expanded", "./~root"]),
        ("$HOME/.bashrc", "bad_arguments", ["$VARIABLES are not expanded", "./$HOME"]),
        ("x" * 300, "name_too_long", ["name too long", "300 bytes", "255 bytes (NAME_MAX)"]),
        ("a/" * 2100, "name_too_long", ["name too long", "4200 bytes", "4095 bytes (PATH_MAX)"]),
        ("", "bad_arguments", ["path is empty", '"."']),
        ("a\0b", "bad_arguments", ["NUL byte"]),
    ],
)
def test_lexical_refusals_touch_nothing(tmp_path, monkeypatch, path, code, words):
    """Each is refused with its own clear message before the path is resolved on disk: the
    resolution step fails the test, and the root does not even exist (were it looked at, the
    answer would be "the working directory does not exist")."""
    def no_fs(*a, **k):
        raise AssertionError(f"the file system was looked at: {a}")

    monkeypatch.setattr(pathpolicy, "_real", no_fs)
    got = resolve(tmp_path / "no-such-root", path)
    assert got["code"] == code, got
    for w in words:
        assert w in got["error"], (w, got["error"])
    assert len(got["error"]) < 400  # the long path is clipped, not echoed in full


def test_path_max_counts_the_working_directory(tmp_path):
    """A short relative path can still be too long once joined to a deep root."""
    root = tmp_path
    for _ in range(18):
        root = root / ("r" * 200)
    os.makedirs(root)
    got = resolve(root, "d" * 200 + "/" + "e" * 200 + "/" + "f" * 200)
    assert got["code"] == "name_too_long" and "PATH_MAX" in got["error"], got


def test_a_trailing_slash_on_a_file_is_not_a_directory_for_every_tool(tree):
    (tree / "a.txt").write_text("keep\n")
    for got in (
        files.read_file(tree, "a.txt/"),
        files.write_file(tree, "a.txt/", "new"),
        files.list_directory(tree, "a.txt/"),
        edit.plan_edit(tree, "a.txt/", "keep", "lost"),
        edit.plan_write(tree, "a.txt/", "new"),
    ):
        assert got["code"] == "not_a_directory" and "not a directory: a.txt/" in got["error"], got
    assert (tree / "a.txt").read_text() == "keep\n"


def test_write_file_with_a_trailing_slash_creates_nothing(tree):
    for tool in (files.write_file, edit.plan_write):
        got = tool(tree, "newdir/", "x")
        assert got["code"] == "bad_arguments" and "ends in /" in got["error"], got
    assert not os.path.lexists(tree / "newdir")


def test_tilde_never_becomes_a_directory(tree):
    """write_file ~/.bashrc used to create a directory named ~ in the project: a trap for
    whoever types rm -rf ~ later."""
    for tool in (files.write_file, edit.plan_write):
        assert tool(tree, "~/.bashrc", "x")["code"] == "bad_arguments"
    assert files.read_file(tree, "~/.bashrc")["code"] == "bad_arguments"
    assert files.list_directory(tree, "~")["code"] == "bad_arguments"
    assert not os.path.lexists(tree / "~")
    got = files.write_file(tree, "./~/notes.txt", "x")  # said on purpose: fine
    assert got["ok"] and got["path"] == "~/notes.txt"


# -- messages (found by `make mutation`) ----------------------------------------------------


@pytest.mark.parametrize("n, shown", [
    (78, "~/" + "a" * 78),            # 80 characters: whole
    (79, "~/" + "a" * 77 + "…"),      # 81: cut to 79 and an ellipsis, 80 in all
    (200, "~/" + "a" * 77 + "…"),
])
def test_a_long_path_is_cut_to_80_characters_in_a_message(tmp_path, n, shown):
    got = resolve(tmp_path, "~/" + "a" * n)
    assert got["code"] == "bad_arguments"
    assert f"no shell here): {shown}. A file literally named ~ in the working directory is ./~" in got["error"]
    assert got["error"].endswith("is ./~")  # the first component only, not the whole path


def test_the_literal_name_hint_names_only_the_first_component(tmp_path):
    got = resolve(tmp_path, "$HOME/a/b")
    assert got["error"].endswith("A file literally named $HOME in the working directory is ./$HOME")


def test_a_path_below_a_missing_directory_keeps_all_its_components(tree):
    got = resolve(tree, "newdir/deeper/x.txt")
    assert got.exists is False
    assert got.real == os.path.join(os.path.realpath(tree), "newdir", "deeper", "x.txt")


def test_a_link_that_flapped_is_looked_at_again_and_a_readlink_failure_is_a_result(tree, monkeypatch):
    real = os.readlink
    calls = [0]

    def once_not_a_link(path, *a, **k):
        calls[0] += 1
        if calls[0] == 1:
            raise OSError(errno.EINVAL, "Invalid argument")
        return real(path, *a, **k)

    monkeypatch.setattr(os, "readlink", once_not_a_link)
    got = resolve(tree, "link_dir_in/inner.txt")
    assert got.real == os.path.join(os.path.realpath(tree), "sub", "inner.txt") and got.exists

    def failing(*a, **k):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "readlink", failing)
    got = resolve(tree, "link_in")
    assert got == {"ok": False, "code": "io_error", "error": "cannot resolve link_in: Input/output error"}


def test_a_path_of_exactly_path_max_bytes_inside_the_root_is_too_long(tree):
    root_len = len(os.fsencode(os.path.abspath(tree)))
    want = 4096 - root_len - 1  # the relative part, after the root and its "/"
    parts, left = [], want
    while left > 0:
        n = min(200, left if left <= 200 else left - 2 if left - 201 < 1 else 200)
        parts.append("a" * n)
        left -= n + 1
    rel = "/".join(parts)
    assert len(rel) == want
    got = resolve(tree, rel)
    assert got["code"] == "name_too_long" and "the path is 4096 bytes; the limit is 4095" in got["error"]
    shorter = resolve(tree, rel[:-1])
    assert isinstance(shorter, Resolved) and not shorter.exists


def test_the_plain_not_found_message_has_no_hint(tree):
    assert resolve(tree, "missing.txt", must_exist=True)["error"] == "no such file or directory: missing.txt"


@pytest.mark.parametrize("exc, code, message", [
    (safeopen.Changed("file.txt"), "path_changed", "cannot stat file.txt: "),
    (NotADirectoryError(errno.ENOTDIR, "Not a directory"), "not_found",
     "not a directory: a component of file.txt"),
])
def test_stat_races_are_results(tree, monkeypatch, exc, code, message):
    res = resolve(tree, "file.txt")

    def racing(self, rel):
        raise exc

    monkeypatch.setattr(safeopen.Root, "stat", racing)
    got = pathpolicy.check_regular(res)
    assert got["code"] == code and got["error"].startswith(message)


def test_a_file_of_no_known_kind_is_not_a_regular_file(tree, monkeypatch):
    res = resolve(tree, "file.txt")
    fake = os.stat_result((stat.S_IFLNK | 0o777, 0, 0, 1, 0, 0, 0, 0, 0, 0))
    monkeypatch.setattr(safeopen.Root, "stat", lambda self, rel: fake)
    assert pathpolicy.check_regular(res) == {"ok": False, "code": "not_a_file",
                                             "error": "not a regular file: file.txt"}
