"""The path policy: every path argument of every tool is resolved here, and only here.

ADR 0007 §3, three steps, in this order:

1. Lexical step, before the filesystem is touched: the text becomes bytes (``names.to_bytes``:
   a name written with ``\\xNN`` escapes finds the same bytes), and a path that only a shell
   would understand is refused (``lexical_problem``): a leading ``~`` or ``$VAR`` (neither is
   expanded here; ``./~`` is the file named ``~``), a component above NAME_MAX or a path above
   PATH_MAX ("name too long", with the limit). Then ``normpath(join(root, path))``: absolute
   paths are allowed, ``..`` is collapsed. A trailing ``/`` (or ``/.``) means "a directory":
   on an existing non-directory it is "not a directory", as the kernel says.
2. Byte-prefix scope check with a ``/`` boundary against the (lexical) root: ``/x/root`` does
   not admit ``/x/root-evil``. Done on ``os.fsencode`` bytes, so non-UTF-8 names work; no case
   folding, no Unicode normalisation (strict on case-insensitive filesystems, sound otherwise).
3. Symlink check: resolve the path component by component (``lstat`` + ``readlink``, never
   ``open``), i.e. realpath of the deepest existing ancestor plus the not-yet-existing lexical
   remainder, and require the result to stay inside realpath(root). A symlink inside the tree
   pointing outside, a symlinked intermediate directory leading outside, or a dangling link whose
   target would be outside are rejected; a dangling link whose target is inside counts as "does
   not exist yet". Link loops are reported after 40 links (the kernel's MAXSYMLINKS), never hang.

DEVIATION from step 2 (issue 14 §2): an absolute path spelled through a symbolic link to the
root (the root entered through a link, macOS ``/tmp``), or through the root's real path when
the root was given through a link, is inside when its real location is: the shortest leading
part of it that really is the root (or a directory in it) is replaced by the root, the rest
kept as spelled, and step 3 checks it as usual. Relative paths are never respelled.

Rejections are result dicts (``results.error``), never exceptions. This check gives the clear
answer and the names the permission rules match; it is not what keeps a tool inside: every
open, stat, listing, temp file and rename goes through ``safeopen`` (beneath a descriptor of
the root), so a directory swapped for a link between this check and the open cannot lead
outside (the TOCTOU window ADR 0007 §3 accepted is closed).
"""

from __future__ import annotations

import errno
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from dashfloat.textsafe import visible
from dashfloat.tools import names, safeopen
from dashfloat.tools.results import error

MAX_SYMLINKS = 40
PATH_MAX = 4096  # bytes, the terminating NUL included (linux/limits.h): a path has at most 4095
NAME_MAX = 255  # bytes in one component (linux/limits.h; every common Linux filesystem)

ALLOWED = "only paths inside the working directory are allowed"


@dataclass(frozen=True)
class Resolved:
    """A path the policy admitted.

    abs:  the lexical absolute path (``str``; non-UTF-8 bytes kept as surrogate escapes, so
          ``os.fsencode(abs)`` gives the exact bytes back)
    rel:  ``abs`` relative to the root, for display (``"."`` for the root itself); raw, may hold
          surrogate escapes: pass it through ``shown()`` before it goes into a result
    real: where the path really is: symlinks resolved, inside ``real_root``; for a path that does
          not exist yet, the real deepest existing ancestor plus the lexical remainder
    exists: whether ``real`` exists (a dangling link counts as not existing)
    real_root: realpath of the root
    slash: the path ended in ``/`` (or ``/.``): it names a directory
    root: the lexical absolute root (as given): ``rel`` is opened beneath it (``safeopen``)
    """

    abs: str
    rel: str
    real: str
    exists: bool = True
    real_root: str = ""
    slash: bool = False
    root: str = ""


class _Loop(Exception):
    pass


class _NotDir(Exception):
    def __init__(self, where: bytes):
        super().__init__(where)
        self.where = where


def shown(name: str | bytes) -> str:
    """A name as an error message shows it: its written form (``names.written``: bytes that
    are not UTF-8 as ``\\xNN``), with newlines, tabs and the characters ``textsafe.visible``
    escapes (controls, bidi, zero-width) escaped too, so a message is one safe line. The
    ``path``/``name`` fields of a result carry ``names.written`` instead: that is the text
    the model gives back."""
    text = names.written(name)
    text = text.replace("\n", "\\n").replace("\t", "\\t")
    return visible(text)


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


_SHELL_VAR = re.compile(rb"\$(?:\{|[A-Za-z_])")


