"""Opening paths beneath the working directory, so that what was checked is what is opened.

The path policy (``pathpolicy.resolve``) checks a path by name; a directory on the way that
is swapped for a symbolic link to the outside between that check and an open by name would
let the outside through. Here every open starts from a descriptor of the root and never
leaves it, whatever the tree does meanwhile:

* ``openat2(root_fd, rel, how)`` with ``RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`` where the
  kernel has it (Linux 5.6; Python has no wrapper: a ctypes syscall, probed once). The kernel
  follows symbolic links as long as they stay beneath the root and refuses the rest (EXDEV).
* otherwise (no such syscall, or a seccomp filter refusing it), and to tell an absolute link
  that stays inside from an escape: a walk from the root descriptor, one component at a time,
  each directory opened with ``O_NOFOLLOW | O_DIRECTORY`` relative to the one before. A
  symbolic link on the way is read (``readlinkat``) and its target walked in its place; ``..``
  goes back to the descriptor it came from, and never above the root; an absolute target
  counts only when it names a place inside the root (else: ``Escape``). At most MAX_SYMLINKS
  links per path (ELOOP), as the kernel.

Writes use ``Root.parent``: the descriptor of the directory that holds the final name (a final
symbolic link inside the tree followed to its target), so the temp file is created and renamed
with ``dir_fd`` in the very directory that was checked. Errors are ``OSError`` (``Escape`` for
a path leading outside); the tools turn them into results.
"""

from __future__ import annotations

import errno
import os
import stat
import threading

MAX_SYMLINKS = 40  # the kernel's MAXSYMLINKS
MAX_FLAPS = 8  # a name that was a link and then not, this many times: give up (Changed)

RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_BENEATH = 0x08
SYS_OPENAT2 = 437  # the same number on every architecture since Linux 5.1's unified table
_SYSCALL_ARCHES = {"x86_64", "aarch64", "arm64", "armv7l", "armv6l", "riscv64", "ppc64le",
                   "ppc64", "s390x", "i686", "i386", "mips64", "loongarch64"}

# Directories on the way are opened for path walking only where the platform can (O_PATH: no
# read permission needed, as for a lookup by name).
_DIR_FLAGS = os.O_DIRECTORY | os.O_CLOEXEC | getattr(os, "O_PATH", os.O_RDONLY)
_LOOKS_LIKE_LINK = (errno.ELOOP, errno.ENOTDIR, errno.EMLINK)  # O_NOFOLLOW met a link (or not a dir)
_WALK_INSTEAD = (errno.EXDEV, errno.ELOOP, errno.EAGAIN)  # openat2 refused: the walk says why


class Changed(OSError):
    """A name on the path kept turning from a link into something else while it was opened
    (a directory swapped with a link, over and over): given up after MAX_FLAPS looks."""

    def __init__(self, where: str):
        super().__init__(errno.EAGAIN, f"{where} kept changing while it was opened "
                                       "(a directory swapped with a symbolic link?)")


class Escape(OSError):
    """The path leads outside the root (through ``..`` or a symbolic link)."""

    def __init__(self, what: str, link: bytes | None = None, target: bytes | None = None):
        super().__init__(errno.EXDEV, what)
        self.link = link
        self.target = target


# -- openat2 ----------------------------------------------------------------------------

_probe_lock = threading.Lock()
_openat2_state: bool | None = None  # None: not probed yet; tests set False to force the walk
_syscall = None


def _load_syscall():
    import ctypes  # lazily: start-up time is a benchmark figure

    libc = ctypes.CDLL(None, use_errno=True)
    fn = libc.syscall
    fn.restype = ctypes.c_long
    fn.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t]

    class OpenHow(ctypes.Structure):  # struct open_how {u64 flags; u64 mode; u64 resolve;}
        _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]

    def call(dir_fd: int, path: bytes, flags: int, mode: int, resolve: int) -> int:
        how = OpenHow(flags, mode, resolve)
        fd = fn(SYS_OPENAT2, dir_fd, path, ctypes.byref(how), ctypes.sizeof(how))
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), os.fsdecode(path))
        return fd

    return call