def lexical_problem(raw: bytes) -> dict | None:
    """The error for a path only a shell would understand, or one the kernel would refuse as
    too long; None when the path may go on. Pure: nothing on disk is looked at."""
    given = shown(raw)
    first = raw.split(b"/", 1)[0]
    if first.startswith(b"~"):
        return error(
            "bad_arguments",
            f"paths are relative to the working directory; ~ is not expanded (there is no "
            f"shell here): {_clip(given)}. A file literally named {shown(first)} in the "
            f"working directory is ./{shown(first)}",
        )
    if _SHELL_VAR.match(first):
        return error(
            "bad_arguments",
            f"paths are relative to the working directory; $VARIABLES are not expanded (there "
            f"is no shell here): {_clip(given)}. A file literally named {shown(first)} in the "
            f"working directory is ./{shown(first)}",
        )
    if len(raw) >= PATH_MAX:
        return error(
            "name_too_long",
            f"name too long: the path is {len(raw)} bytes; the limit is {PATH_MAX - 1} "
            f"bytes (PATH_MAX): {_clip(given)}",
        )
    for part in raw.split(b"/"):
        if len(part) > NAME_MAX:
            return error(
                "name_too_long",
                f"name too long: a component of the path is {len(part)} bytes; the limit "
                f"is {NAME_MAX} bytes (NAME_MAX): {_clip(shown(part))}",
            )
    return None


def _inside(path: bytes, root: bytes) -> bool:
    """Byte-prefix check with a ``/`` boundary."""
    if path == root:
        return True
    prefix = root if root.endswith(b"/") else root + b"/"
    return path.startswith(prefix)


def _real(path: bytes) -> tuple[bytes, bool]:
    """Resolve an absolute path like realpath, on lstat/readlink only.

    Returns (real, exists). When a component does not exist, the rest is appended lexically
    (it cannot be a symlink). Raises _Loop after MAX_SYMLINKS links, _NotDir when a non-directory
    is used as a directory, OSError for other lstat/readlink failures.
    """
    parts = path.split(b"/")
    parts.reverse()  # a stack: pop() takes the next component
    cur = b"/"
    exists = True
    links = 0
    while parts:
        name = parts.pop()
        if name in (b"", b"."):
            continue
        if name == b"..":
            cur = os.path.dirname(cur) or b"/"
            continue
        nxt = os.path.join(cur, name)
        if not exists:
            cur = nxt
            continue
        try:
            st = os.lstat(nxt)
        except FileNotFoundError:
            exists = False
            cur = nxt
            continue
        except NotADirectoryError:
            raise _NotDir(cur) from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _Loop() from None
            raise
        if stat.S_ISLNK(st.st_mode):
            links += 1
            if links > MAX_SYMLINKS:
                raise _Loop()
            try:
                target = os.readlink(nxt)
            except OSError as exc:
                if exc.errno != errno.EINVAL:
                    raise
                parts.append(name)  # no longer a link (swapped meanwhile): look again
                continue
            if target.startswith(b"/"):
                cur = b"/"
            more = target.split(b"/")
            more.reverse()
            parts.extend(more)
            continue
        if parts and not stat.S_ISDIR(st.st_mode) and any(p not in (b"", b".") for p in parts):
            # "file/x" (or "file/.."): the kernel says ENOTDIR; so do we.
            raise _NotDir(nxt)
        cur = nxt
    return cur, exists


def _root_bytes(root: str | Path | bytes) -> bytes:
    raw = root if isinstance(root, bytes) else os.fsencode(os.fspath(root))
    return os.path.normpath(os.path.abspath(raw))


def root_abs(root: str | Path | bytes) -> str:
    """The lexical absolute root the policy checks against (no symlinks resolved)."""
    return os.fsdecode(_root_bytes(root))


def real_root(root: str | Path | bytes) -> str:
    """realpath(root) as a str (surrogate-escaped); raises OSError when it cannot be resolved."""
    real, exists = _real(_root_bytes(root))
    if not exists:
        raise FileNotFoundError(errno.ENOENT, "working directory does not exist", root)
    return os.fsdecode(real)


def resolve(root: str | Path, path: str | bytes, *, must_exist: bool = False) -> Resolved | dict:
    """Resolve a tool's path argument against the root, or return an error result.

    ``path``: the model's text (read with ``names.to_bytes``), or bytes from DashFloat itself
    (taken as they are: an internal path is never read for escapes).

    Codes: ``bad_arguments`` (not a string, empty, NUL byte, a lone surrogate, a leading ``~``
    or ``$VAR``), ``name_too_long`` (NAME_MAX, PATH_MAX), ``path_escape`` (lexically outside,
    or a symlink leads outside), ``not_found`` (``must_exist`` and it does not exist, or a
    non-directory is used as a directory), ``not_a_directory`` (``file/``),
    ``permission_denied``, ``io_error`` (link loop, other OS errors).
    """
    if isinstance(path, bytes | bytearray):
        raw = bytes(path)  # from DashFloat itself: the exact bytes, no escapes read
    elif isinstance(path, str):
        raw = None
    else:
        return error("bad_arguments", f"path must be a string, not {type(path).__name__}")
    given = shown(path)
    if not path:
        return error("bad_arguments", "path is empty; use \".\" for the working directory")
    if (b"\0" in raw) if raw is not None else ("\0" in path):
        return error("bad_arguments", f"path contains a NUL byte: {given}")
    if raw is None:
        raw = names.to_bytes(path)
        if raw is None:
            return error(
                "bad_arguments",
                f"path is not valid text: it holds the lone surrogate "
                f"{names.stray_surrogate(path)}, which stands for no byte: {given}",
            )
    given = shown(raw)  # as the tools read it: the model's caf\xe9 stays caf\xe9
    bad = lexical_problem(raw)
    if bad is not None:
        return bad
    slash = raw.endswith(b"/") or raw.endswith(b"/.")

    root_b = _root_bytes(root)
    # 1. lexical expand (no ~, no $VARS)
    abs_b = os.path.normpath(os.path.join(root_b, raw))
    if len(abs_b) >= PATH_MAX:
        return error(
            "name_too_long",
            f"name too long: inside the working directory ({len(root_b)} bytes) the path is "
            f"{len(abs_b)} bytes; the limit is {PATH_MAX - 1} bytes (PATH_MAX): {_clip(given)}",
        )
    # 2. byte-prefix check with a "/" boundary
    if not _inside(abs_b, root_b):
        respelled = _through_a_link(abs_b, raw, root_b)
        if respelled is None:
            return error("path_escape", f"path escapes the working directory: {given} ({ALLOWED})")
        abs_b = respelled
    # 3. realpath of the deepest existing ancestor inside realpath(root)
    try:
        root_real, root_exists = _real(root_b)
    except (OSError, _Loop, _NotDir):
        root_real, root_exists = b"", False
    if not root_exists:
        return error("not_found", f"the working directory does not exist: {shown(root_b)}")
    try:
        real_b, exists = _real(abs_b)
    except _Loop:
        return error(
            "io_error",
            f"too many levels of symbolic links (a symlink loop?) resolving: {given}",
        )
    except _NotDir as exc:
        where = shown(os.path.relpath(exc.where, root_real)) if _inside(exc.where, root_real) else given
        return error("not_found", f"not a directory: {where} (in path {given})")
    except PermissionError:
        return error("permission_denied", f"permission denied resolving: {given}")
    except OSError as exc:
        return error("io_error", f"cannot resolve {given}: {exc.strerror or exc}")
    if not _inside(real_b, root_real):
        return error(
            "path_escape",
            f"path escapes the working directory: {given} "
            f"(a symbolic link leads outside; {ALLOWED})",
        )
    if must_exist and not exists:
        return error("not_found", f"no such file or directory: {given}{_escape_hint(path, raw)}")
    if slash and exists:
        bad = _slash_on_non_directory(real_b, given)
        if bad is not None:
            return bad
    rel_b = b"." if abs_b == root_b else os.path.relpath(abs_b, root_b)
    return Resolved(
        abs=os.fsdecode(abs_b),
        rel=os.fsdecode(rel_b),
        real=os.fsdecode(real_b),
        exists=exists,
        real_root=os.fsdecode(root_real),
        slash=slash,
        root=os.fsdecode(root_b),
    )


def _escape_hint(path: str | bytes, raw: bytes) -> str:
    """For a missing path the model wrote with ``\\xNN`` escapes: how they were read."""
    if not isinstance(path, str) or raw == path.encode("utf-8", "surrogateescape"):
        return ""
    return (" (each \\xNN in it was read as a byte that is not UTF-8, the way list_directory "
            "writes such names; a backslash in such a name is written \\\\)")


def _slash_on_non_directory(real_b: bytes, given: str) -> dict | None:
    """"not a directory" for ``a.txt/``: a trailing slash names a directory (the kernel agrees)."""
    try:
        st = os.stat(real_b)
    except OSError:
        return None  # gone meanwhile: the tool's own open reports it
    if stat.S_ISDIR(st.st_mode):
        return None
    return error(
        "not_a_directory",
        f"not a directory: {given} (a path that ends in / names a directory, and this is "
        f"{_KIND_TEXT.get(kind(st.st_mode), 'not one')}; leave out the trailing /)",
    )