def openat2(dir_fd: int, path: bytes, flags: int, mode: int = 0,
            resolve: int = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS) -> int:
    """The raw syscall: a new fd, or OSError with the kernel's errno (ENOSYS where absent)."""
    global _syscall
    if _syscall is None:
        u = os.uname()  # platform.machine() is u.machine, without loading platform
        if u.sysname != "Linux" or u.machine not in _SYSCALL_ARCHES:
            raise OSError(errno.ENOSYS, "openat2 is not available here")
        _syscall = _load_syscall()
    return _syscall(dir_fd, path, flags, mode if flags & os.O_CREAT else 0, resolve)


def have_openat2(root_fd: int) -> bool:
    """Whether openat2 with RESOLVE_BENEATH works here (probed once per process: a kernel
    before 5.6 says ENOSYS, a seccomp filter ENOSYS or EPERM, an old one EINVAL/E2BIG)."""
    global _openat2_state
    if _openat2_state is not None:
        return _openat2_state
    with _probe_lock:
        if _openat2_state is None:
            try:
                os.close(openat2(root_fd, b".", os.O_DIRECTORY | os.O_CLOEXEC | os.O_RDONLY))
                _openat2_state = True
            except OSError as exc:
                if exc.errno in (errno.ENOSYS, errno.EPERM, errno.EINVAL, errno.E2BIG):
                    _openat2_state = False
                else:  # the probe itself failed (EACCES on the root...): try again next time
                    return False
    return _openat2_state


# -- paths ------------------------------------------------------------------------------


def _parts(path: bytes) -> list[bytes]:
    """The components (``..`` kept: the walk judges it), as a stack: pop() gives the first."""
    parts = [p for p in path.split(b"/") if p not in (b"", b".")]
    parts.reverse()
    return parts


def _under(path: bytes, base: bytes) -> bytes | None:
    """``path`` relative to ``base`` when lexically at or below it (no ``..`` judged), else None."""
    if path == base or path.rstrip(b"/") == base:
        return b"."
    prefix = base if base.endswith(b"/") else base + b"/"
    return path[len(prefix):] if path.startswith(prefix) else None