def _through_a_link(abs_b: bytes, raw: bytes, root_b: bytes) -> bytes | None:
    """An absolute path lexically outside the root that really is inside it (spelled through
    a link to the root or to a directory in it, or through the root's real path), spelled
    again through the root; None for anything else (relative paths never: ``..`` stays out).
    Only the location is decided here; step 3 then checks the path as usual."""
    if not raw.startswith(b"/"):
        return None
    try:
        root_real, root_exists = _real(root_b)
    except (OSError, _Loop, _NotDir):
        return None
    if not root_exists:
        return None
    # The shortest leading part that really is the root or a directory in it; the names after
    # it stay as spelled (a link among them is then judged by step 3 like any other).
    parts = [p for p in abs_b.split(b"/") if p]
    for i in range(1, len(parts) + 1):
        try:
            real_b, exists = _real(b"/" + b"/".join(parts[:i]))
        except (OSError, _Loop, _NotDir):
            return None
        if not exists:
            return None
        if _inside(real_b, root_real):
            rel_b = os.path.relpath(real_b, root_real)
            return os.path.normpath(os.path.join(root_b, rel_b, *parts[i:]))
    return None


def kind(mode: int) -> str:
    """file, dir, link, fifo, socket, char_device, block_device or other."""
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISLNK(mode):
        return "link"
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode):
        return "char_device"
    if stat.S_ISBLK(mode):
        return "block_device"
    return "other"


_KIND_TEXT = {"file": "a file", "fifo": "a FIFO", "socket": "a socket", "char_device": "a device",
              "block_device": "a device"}

_SPECIAL = {
    "fifo": "a FIFO (named pipe)",
    "socket": "a socket",
    "char_device": "a character device",
    "block_device": "a block device",
}


def special_error(name: str, mode: int) -> dict | None:
    """The ``special_file`` error for FIFOs, sockets and devices; None for anything else."""
    what = _SPECIAL.get(kind(mode))
    if what is None:
        return None
    return error(
        "special_file",
        f"refusing {what}: {name} (only regular files and directories are allowed)",
    )


def _stat(resolved: Resolved, beneath: safeopen.Root | None = None) -> os.stat_result | dict:
    given = shown(resolved.rel)
    try:
        if beneath is None:
            with safeopen.Root(resolved.root or resolved.real_root) as root:
                return root.stat(resolved.rel)  # never opens the file: a FIFO cannot block
        return beneath.stat(resolved.rel)
    except safeopen.Escape as exc:
        return error("path_escape", f"path escapes the working directory: {given} "
                                    f"({exc.strerror}; {ALLOWED})")
    except safeopen.Changed as exc:
        return error("path_changed", f"cannot stat {given}: {exc.strerror}; try again")
    except NotADirectoryError:
        return error("not_found", f"not a directory: a component of {given}")
    except FileNotFoundError:
        return error("not_found", f"no such file or directory: {given}")
    except PermissionError:
        return error("permission_denied", f"permission denied: {given}")
    except OSError as exc:
        return error("io_error", f"cannot stat {given}: {exc.strerror or exc}")


def _checked_mode(resolved: Resolved, beneath: safeopen.Root | None) -> int | dict:
    """The file's mode, or the error result for a missing path or a special file."""
    st = _stat(resolved, beneath)
    if isinstance(st, dict):
        return st
    special = special_error(shown(resolved.rel), st.st_mode)
    return special if special is not None else st.st_mode


def check_regular(resolved: Resolved, beneath: safeopen.Root | None = None) -> dict | None:
    """None when ``resolved`` is an existing regular file, else an error result."""
    mode = _checked_mode(resolved, beneath)
    if isinstance(mode, dict):
        return mode
    given = shown(resolved.rel)
    if stat.S_ISDIR(mode):
        return error("not_a_file", f"is a directory, not a file: {given} (use list_directory)")
    if not stat.S_ISREG(mode):
        return error("not_a_file", f"not a regular file: {given}")
    return None


def check_directory(resolved: Resolved, beneath: safeopen.Root | None = None) -> dict | None:
    """None when ``resolved`` is an existing directory, else an error result."""
    mode = _checked_mode(resolved, beneath)
    if isinstance(mode, dict):
        return mode
    if not stat.S_ISDIR(mode):
        return error("not_a_directory", f"not a directory: {shown(resolved.rel)}")
    return None