class Root:
    """A descriptor of the working directory, opened once per tool call; every open beneath it.

    ``root`` may be spelled through a symbolic link (that is the user's choice of directory);
    nothing below it is ever followed outside it. Use as a context manager, or ``close()``.
    """

    def __init__(self, root: str | bytes | os.PathLike):
        raw = root if isinstance(root, bytes) else os.fsencode(os.fspath(root))
        self.given = os.path.normpath(os.path.abspath(raw))
        self.fd = os.open(self.given, _DIR_FLAGS)
        self._real: bytes | None = None

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> Root:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def real(self) -> bytes:
        """realpath of the root (for absolute link targets spelled through it)."""
        if self._real is None:
            self._real = os.path.realpath(self.given)
        return self._real

    # -- the public operations -----------------------------------------------------------

    def open(self, rel: str | bytes, flags: int, mode: int = 0o666) -> int:
        """Open ``rel`` (relative to the root) beneath the root; a final symbolic link that stays
        inside is followed (unless ``O_NOFOLLOW`` is in ``flags``). Raises OSError / Escape."""
        path = _bytes(rel)
        flags |= os.O_CLOEXEC
        if have_openat2(self.fd):
            try:
                return openat2(self.fd, path, flags, mode)
            except OSError as exc:
                if exc.errno not in _WALK_INSTEAD:
                    raise
                # EXDEV: an escape, or an absolute link that stays inside (the kernel refuses
                # both); ELOOP/EAGAIN: let the walk give the precise answer.
        return self._walk(path, flags, mode)

    def open_dir(self, rel: str | bytes, *, read: bool = False) -> int:
        """A directory beneath the root: for ``*at`` calls, or (``read``) for listing."""
        flags = os.O_DIRECTORY | (os.O_RDONLY if read else _DIR_FLAGS)
        return self.open(rel, flags)

    def parent(self, rel: str | bytes, *, make_parents: bool = False) -> tuple[int, bytes]:
        """(fd of the directory holding the final name, that name); a final symbolic link that
        stays inside is followed to its target, so the name is never a link when this returns
        (it may not exist). A path ending in a directory itself (``.``, ``..``) gives (its fd,
        ``b"."``). ``make_parents``: missing directories on the way are created (also those of
        a dangling link's target). The caller closes the fd."""
        path = _bytes(rel)
        via: bytes | None = None  # the final link followed last, for the message of an escape
        flaps = links = 0
        while True:
            head, _, tail = path.rstrip(b"/").rpartition(b"/")
            try:
                if tail in (b"", b".", b".."):
                    return self.open_dir(path or b"."), b"."
                try:
                    dir_fd = self.open_dir(head or b".")
                except FileNotFoundError:
                    if not make_parents or not head:
                        raise
                    self.makedirs(head)
                    dir_fd = self.open_dir(head)
            except Escape as exc:
                if via is None or exc.link is not None:
                    raise
                raise Escape("a symbolic link leads outside: "
                             + os.fsdecode(via), link=via) from None
            try:
                st = os.stat(tail, dir_fd=dir_fd, follow_symlinks=False)
                if not stat.S_ISLNK(st.st_mode):
                    return dir_fd, tail
                target = os.readlink(tail, dir_fd=dir_fd)
            except FileNotFoundError:
                return dir_fd, tail
            except OSError as exc:
                os.close(dir_fd)
                if exc.errno == errno.EINVAL:  # no longer a link (swapped meanwhile): look again
                    flaps += 1
                    if flaps <= MAX_FLAPS:
                        continue
                    raise Changed(os.fsdecode(path)) from None
                raise
            except BaseException:
                os.close(dir_fd)
                raise
            os.close(dir_fd)
            links += 1
            if links > MAX_SYMLINKS:  # as open() and the kernel: at most 40 links
                raise OSError(errno.ELOOP, "too many levels of symbolic links", os.fsdecode(rel))
            via = head + b"/" + tail if head else tail
            path = self._follow(head, tail, target)

    def stat(self, rel: str | bytes) -> os.stat_result:
        """stat of ``rel`` beneath the root (in-tree links followed), never opening the file
        itself: a FIFO cannot block here."""
        for _ in range(MAX_FLAPS):
            dir_fd, name = self.parent(rel)
            try:
                st = os.fstat(dir_fd) if name == b"." else os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            finally:
                os.close(dir_fd)
            if not stat.S_ISLNK(st.st_mode):
                return st
            # a link now, where parent() saw none a moment ago: swapped meanwhile, look again
        raise Changed(os.fsdecode(_bytes(rel)))

    def makedirs(self, rel: str | bytes) -> None:
        """Create the missing directories of ``rel`` beneath the root, one at a time, each in
        the directory descriptor it was found in. Raises OSError / Escape."""
        parts = [p for p in _bytes(rel).split(b"/") if p not in (b"", b".")]
        for i in range(1, len(parts) + 1):
            prefix = b"/".join(parts[:i])
            try:
                os.close(self.open_dir(prefix))
                continue
            except FileNotFoundError:
                pass
            dir_fd, name = self.parent(prefix)
            try:
                if name != b".":
                    os.mkdir(name, 0o777, dir_fd=dir_fd)
            except FileExistsError:
                pass
            finally:
                os.close(dir_fd)
            os.close(self.open_dir(prefix))  # it is a directory beneath the root now

    # -- the walk --------------------------------------------------------------------------

    def _follow(self, head: bytes, name: bytes, target: bytes) -> bytes:
        """Where a link ``head/name -> target`` leads, relative to the root (Escape if an
        absolute target is not inside it; a relative one is judged as it is walked)."""
        if not target:
            raise OSError(errno.ENOENT, "empty symbolic link", os.fsdecode(name))
        if not target.startswith(b"/"):
            return head + b"/" + target if head else target
        inside = self._inside(target)
        if inside is None:
            shown = os.fsdecode(head + b"/" + name if head else name)
            raise Escape(f"a symbolic link leads outside: {shown}",
                         link=name, target=target)
        return inside

    def _inside(self, target: bytes) -> bytes | None:
        """An absolute link target relative to the root, if it names a place inside it."""
        for base in (self.real, self.given):
            rel = _under(target, base)
            if rel is not None:
                return rel
        # spelled through some other link: where it really is (stat only, nothing opened;
        # whatever this says, the walk that follows stays beneath the root descriptor)
        return _under(os.path.realpath(target), self.real)

    def _walk(self, path: bytes, flags: int, mode: int) -> int:
        # pending: a stack of (component, the link whose target it came from, or None)
        pending: list[tuple[bytes, bytes | None]] = [(p, None) for p in _parts(path)]
        held: list[int] = []  # directory fds we opened, root first; ".." pops
        walked: list[bytes] = []  # the names walked so far (for messages and link targets)
        links = 0
        flaps = 0  # a name seen as a link, then as no link: swapped while we looked

        def here() -> int:
            return held[-1] if held else self.fd

        try:
            while True:
                while pending and pending[-1][0] == b"..":
                    _, via = pending.pop()
                    if not held:
                        if via is not None:
                            raise Escape("a symbolic link leads outside: " + os.fsdecode(via), link=via)
                        raise Escape("it leads above the working directory")
                    os.close(held.pop())
                    walked.pop()
                if not pending:  # the path names a directory we hold (or the root)
                    return os.open(".", flags, mode, dir_fd=here())
                name, via = pending.pop()
                last = not pending
                try:
                    if last:
                        fd = os.open(name, flags | os.O_NOFOLLOW, mode, dir_fd=here())
                        if flags & getattr(os, "O_PATH", 0) and stat.S_ISLNK(os.fstat(fd).st_mode):
                            os.close(fd)  # O_PATH|O_NOFOLLOW opened the link itself
                            raise OSError(errno.ELOOP, "a symbolic link")
                        return fd
                    fd = os.open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=here())
                except OSError as exc:
                    if exc.errno not in _LOOKS_LIKE_LINK or (last and flags & os.O_NOFOLLOW):
                        raise
                    try:
                        target = os.readlink(name, dir_fd=here())
                    except OSError as again:
                        if again.errno != errno.EINVAL:
                            raise
                        if exc.errno != errno.ELOOP and not _dir_or_link(name, here()):
                            raise exc from None  # not a link, not a directory: ENOTDIR stands
                        flaps += 1  # a link a moment ago, not now: swapped meanwhile, look again
                        if flaps > MAX_FLAPS:
                            raise Changed(os.fsdecode(b"/".join([*walked, name]))) from None
                        pending.append((name, via))
                        continue
                    links += 1
                    if links > MAX_SYMLINKS:
                        raise OSError(errno.ELOOP, "too many levels of symbolic links",
                                      os.fsdecode(path)) from None
                    link = b"/".join([*walked, name])
                    if target.startswith(b"/"):
                        target = self._follow(b"/".join(walked), name, target)
                        while held:  # an absolute target inside: walk it from the root
                            os.close(held.pop())
                        walked.clear()
                    pending.extend((p, link) for p in _parts(target))
                    continue
                held.append(fd)
                walked.append(name)
        finally:
            for fd in held:
                os.close(fd)


def _dir_or_link(name: bytes, dir_fd: int) -> bool:
    try:
        mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
    except OSError:
        return False
    return stat.S_ISDIR(mode) or stat.S_ISLNK(mode)


def _bytes(rel: str | bytes) -> bytes:
    path = rel if isinstance(rel, bytes) else os.fsencode(rel)
    if path.startswith(b"/"):
        raise ValueError("a path beneath the root is relative")
    return path or b"."
