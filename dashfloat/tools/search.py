"""search_workspace: the lines that contain a text (or match a regular expression) in the files
under a directory, without asking and without a shell.

Backends, the first that can run (`choose`): ripgrep when `rg` is installed, else `git grep`
when the directory is in a git work tree, else a Python walker. Each one reads only beneath
the working directory and gives the same kind of hits; what is done with them is common:

- Where: `path` goes through the path policy (must exist, inside the root), then is opened
  beneath the root (`safeopen`): rg and git run in that directory's descriptor, the walker
  opens every directory and file relative to the one before with O_NOFOLLOW. No backend
  follows a symbolic link (rg without -L, git never; the walker skips them), and every file
  with hits is stat()ed again beneath the root, so a directory swapped for a link to the
  outside during the search is dropped, never shown.
- What is skipped: binary files (a NUL byte near the start), `.git` and the other VCS
  directories, `node_modules`, virtualenvs (`.venv`, `venv`, or any directory holding a
  `pyvenv.cfg`), what `.gitignore` files ignore, and files a permission rule does not let
  read_file read without asking (the `readable` predicate: a search cannot walk around
  `deny read_file(**/.env)`; the result counts them). An explicit `path` is searched even
  when it is itself one of these (the rules inside it still apply).
- Bounds: at most `max_results` lines shown (default 100), each cut at LINE_CHARS characters
  around its first match, the whole result at most OUTPUT_BYTES of JSON (the per-file counts
  at most FILES_BYTES of it), TIMEOUT seconds. Two passes: the matching lines in path order,
  stopped as soon as no more can be shown; then, only when it was stopped, the backend's own
  count of matching lines per file (rg --count, git grep -c, the walker's count), so
  `total_matches` and `files` are honest at native speed, and a result that is not complete
  says why (`truncated_by`, `complete`). "Matches" are matching lines, as grep counts them.
- What could not be searched is said, whichever backend ran: files and directories it could
  not read (`not_searched`, the first named from the working directory: rg's and git's own
  messages name them from elsewhere), but those the result would not show anyway; and, for
  the walker, lines longer than 4 x LINE_KEEP with no newline in a READ_CHUNK piece, searched
  in their head only (`lines_searched_in_part`: bounded memory).
- Processes: rg and git run in their own session and process group with stdin /dev/null,
  killed with their whole group on timeout, cancel, or `kill_all` (quit). Their environment
  is the safe one of repocheck.py: the repository's config cannot make git run a program
  (fsmonitor, hooks, pager... neutralised) or change the output format; rg reads no config
  file (RIPGREP_CONFIG_PATH removed, --no-config).

Regular expressions are those of the backend that runs (Rust regex for rg, PCRE for git grep
-P, Python re for the walker); the common subset is what the tool description promises.
Every failure is a result dict, never an exception.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import re
import stat
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import repeat
from typing import TYPE_CHECKING

from dashfloat.tools import catalogue, names, pathpolicy, safeopen
from dashfloat.tools.results import cancelled, error, ok

if TYPE_CHECKING:
    import subprocess

# subprocess, selectors, shutil and signal are imported where a search runs: the catalogue
# imports this module for its bounds, and start-up time is a benchmark figure.

log = logging.getLogger(__name__)

# the bounds the tool's description states live in the catalogue, which the first request
# needs: that request does not wait for this module (and the path policy) to load
MAX_RESULTS = catalogue.SEARCH_MAX_RESULTS  # lines shown by default
MAX_RESULTS_MAX = catalogue.SEARCH_MAX_RESULTS_MAX
LINE_CHARS = catalogue.SEARCH_LINE_CHARS  # characters of one line shown (around its first match)
OUTPUT_BYTES = catalogue.SEARCH_OUTPUT_BYTES  # the whole result, as the JSON the model reads
TIMEOUT = catalogue.SEARCH_TIMEOUT  # seconds for one search
FILES_BYTES = 8 * 1024  # of OUTPUT_BYTES, the most the per-file counts take

LINE_KEEP = 64 * 1024  # bytes of one line kept while reading (the window is cut from them)
SNIFF = 8 * 1024  # a NUL byte in this many leading bytes: a binary file
READ_CHUNK = 1024 * 1024  # the walker reads files this much at a time
GITIGNORE_MAX = 1024 * 1024  # a .gitignore larger than this is read this far
PROBE_TIMEOUT = 3.0  # seconds for `git rev-parse` to say whether this is a work tree
STDERR_MAX = 4096

SKIP_DIRS = frozenset((b".git", b".hg", b".svn", b"node_modules", b".venv", b"venv"))
VENV_MARKER = b"pyvenv.cfg"
BACKENDS = ("rg", "git", "python")
BACKEND_NAMES = {"rg": "ripgrep", "git": "git grep", "python": "python"}

_RESERVED = 1024  # bytes of the result kept for its other fields


@dataclass
class Hit:
    """One matching line: its file (bytes, relative to the searched directory), its 1-based
    number, its text (at most LINE_KEEP bytes) and whether the line was longer."""

    path: bytes
    line: int
    text: bytes
    long: bool


@dataclass
class _Search:
    """What a backend needs: the directory (a descriptor beneath the root), what to look for."""

    dir_fd: int
    target: bytes | None  # a single file in that directory, or None: the whole directory
    pattern: str
    regex: bool
    glob: Glob | None  # (defined below)
    deadline: float
    cancel: object = None
    root_rel: bytes = b"."  # the searched directory, relative to the root (for .gitignore)
    beneath: object = None  # the safeopen.Root
    rc: int | None = None
    stderr: bytes = b""
    timed_out: bool = False
    stopped: bool = False  # the driver has all it wants: stop reading
    unreadable: dict[str, str] = field(default_factory=dict)  # path (from the searched directory) -> why
    unreadable_more: bool = False  # there may be more unreadable files than those named
    long_lines: list[tuple[bytes, int]] = field(default_factory=list)  # (walker) lines searched in part

    def cannot_read(self, path: str, why: str) -> None:
        """A file or directory the backend could not read (it was not searched)."""
        self.unreadable.setdefault(path, why)

    def over(self) -> bool:
        if self.cancel is not None and getattr(self.cancel, "cancelled", False):
            return True
        if time.monotonic() >= self.deadline:
            self.timed_out = True
            return True
        return self.stopped


class _Failed(Exception):
    """The backend could not search: its message is the result's error."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


# -- globs and .gitignore ------------------------------------------------------------------


class _MatchesNothing(ValueError):
    """A pattern git reads as matching nothing; str() says why (a glob's error)."""


_UNCLOSED = "a '[' without its ']', or an unknown [:class:] (write \\[ for a literal [)"
_LONE_BACKSLASH = "it ends in a lone \\ (write \\\\ for a literal \\)"


def _glob_regex(pattern: str) -> str:
    """A gitignore-style pattern (no leading ! or trailing /: the caller strips them) as a
    regular expression over a /-separated relative path, as git's wildmatch reads it;
    _MatchesNothing when git's pattern matches nothing (a "[" never closed, an unknown
    [:class:], a lone trailing backslash)."""
    out = []
    i, n = 0, len(pattern)
    # git compares the text before the first wildcard on its own and matches the rest as a
    # pattern of its own: stars right after that text are at the start ("b**/a" matches ba,
    # b/x/a). (A pattern without a slash is matched against a name: no difference there.)
    start = next((k for k, ch in enumerate(pattern) if ch in "*?[\\"), n)
    while i < n:
        c = pattern[i]
        if c == "*":
            j = i
            while j < n and pattern[j] == "*":
                j += 1
            # two stars or more at the start or after a slash, before a slash or the end,
            # cross directories, as git reads them ("a/***/b" too)
            if j - i >= 2 and (i == start or pattern[i - 1] == "/"):
                if j == n:
                    out.append(".*")  # a trailing /**: everything inside
                    i = j
                    continue
                if pattern[j] == "/":
                    out.append("(?:.*/)?")  # **/: any number of directories, none included
                    i = j + 1
                    continue
                if pattern.startswith("\\/", j):
                    out.append(".*")  # **\/: anything, then the slash (never none, as git)
                    i = j
                    continue
            out.append("[^/]*")
            i = j
            continue
        if c == "?":
            out.append("[^/]")
        elif c == "[":
            found = _bracket(pattern, i)
            if found is None:
                raise _MatchesNothing(_UNCLOSED)
            regex, i = found
            out.append(regex)
            continue
        elif c == "\\":
            if i + 1 == n:
                raise _MatchesNothing(_LONE_BACKSLASH)
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


# git's [:name:] classes (ASCII, as git's own ctype), as the items of a regex class
_POSIX_CLASSES = {
    "alnum": "A-Za-z0-9", "alpha": "A-Za-z", "blank": " \\t", "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9", "graph": "!-~", "lower": "a-z", "print": " -~",
    "punct": "!-/:-@\\[-`{-~", "space": " \\t\\n\\v\\f\\r", "upper": "A-Z", "xdigit": "0-9A-Fa-f",
}


def _posix_end(pattern: str, j: int) -> int:
    """For "[:" at pattern[j]: the index of the first "]" after it when ":" precedes it (a
    [:name:] class), -1 when no "]" follows, else j (git reads the "[" as a member)."""
    end = pattern.find("]", j + 2)
    if end < 0:
        return -1
    return end if end - 1 >= j + 2 and pattern[end - 1] == ":" else j


def _bracket(pattern: str, i: int) -> tuple[str, int] | None:
    """The class at pattern[i] ("[") as git's wildmatch reads it: a regex and the index after
    its "]", or None when the pattern matches nothing (never closed, an unknown class). The
    first character after "[" (or "[!", "[^") is a member even if it is "]"; a backslash
    escapes; "-" between two members is a range (else itself); a class never matches "/"."""
    n = len(pattern)
    j = i + 1
    negated = j < n and pattern[j] in "!^"
    if negated:
        j += 1
    items: list[str] = []
    prev: str | None = None  # the last single member: the start of a range
    first = True
    while True:
        if j >= n:
            return None
        ch = pattern[j]
        if ch == "]" and not first:
            break
        first = False
        if ch == "\\":
            j += 1
            if j >= n:
                return None
            ch = pattern[j]
            items.append(re.escape(ch))
            prev = ch
        elif ch == "-" and prev is not None and j + 1 < n and pattern[j + 1] != "]":
            j += 1
            high = pattern[j]
            if high == "\\":
                j += 1
                if j >= n:
                    return None
                high = pattern[j]
            if prev < high:  # (its start is a member already, as in git: "[b-a]" matches b)
                items.append(f"{re.escape(prev)}-{re.escape(high)}")
            prev = None
        elif ch == "[" and pattern.startswith(":", j + 1) and (end := _posix_end(pattern, j)) != j:
            # (end: at the "]" of ":]")
            if end < 0 or pattern[j + 2:end - 1] not in _POSIX_CLASSES:
                return None  # git: no "]" at all, or an unknown name: the pattern matches nothing
            items.append(_POSIX_CLASSES[pattern[j + 2:end - 1]])
            j = end
            prev = None
        else:
            items.append(re.escape(ch))
            prev = ch
        j += 1
    return "(?!/)[" + ("^" if negated else "") + "".join(items) + "]", j + 1


@dataclass(frozen=True)
class Pattern:
    """One gitignore-style pattern, relative to the directory `base` (bytes, "" = the top)."""

    base: bytes
    regex: re.Pattern
    negate: bool
    dir_only: bool
    anchored: bool

    def matches(self, rel: bytes, is_dir: bool) -> bool:
        """Whether `rel` (relative to the top, /-separated) matches."""
        if self.dir_only and not is_dir:
            return False
        if self.base:
            if not rel.startswith(self.base + b"/"):
                return False
            rel = rel[len(self.base) + 1 :]
        text = rel.decode("utf-8", "surrogateescape")
        if not self.anchored:
            text = text.rsplit("/", 1)[-1]
        return self.regex.fullmatch(text) is not None


def compile_pattern(line: str, base: bytes = b"") -> Pattern | None:
    """One line of a .gitignore (or a glob) as a Pattern; None for a blank line, a comment
    or a line that matches nothing. A pattern with a / before its end is anchored at `base`;
    one without matches a name at any depth; a trailing / matches directories only; !
    negates."""
    try:
        return _compile_line(line, base)
    except _MatchesNothing:
        return None


def _compile_line(line: str, base: bytes = b"") -> Pattern | None:
    """compile_pattern's work: None for a blank line or a comment, _MatchesNothing (why)
    for a line that matches nothing."""
    line = line.rstrip("\n").rstrip("\r")
    stripped = line.rstrip(" ")
    if stripped.endswith("\\") and len(stripped) < len(line):
        stripped += " "  # an escaped trailing space stays
    line = stripped
    if not line or line.startswith("#"):
        return None
    negate = line.startswith("!")
    if negate:
        line = line[1:]  # ("\\!" and "\\#" are a literal ! and #: the regex reads the escape)
    dir_only = line.endswith("/")
    if dir_only:
        line = line[:-1]  # one slash, as git: "a//" keeps "a/", which no path matches
    if not line:
        return None
    anchored = "/" in line
    if line.startswith("/"):
        line = line[1:]  # one slash, as git: "//a" keeps "/a", which no path matches
    try:
        regex = re.compile(_glob_regex(line), re.DOTALL)
    except re.error:
        raise _MatchesNothing("it matches nothing") from None
    return Pattern(base, regex, negate, dir_only, anchored)


MAX_ALTERNATIVES = 64  # patterns one glob's {a,b} groups may expand to


@dataclass(frozen=True)
class Glob:
    """The `glob` argument: a path matches when one of its alternatives matches."""

    patterns: tuple[Pattern, ...]
    alternatives: tuple[str, ...]  # the glob as given, its {a,b} groups expanded

    def matches(self, rel: bytes, is_dir: bool) -> bool:
        return any(p.matches(rel, is_dir) for p in self.patterns)


def _group(text: str) -> tuple[int, int, list[str]] | None:
    """The first {a,b} group of a glob outside a [class] and not escaped: (its "{", its "}",
    the alternatives between them, split at their own level's commas); None when there is
    none; ValueError when a "{" is never closed."""
    depth, cut, parts, opened = 0, 0, [], -1
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "[":
            found = _bracket(text, i)
            if found is not None:
                i = found[1]
                continue
        elif ch == "{":
            depth += 1
            if depth == 1:
                opened, cut = i, i + 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                return opened, i, [*parts, text[cut:i]]
        elif ch == "," and depth == 1:
            parts.append(text[cut:i])
            cut = i + 1
        i += 1
    if depth:
        raise ValueError("a '{' without its '}' (write \\{ for a literal {)")
    return None


def _alternatives(text: str) -> list[str]:
    """The glob with its {a,b} groups expanded (nested too), as ripgrep reads them;
    ValueError when a "{" is never closed or there are more than MAX_ALTERNATIVES."""
    found = _group(text)
    if found is None:
        return [text]
    opened, closed, parts = found
    out = []
    for tail in _alternatives(text[closed + 1:]):
        for part in parts:
            for middle in _alternatives(part):
                out.append(text[:opened] + middle + tail)
                if len(out) > MAX_ALTERNATIVES:
                    raise ValueError(f"its {{a,b}} groups make more than {MAX_ALTERNATIVES} patterns")
    return out


def compile_glob(glob: str) -> Glob | str:
    """The `glob` argument, gitignore-style with ripgrep's {a,b} alternatives, as a Glob over
    paths relative to the searched directory, or the problem with it (a str)."""
    text = glob.strip()
    if not text:
        return "glob is empty; leave it out to search every file"
    if "\n" in text or "\x00" in text:
        return "glob must be one line"
    if text.startswith("!"):
        return "glob cannot be negated (!): give the files to search, e.g. *.py or src/**/*.ts"
    try:
        alternatives = _alternatives(text)
    except ValueError as exc:
        return f"glob {text!r}: {exc}"
    patterns = []
    alternatives = [alt for alt in alternatives if alt]  # ("{,a}": an empty name matches nothing)
    if not alternatives:
        return f"glob {text!r} matches nothing"
    for alt in alternatives:
        if alt.startswith(("#", "!")):
            alt = "\\" + alt  # a name, not a comment or a negation as in a .gitignore
        if alt.startswith("./"):
            while alt.startswith("./"):
                alt = alt[2:]
            alt = "/" + alt  # "./x" is x where the search is, as "/x" (not at any depth)
        if alt.endswith("/"):
            alt += "**"  # a directory: everything in it
        try:
            pattern = _compile_line(alt)
        except _MatchesNothing as exc:
            return f"glob {text!r}: {exc}"
        if pattern is None:  # (all blanks: " " in "{ ,a}")
            return f"glob {text!r}: it matches nothing"
        patterns.append(Pattern(b"", pattern.regex, False, False, pattern.anchored))
    return Glob(tuple(patterns), tuple(alternatives))


def _name_globs(glob: Glob | None, *, rg: bool) -> list[str]:
    """The glob's alternatives for a backend's own filter (ripgrep's --glob, or git's
    pathspecs), which keeps a superset of the files the exact test (Glob) keeps: only when
    every alternative is a file name (no /); for ripgrep, none with a ":" (a [:class:] it
    does not know) or a leading "!". [] when the backend cannot narrow (ours alone decides)."""
    names = glob.alternatives if glob is not None else ()
    if any("/" in name or (rg and (":" in name or name.startswith("!"))) for name in names):
        return []  # (a type's "name:include:..." would read a ":" as its own)
    return [_stray_braces_escaped(name) for name in names] if rg else list(names)


def _stray_braces_escaped(name: str) -> str:
    """An alternative (its groups expanded) with each "}" outside a class escaped: a literal
    here, which ripgrep would read as the end of a group that never began."""
    out = []
    i = 0
    while i < len(name):
        found = _bracket(name, i) if name[i] == "[" else None  # a class is copied as it is
        if name[i] == "\\":
            out.append(name[i:i + 2])
            i += 2
        elif found is not None:
            out.append(name[i:found[1]])
            i = found[1]
        else:
            out.append("\\}" if name[i] == "}" else name[i])
            i += 1
    return "".join(out)


class Ignores:
    """The .gitignore patterns in force in one directory: those of its parents first, its
    own last (the last pattern that matches decides, as git does)."""

    def __init__(self, patterns: tuple[Pattern, ...] = ()):
        self.patterns = patterns

    def with_file(self, data: bytes, base: bytes) -> Ignores:
        text = data.decode("utf-8", "surrogateescape")
        more = tuple(p for p in (compile_pattern(line, base) for line in text.splitlines()) if p is not None)
        return Ignores(self.patterns + more) if more else self

    def ignored(self, rel: bytes, is_dir: bool) -> bool:
        for p in reversed(self.patterns):
            if p.matches(rel, is_dir):
                return not p.negate
        return False


# -- the safe environment for rg and git ----------------------------------------------------


def child_env(environ=None) -> dict[str, str]:
    """The environment of rg and git: the user's, without any GIT_* variable (a GIT_DIR would
    point git elsewhere) and without RIPGREP_CONFIG_PATH, with git configured from the
    environment (the "command" scope, read after every config file) so that neither a
    repository's config nor the user's can make it run a program or change what it prints."""
    from dashfloat.tools import repocheck

    base = {k: v for k, v in (os.environ if environ is None else environ).items()
            if not k.startswith("GIT_") and k != "RIPGREP_CONFIG_PATH"}
    pairs = [("safe.bareRepository", "explicit")]
    pairs += [(k, v) for k, v in repocheck.FIXED.items() if v is not None and k != "credential.helper"]
    pairs += [("grep.column", "false"), ("grep.fullName", "false"), ("grep.lineNumber", "true"),
              ("grep.fallbackToNoIndex", "false"), ("color.grep", "never"), ("submodule.recurse", "false"),
              ("core.quotePath", "false")]
    base.update(repocheck.config_env(pairs, {}))
    base.update({"GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat", "PAGER": "cat"})
    return base


# -- running rg and git ------------------------------------------------------------------------

_procs: set = set()  # the running rg / git processes (subprocess.Popen)
_procs_lock = threading.Lock()


def kill_all() -> None:
    """SIGKILL every running search program's group (quit, SIGHUP, SIGTERM)."""
    with _procs_lock:
        for proc in list(_procs):
            _kill_group(proc)


def _kill_group(proc: subprocess.Popen) -> None:
    import signal

    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the leader is not reaped yet: its group is ours
    except (ProcessLookupError, PermissionError):
        pass


def _cwd(fd: int) -> str:
    return f"/proc/self/fd/{fd}"


def _run(argv: list[str], s: _Search, env: dict[str, str]) -> Iterator[bytes]:
    """Run `argv` in the searched directory; yield its stdout as it comes. Sets s.rc and
    s.stderr; stops (and kills the group) when the search is over its time, cancelled, or
    the driver has enough."""
    import selectors
    import subprocess

    fchdir = None
    cwd: str | None = _cwd(s.dir_fd)
    if not os.path.isdir("/proc/self/fd"):
        cwd = None
        fd = s.dir_fd

        def fchdir() -> None:  # in the child, between fork and exec
            os.fchdir(fd)

    try:
        with _procs_lock:
            proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, start_new_session=True, close_fds=True,
                                    pass_fds=() if fchdir is None else (s.dir_fd,), preexec_fn=fchdir)
            _procs.add(proc)
    except OSError as exc:
        raise _Failed("search_failed", f"could not run {argv[0]}: {exc.strerror or exc}") from None
    err = bytearray()
    try:
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ, "out")
            sel.register(proc.stderr, selectors.EVENT_READ, "err")
            open_pipes = 2
            while open_pipes:
                if s.over():
                    return
                for key, _ in sel.select(0.1):
                    chunk = os.read(key.fileobj.fileno(), 65536)
                    if not chunk:
                        sel.unregister(key.fileobj)
                        open_pipes -= 1
                    elif key.data == "err":
                        if len(err) < STDERR_MAX:
                            err += chunk[: STDERR_MAX - len(err)]
                    else:
                        yield chunk
                        if s.stopped:
                            return
        s.rc = proc.wait(max(0.1, s.deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        s.timed_out = True
    finally:
        if proc.poll() is None:
            _kill_group(proc)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:  # pragma: no cover - stuck in the kernel
            log.error("search: %s did not die after SIGKILL", argv[0])
        with _procs_lock:
            _procs.discard(proc)
        for f in (proc.stdout, proc.stderr):
            if f is not None:
                f.close()
        s.stderr = bytes(err)


def _records(chunks: Iterator[bytes], sep: bytes) -> Iterator[Hit]:
    """Parse `path NUL line SEP text LF` records (rg: SEP ":", git: SEP NUL) as they stream;
    a path may hold a newline, a text never does. Keeps at most LINE_KEEP bytes of a text."""
    buf = b""
    skipping: Hit | None = None  # a long line's hit, its text kept, the rest being skipped
    for chunk in chunks:
        buf += chunk
        while True:
            if skipping is not None:
                end = buf.find(b"\n")
                if end < 0:
                    buf = b""
                    break
                buf = buf[end + 1 :]
                yield skipping
                skipping = None
                continue
            nul = buf.find(b"\0")
            if nul < 0:
                if len(buf) > pathpolicy.PATH_MAX * 4:
                    raise _Failed("search_failed", "the search program wrote output that is not in its format")
                break
            num_end = buf.find(sep, nul + 1)
            if num_end < 0:
                break
            end = buf.find(b"\n", num_end + 1)
            if end < 0 and len(buf) - (num_end + 1) <= LINE_KEEP:
                break  # (a text of LINE_KEEP bytes so far may still end with the next byte)
            try:
                line = int(buf[nul + 1 : num_end])
            except ValueError:
                raise _Failed("search_failed", "the search program wrote output that is not in its format") from None
            path = _strip_dot(buf[:nul])
            if end < 0:  # longer than LINE_KEEP: keep its head, skip to its end
                skipping = Hit(path, line, buf[num_end + 1 : num_end + 1 + LINE_KEEP], True)
                buf = b""
                break
            text = buf[num_end + 1 : end]
            yield Hit(path, line, text[:LINE_KEEP], len(text) > LINE_KEEP)
            buf = buf[end + 1 :]
    if skipping is not None:
        yield skipping


def _count_records(chunks: Iterator[bytes]) -> Iterator[tuple[bytes, int]]:
    """Parse `path NUL count LF` records (rg --count, git grep -c)."""
    buf = b""
    for chunk in chunks:
        buf += chunk
        while True:
            nul = buf.find(b"\0")
            if nul < 0:
                break
            end = buf.find(b"\n", nul + 1)
            if end < 0:
                break
            try:
                count = int(buf[nul + 1 : end])
            except ValueError:
                raise _Failed("search_failed", "the search program wrote output that is not in its format") from None
            yield _strip_dot(buf[:nul]), count
            buf = buf[end + 1 :]


def _strip_dot(path: bytes) -> bytes:
    return path[2:] if path.startswith(b"./") else path


def _rg_argv(s: _Search, rg: str, count: bool) -> list[str]:
    argv = [rg, "--no-config", "--null", "--with-filename", "--color", "never", "--hidden", "--no-require-git"]
    # lines in path order (one thread); counts in any order (all threads), sorted here
    argv += ["--count"] if count else ["--line-number", "--no-heading", "--sort", "path"]
    for name in sorted(SKIP_DIRS):
        argv += ["--glob", f"!{name.decode()}/"]
    names = _name_globs(s.glob, rg=True)  # narrows rg's work (the exact test is ours)
    for name in names:  # a file type, not --glob: rg's globs override the .gitignore files
        argv += ["--type-add", f"dashfloat:{name}"]
    argv += ["--type", "dashfloat"] if names else []
    argv += ["--fixed-strings"] if not s.regex else []
    argv += ["--regexp", s.pattern, "--", "./" + (s.target.decode("utf-8", "surrogateescape") if s.target else "")]
    return argv


def _rg(s: _Search, count: bool) -> Iterator[bytes]:
    import shutil

    rg = shutil.which("rg")
    if rg is None:
        raise _Failed("search_failed", "ripgrep (rg) is not installed")
    yield from _run(_rg_argv(s, rg, count), s, child_env())
    _rg_stderr(s)


# what rg says of a directory (`./d: IO error for operation on ./d: Permission denied (os
# error 13)`) and of a file (`./f: Permission denied (os error 13)`) it cannot read
_RG_DIRECTORY = re.compile(r"^\./(.*): IO error for operation on \./\1: (.*)$")
_RG_FILE = re.compile(r"^\./(.*): (.*)$")


def _rg_stderr(s: _Search) -> None:
    """What ripgrep said on its error output. A file it could not read (a line naming a path,
    which starts with the "./" every path given to it has) is noted, and the hits stay.
    Anything else, with its exit status 2 (not stopped by the time limit), is what it
    refused (the pattern, a glob): a bad argument."""
    other = []
    for line in s.stderr.decode("utf-8", "replace").splitlines():
        line = line.removeprefix("rg: ")
        if line.startswith("./"):
            found = _RG_DIRECTORY.match(line) or _RG_FILE.match(line)
            s.cannot_read(*(found.groups() if found else (line[2:], "unreadable")))
        else:
            other.append(line)
    if len(s.stderr) >= STDERR_MAX:
        s.unreadable_more = True
    if s.rc != 2:  # (None when the search stopped it: over its time, cancelled, or enough)
        return
    message = _first_lines("\n".join(other).strip())
    if message.startswith("error parsing glob"):
        raise _Failed("bad_arguments", "ripgrep refused the glob: " + message)
    if message:
        raise _Failed("bad_arguments", "invalid regular expression (ripgrep's syntax): " + message)


def _rg_hits(s: _Search) -> Iterator[Hit]:
    return _records(_rg(s, False), b":")


def _rg_counts(s: _Search) -> Iterator[tuple[bytes, int]]:
    return _count_records(_rg(s, True))


def git_place(dir_fd: int, target: bytes | None = None) -> str:
    """What git says of the searched place (one run of git, with the safe environment):
    "git" (in a work tree: git grep can search it), "ignored" (in a work tree, but the place
    itself is ignored: git grep would find nothing there, the walker searches it as rg does)
    or "none" (not a work tree, or git is missing or failed)."""
    import shutil

    git = shutil.which("git")
    if git is None:
        return "none"
    what = target.decode("utf-8", "surrogateescape") if target else "."
    proc = _git_probe(git, ["check-ignore", "-q", "--", what], dir_fd)
    return "none" if proc is None else {0: "ignored", 1: "git"}.get(proc.returncode, "none")


def _git_probe(git: str, args: list[str], dir_fd: int):
    """One quick run of git's plumbing in the directory `dir_fd` (the safe environment, a
    session of its own, PROBE_TIMEOUT): the completed process, None if it could not run."""
    import subprocess

    try:
        return subprocess.run([git, *args], cwd=_cwd(dir_fd), env=child_env(), stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=PROBE_TIMEOUT, start_new_session=True)
    except (OSError, subprocess.SubprocessError):
        return None


def _git_argv(s: _Search, git: str, count: bool) -> list[str]:
    argv = [git, "grep", "--untracked", "--exclude-standard", "-I", "-z", "--no-color",
            "--no-recurse-submodules", "--no-textconv", "-c" if count else "-n"]
    argv += ["-P"] if s.regex else ["-F"]
    argv += ["-e", s.pattern, "--"]
    if s.target:
        argv.append(":(literal)" + s.target.decode("utf-8", "surrogateescape"))
    else:
        argv.append(".")
        for name in sorted(SKIP_DIRS):
            argv.append(f":(exclude,glob)**/{name.decode()}/**")
        for name in _name_globs(s.glob, rg=False):
            argv.append("*" + name)  # no magic: * also matches /: every such name, at any depth
    return argv


def _git(s: _Search, count: bool) -> Iterator[bytes]:
    import shutil

    git = shutil.which("git")
    if git is None:
        raise _Failed("search_failed", "git is not installed")
    yield from _run(_git_argv(s, git, count), s, child_env())
    _git_unreadable(s, git)
    if s.rc not in (0, 1, None) and not s.timed_out:
        message = _first_lines(s.stderr.decode("utf-8", "replace").strip())
        if s.regex and ("-e option" in message or "regex" in message.lower() or "pcre" in message.lower()):
            raise _Failed("bad_arguments", f"invalid regular expression (git grep -P, PCRE syntax): {message}")
        raise _Failed("search_failed", f"git grep failed: {message or f'exit status {s.rc}'}")


# what git grep says (and exits 0) of a file or directory it cannot read
_GIT_UNREADABLE = re.compile(r"^(?:error: failed to stat|warning: could not open directory) '(.*)': (.*)$")


def _git_unreadable(s: _Search, git: str) -> None:
    """Note what git grep could not read. It names those paths from the top of the work
    tree (its hits from the searched directory): only then is the searched one asked for."""
    found = [m for m in map(_GIT_UNREADABLE.match, s.stderr.decode("utf-8", "replace").splitlines()) if m]
    if len(s.stderr) >= STDERR_MAX:
        s.unreadable_more = True
    if not found:
        return
    done = _git_probe(git, ["rev-parse", "--show-prefix"], s.dir_fd)
    prefix = "" if done is None else done.stdout.decode("utf-8", "replace").strip()
    for m in found:
        s.cannot_read(m[1].removeprefix(prefix), m[2])


def _git_hits(s: _Search) -> Iterator[Hit]:
    return _records(_git(s, False), b"\0")


def _git_counts(s: _Search) -> Iterator[tuple[bytes, int]]:
    return _count_records(_git(s, True))


def _first_lines(text: str, n: int = 4) -> str:
    return " ".join(line.strip() for line in text.splitlines()[:n] if line.strip())


# -- the Python walker ------------------------------------------------------------------------


class _Matcher:
    """Finds the matching lines of a block of whole lines with one C-level search per
    matching line (never a Python loop over every line): a literal on the bytes, a regular
    expression (Python re) on the text."""

    def __init__(self, pattern: str, regex: bool):
        self.text = regex
        self.needle = None if regex else pattern.encode("utf-8", "surrogatepass")
        try:
            self.rx = (re.compile(pattern, re.MULTILINE) if regex
                       else re.compile(re.escape(pattern.encode("utf-8", "surrogatepass"))))
        except re.error as exc:
            raise _Failed("bad_arguments", f"invalid regular expression (Python re syntax): {exc}") from None

    def lines(self, block: bytes) -> Iterator[tuple[int, bytes]]:
        """(0-based line index in the block, the line's bytes) of each matching line."""
        data = block.decode("utf-8", "surrogateescape") if self.text else block
        nl = "\n" if self.text else b"\n"
        pos = index = counted_to = 0
        search = self.rx.search
        while True:
            m = search(data, pos)
            if m is None or (m.start() == len(data) and (not data or data[-1:] == nl)):
                return  # (a match after the last newline, or in nothing, is on no line: "^$")
            start = data.rfind(nl, 0, m.start()) + 1  # (a match that starts at a newline: its line)
            end = data.find(nl, m.start())
            if end < 0:
                end = len(data)
            index += data.count(nl, counted_to, start)
            counted_to = start
            line = data[start:end]
            yield index, (line.encode("utf-8", "surrogateescape") if self.text else line)
            if end >= len(data):
                return
            pos = end + 1

    def count(self, block: bytes) -> int:
        """How many lines of the block match: the second pass, one C-level test per line
        (map over the split lines: no Python frame per line)."""
        if not block:
            return 0  # no line ("^$" would match the nothing)
        if self.needle is not None:
            if self.needle not in block:
                return 0
            lines = (block[:-1] if block.endswith(b"\n") else block).split(b"\n")
            return len(lines) - list(map(bytes.find, lines, repeat(self.needle))).count(-1)
        data = block.decode("utf-8", "surrogateescape")
        if data.endswith("\n"):
            data = data[:-1]
        search, find = self.rx.search, data.find
        n = pos = 0
        while n < 64:  # sparse matches: one search per matching line
            m = search(data, pos)
            if m is None:
                return n
            n += 1
            end = find("\n", m.start())
            if end < 0:
                return n
            pos = end + 1
        lines = data[pos:].split("\n")  # dense: one search per line
        return n + len(lines) - list(map(search, lines)).count(None)


def _read_small(name: bytes, dir_fd: int, limit: int) -> bytes | None:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, limit)
    except OSError:
        return None
    finally:
        os.close(fd)


def _start_ignores(s: _Search) -> Ignores:
    """The .gitignore files between the root and the searched directory (its own comes when
    it is entered), and the root's .git/info/exclude."""
    ign = Ignores()
    beneath = s.beneath
    data = _read_beneath(beneath, b".git/info/exclude")
    if data:
        ign = ign.with_file(data, b"")
    parts = [p for p in s.root_rel.split(b"/") if p not in (b"", b".")]
    for i in range(len(parts)):
        base = b"/".join(parts[:i])
        data = _read_beneath(beneath, (base + b"/" if base else b"") + b".gitignore")
        if data:
            ign = ign.with_file(data, base)
    return ign


def _read_beneath(beneath, rel: bytes) -> bytes | None:
    try:
        fd = beneath.open(rel, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, GITIGNORE_MAX)
    except OSError:
        return None
    finally:
        os.close(fd)


def _walk_files(s: _Search) -> Iterator[tuple[int, bytes, bytes]]:
    """(directory fd, name, path from the searched directory) of every file to search: depth
    first, names in byte order (the order rg --sort path and git list them in). The fd is
    valid until the next item."""
    if s.target is not None:  # an explicit file: searched whatever the ignore rules say
        yield s.dir_fd, s.target, s.target
        return
    yield from _walk_dir(os.dup(s.dir_fd), b"", _start_ignores(s), s)


def _walk_dir(fd: int, rel: bytes, ignores: Ignores, s: _Search) -> Iterator[tuple[int, bytes, bytes]]:
    """The files under the directory `fd` (which this closes), `rel` from the searched one."""
    try:
        top = (s.root_rel + b"/" if s.root_rel not in (b"", b".") else b"") + rel  # from the root
        data = _read_small(b".gitignore", fd, GITIGNORE_MAX)
        if data:
            ignores = ignores.with_file(data, top.rstrip(b"/"))
        try:
            with os.scandir(fd) as it:
                entries = sorted((os.fsencode(e.name), e) for e in it)
        except OSError as exc:
            _unreadable(s, rel, exc)  # (b"" for the searched directory itself)
            return
        for name, entry in entries:
            if s.over():
                return
            try:
                mode = entry.stat(follow_symlinks=False).st_mode
            except OSError as exc:  # gone, or in a directory the user may list but not enter
                if exc.errno not in _GONE:
                    try:
                        is_dir = entry.is_dir(follow_symlinks=False)  # from the listing, no stat
                    except OSError:
                        is_dir = False
                    if not ignores.ignored(top + name, is_dir):
                        _unreadable(s, rel + name + (b"/" if is_dir else b""), exc)
                continue
            is_dir = stat.S_ISDIR(mode)
            if not is_dir and not stat.S_ISREG(mode):
                continue  # symbolic links are never followed; FIFOs, sockets, devices never opened
            if ignores.ignored(top + name, is_dir):
                continue
            if not is_dir:
                yield fd, name, rel + name
                continue
            if name in SKIP_DIRS:
                continue
            try:
                sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            except OSError as exc:
                _unreadable(s, rel + name + b"/", exc)
                continue
            if _has(VENV_MARKER, sub):
                os.close(sub)
                continue
            yield from _walk_dir(sub, rel + name + b"/", ignores, s)
    finally:
        os.close(fd)


def _has(name: bytes, dir_fd: int) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        return True
    except OSError:
        return False


_GONE = (errno.ENOENT, errno.ENOTDIR, errno.ELOOP)  # removed since listed, or now a link


def _unreadable(s: _Search, path: bytes, exc: OSError) -> None:
    """Note a file or directory (path ends with /) the walker could not read, unless it is gone
    (or became a link) since it was listed, or a glob leaves the file out anyway."""
    if exc.errno in _GONE:
        return
    if s.glob is not None and not path.endswith(b"/") and not s.glob.matches(path, False):
        return
    s.cannot_read(os.fsdecode(path), exc.strerror or str(exc))


def _blocks(name: bytes, path: bytes, dir_fd: int, s: _Search) -> Iterator[tuple[int, bytes]]:
    """(lines before it, a block of whole lines) of a text file, read READ_CHUNK at a time;
    nothing for a binary file (a NUL byte in its first SNIFF bytes) or one that cannot be
    opened. A line that ends (or the file ends) within the READ_CHUNK piece after the one it
    starts in is searched whole; a longer one is searched in its first 4 x LINE_KEEP bytes
    (and noted), the rest of it skipped."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError as exc:
        _unreadable(s, path, exc)
        return
    try:
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return
        except OSError as exc:
            _unreadable(s, path, exc)
            return
        carry = b""
        before = 0
        first = True
        skipping = False  # carry is the head of a line too long to keep: skip to its end
        while True:
            try:
                data = os.read(fd, READ_CHUNK)
            except OSError as exc:
                _unreadable(s, path, exc)
                return
            if first:
                first = False
                if b"\0" in data[:SNIFF]:
                    return
            if not data:
                if carry:
                    yield before, carry
                return
            if skipping:
                end = data.find(b"\n")
                if end < 0:
                    continue
                skipping, data = False, data[end:]
            block = carry + data
            cut = block.rfind(b"\n")
            if cut < 0:
                if len(block) > LINE_KEEP * 4:
                    skipping, block = True, block[: LINE_KEEP * 4]
                    s.long_lines.append((path, before + 1))
                carry = block
                continue
            whole, carry = block[: cut + 1], block[cut + 1 :]
            yield before, whole
            before += whole.count(b"\n")
            if s.over():
                return
    finally:
        os.close(fd)


def _walk_hits(s: _Search) -> Iterator[Hit]:
    matcher = _Matcher(s.pattern, s.regex)
    for dir_fd, name, path in _walk_files(s):
        for before, block in _blocks(name, path, dir_fd, s):
            for index, line in matcher.lines(block):
                yield Hit(path, before + index + 1, line[:LINE_KEEP], len(line) > LINE_KEEP)


def _walk_counts(s: _Search) -> Iterator[tuple[bytes, int]]:
    matcher = _Matcher(s.pattern, s.regex)
    for dir_fd, name, path in _walk_files(s):
        n = sum(matcher.count(block) for _before, block in _blocks(name, path, dir_fd, s))
        if n:
            yield path, n


# -- choosing and driving -----------------------------------------------------------------------


def choose(dir_fd: int, target: bytes | None = None) -> str:
    """The backend that runs here: rg if installed, else git grep in a git work tree (unless
    the place itself is ignored), else the Python walker."""
    import shutil

    if shutil.which("rg"):
        return "rg"
    return "git" if git_place(dir_fd, target) == "git" else "python"


# backend -> (the matching lines in path order, the count of matching lines per file)
_BACKENDS = {"rg": (_rg_hits, _rg_counts), "git": (_git_hits, _git_counts), "python": (_walk_hits, _walk_counts)}


class _Collector:
    """Turns hits into the bounded result: shown lines, per-file counts, honest totals."""

    def __init__(self, max_results: int, pattern: str, regex: bool):
        self.max_results = max_results
        self.lines: list[str] = []
        self.lines_bytes = 0
        self.files: dict[str, int] = {}  # shown path -> matching lines, in path order
        self.total = 0
        self.lines_cut = 0
        self.reasons: list[str] = []
        self.finder = _finder(pattern, regex)
        self.full = False  # no more lines are shown
        self.exact = True  # total and files count everything
        self.unlisted: set[str] = set()

    def reason(self, why: str) -> None:
        if why not in self.reasons:
            self.reasons.append(why)

    def add(self, shown: str, hit: Hit) -> bool:
        """Take one hit; False once it did not fit (there is more than is shown)."""
        self.total += 1
        self.files[shown] = self.files.get(shown, 0) + 1
        if len(self.lines) >= self.max_results:
            self.reason("max_results")
            self.full = True
            return False
        text, cut = self.window(hit)
        line = f"{shown}:{hit.line}: {text}"
        cost = len(json.dumps(line, ensure_ascii=False).encode()) - 1  # the quotes once, a \n between
        if self.lines_bytes + cost > OUTPUT_BYTES - FILES_BYTES - _RESERVED:
            self.reason("output_bytes")
            self.full = True
            return False
        self.lines.append(line)
        self.lines_bytes += cost
        self.lines_cut += cut
        return True

    def recount(self, counts: list[tuple[str, int]], complete: bool) -> None:
        """The per-file counts of the whole search (the lines stopped early): they replace the
        counts of the hits seen; when the count itself was cut short, neither is whole."""
        counted = dict(counts)
        if complete:
            self.files = dict(sorted(counted.items()))
            self.total = max(self.total, sum(counted.values()))  # (never fewer than were seen)
        else:  # (the caller marks the result inexact)
            for shown, n in counted.items():
                self.files[shown] = max(n, self.files.get(shown, 0))
            self.files = dict(sorted(self.files.items()))
            self.total = max(self.total, sum(self.files.values()))

    def listed(self) -> dict[str, int]:
        """The per-file counts that fit in FILES_BYTES (path order); the rest are counted."""
        out: dict[str, int] = {}
        used = 0
        for shown, n in self.files.items():
            used += len(json.dumps(shown, ensure_ascii=False).encode()) + len(str(n)) + 2
            if used > FILES_BYTES:
                self.unlisted = set(list(self.files)[len(out):])
                self.reason("files_listed")
                break
            out[shown] = n
        return out

    def window(self, hit: Hit) -> tuple[str, bool]:
        """The line's text, at most LINE_CHARS characters: around its first match when longer."""
        text = hit.text.decode("utf-8", "replace").rstrip("\r")
        if len(text) <= LINE_CHARS and not hit.long:
            return text, False
        at = self.finder(text)
        start = max(0, min(at - LINE_CHARS // 5, len(text) - LINE_CHARS))
        piece = text[start : start + LINE_CHARS]
        return ("…" if start else "") + piece + ("…" if start + LINE_CHARS < len(text) or hit.long else ""), True


def _finder(pattern: str, regex: bool) -> Callable[[str], int]:
    if not regex:
        return lambda text: max(0, text.find(pattern))
    try:
        rx = re.compile(pattern)
    except re.error:
        return lambda text: 0

    def find(text: str) -> int:
        m = rx.search(text)
        return m.start() if m else 0

    return find


def _check_args(args: dict) -> dict | None:
    pattern = args.get("pattern")
    if not isinstance(pattern, str) or pattern == "":
        return error("bad_arguments", "search_workspace: pattern is empty; give the text (or regex) to find")
    if "\n" in pattern or "\r" in pattern:
        return error("bad_arguments", "search_workspace: the pattern must be one line (the search is line by "
                                      "line); search for one line of it")
    if "\x00" in pattern:
        return error("bad_arguments", "search_workspace: the pattern contains a NUL byte")
    return None


def search_workspace(root: str, args: dict, *, cancel=None, readable: Callable[[str], bool] | None = None,
                     backend: str | None = None, timeout: float = TIMEOUT) -> dict:
    """Run one search_workspace call (validated args); a result dict, never an exception.
    `readable(path relative to the root)`: whether read_file may read it without asking;
    `backend`: force one of BACKENDS (tests, the benchmark)."""
    bad = _check_args(args)
    if bad is not None:
        return bad
    glob = args.get("glob")
    glob_pattern = None
    if glob is not None:
        glob_pattern = compile_glob(glob)
        if isinstance(glob_pattern, str):
            return error("bad_arguments", f"search_workspace: {glob_pattern}")
    res = pathpolicy.resolve(root, args.get("path", "."), must_exist=True)
    if isinstance(res, dict):
        return res
    try:
        beneath = safeopen.Root(res.root or res.real_root)
    except OSError as exc:
        return error("io_error", f"cannot open the working directory: {exc.strerror or exc}")
    with beneath:
        try:
            st = beneath.stat(res.rel)
        except OSError as exc:
            return _os_error(exc, res.rel)
        target = None
        try:
            if stat.S_ISDIR(st.st_mode):
                dir_fd = beneath.open_dir(res.rel, read=True)
                prefix = b"" if res.rel == "." else os.fsencode(res.rel) + b"/"
                searched_rel = os.fsencode(res.rel)
            elif stat.S_ISREG(st.st_mode):
                dir_fd, target = beneath.parent(res.rel)
                head = os.path.dirname(os.fsencode(res.rel))
                prefix = head + b"/" if head else b""
                searched_rel = head or b"."
            else:
                return pathpolicy.special_error(pathpolicy.shown(res.rel), st.st_mode) or error(
                    "not_a_file", f"not a file or directory: {pathpolicy.shown(res.rel)}")
        except OSError as exc:
            return _os_error(exc, res.rel)
        try:
            where = _Where(beneath, dir_fd, target, prefix, searched_rel, os.fsencode(res.rel), glob_pattern, readable)
            return _search(where, res, args, cancel, backend, timeout)
        finally:
            os.close(dir_fd)


def _os_error(exc: OSError, rel: str) -> dict:
    from dashfloat.tools import files

    return files._os_error(exc, "search", pathpolicy.shown(rel))


@dataclass
class _Where:
    """The searched place and what decides which of its files may be shown."""

    beneath: object  # safeopen.Root
    dir_fd: int
    target: bytes | None
    prefix: bytes  # the searched directory relative to the root, with a trailing / ("" for the root)
    searched_rel: bytes
    given: bytes  # the path as given (resolved), relative to the root
    glob: Glob | None
    readable: Callable[[str], bool] | None
    verdicts: dict = field(default_factory=dict)  # path -> why it is left out (None: shown)
    venvs: dict = field(default_factory=dict)
    skipped: dict = field(default_factory=lambda: {"rules": 0, "outside": 0})

    def shown(self, path: bytes, backend: str) -> str | None:
        """The path as the result shows it (relative to the root, written), or None when the
        file is left out."""
        why = self.verdicts.get(path, "")
        if why == "":
            why = self._judge(path, backend)
            self.verdicts[path] = why
            if why in self.skipped:
                self.skipped[why] += 1
        if why is not None:
            return None
        return names.written(self.given if self.target is not None else self.prefix + path)

    def mention(self, path: str, backend: str) -> str | None:
        """The name a note gives a file or directory (path from the searched directory, a
        directory's with a trailing /) the backend could not search; None when the result
        would not show it anyway: in a virtualenv the search skips, or hidden by a rule."""
        raw = os.fsencode(path)
        if self.target is None and backend != "python" and _in_venv(raw, self.dir_fd, self.venvs):
            return None
        rel = self.given if self.target is not None or not raw else self.prefix + raw
        return None if self._hidden(os.fsdecode(rel.rstrip(b"/"))) else names.written(rel)

    def _hidden(self, text: str) -> bool:
        """Whether a permission rule keeps `text` (relative to the root) from read_file
        without a question; a failing check hides it (fail closed)."""
        if self.readable is None:
            return False
        try:
            return not self.readable(text)
        except Exception:
            log.exception("search: the read rule check failed for %r", text)
            return True

    def _judge(self, path: bytes, backend: str) -> str | None:
        """Why a file with hits is left out ("glob", "venv", "outside", "rules"), or None."""
        if self.target is None and self.glob is not None and not self.glob.matches(path, False):
            return "glob"
        rel = self.prefix + (path if self.target is None else self.target)
        if backend != "python":  # the walker opened it beneath the root and skipped these itself
            if self.target is None and _in_venv(path, self.dir_fd, self.venvs):
                return "venv"
            try:
                st = self.beneath.stat(rel)
            except OSError:
                return "outside"  # gone, or a directory on its way now leads outside: not shown
            if not stat.S_ISREG(st.st_mode):
                return "outside"
        if self._hidden(os.fsdecode(self.given if self.target is not None else rel)):
            return "rules"
        return None


def _search(where: _Where, res, args: dict, cancel, backend: str | None, timeout: float) -> dict:
    pattern, regex = args["pattern"], bool(args.get("regex", False))
    max_results = int(args.get("max_results", MAX_RESULTS))
    deadline = time.monotonic() + timeout

    def new_search() -> _Search:
        return _Search(dir_fd=where.dir_fd, target=where.target, pattern=pattern, regex=regex,
                       glob=where.glob, deadline=deadline, cancel=cancel, root_rel=where.searched_rel,
                       beneath=where.beneath)

    name = backend or choose(where.dir_fd, where.target)
    if name not in _BACKENDS:
        return error("bad_arguments", f"unknown search backend {name!r}")
    if name == "git" and backend is not None and git_place(where.dir_fd, where.target) != "git":
        name = "python"  # (forced:) an ignored place, or no work tree: git grep would find nothing
    lines, counts = _BACKENDS[name]
    out = _Collector(max_results, pattern, regex)
    s = new_search()
    complete = True
    try:
        for hit in lines(s):
            shown = where.shown(hit.path, name)
            if shown is not None and not out.add(shown, hit):
                s.stopped = True  # enough lines: the totals come from a count of every file
                break
        if s.timed_out:
            complete = False
        elif out.full and not _cancelled(cancel):
            c = new_search()
            found = []
            for path, n in counts(c):
                shown = where.shown(path, name)
                if shown is not None:
                    found.append((shown, n))
            complete = not c.timed_out
            out.recount(found, complete)
            for path, why in c.unreadable.items():  # (a stopped lines pass did not list them all)
                s.cannot_read(path, why)
            s.unreadable_more = c.unreadable_more
            s.long_lines = c.long_lines
    except _Failed as exc:
        return error(exc.code, str(exc))
    except OSError as exc:
        return _os_error(exc, res.rel)
    if _cancelled(cancel):
        return cancelled(error="the search was stopped")
    if not complete:
        out.exact = False
        out.reason("time")
    return _result(out, res, name, where, timeout, max_results, _backend_notes(s, where, name, complete))


def _backend_notes(s: _Search, where: _Where, backend: str, complete: bool) -> tuple[dict, list[str]]:
    """The fields and notes for what the backend could not search: files it could not read
    (but those the result would not show anyway) and, for the walker, lines searched in part."""
    fields, notes = {}, []
    unreadable = [(shown, why) for path, why in s.unreadable.items()
                  if (shown := where.mention(path, backend)) is not None]
    unreadable.sort()  # (rg says them in the order its threads meet them)
    if unreadable:
        n = len(unreadable)
        at_least = "at least " if s.unreadable_more or not complete else ""
        fields["not_searched"] = n
        notes.append(f"{at_least}{n} file{'s' if n != 1 else ''} could not be read and {'were' if n != 1 else 'was'} "
                     f"not searched ({unreadable[0][0]}: {unreadable[0][1]})")
    long_lines = [f"{shown}:{line}" for path, line in s.long_lines
                  if (shown := where.mention(os.fsdecode(path), backend)) is not None]
    if long_lines:
        n, kib = len(long_lines), 4 * LINE_KEEP // 1024
        fields["lines_searched_in_part"] = n
        notes.append(f"{n} line{'s' if n != 1 else ''} longer than {kib} KiB {'were' if n != 1 else 'was'} "
                     f"searched in {'their' if n != 1 else 'its'} first {kib} KiB only ({long_lines[0]})")
    return fields, notes


def _cancelled(cancel) -> bool:
    return cancel is not None and bool(getattr(cancel, "cancelled", False))


def _in_venv(path: bytes, dir_fd: int, cache: dict[bytes, bool]) -> bool:
    """Whether a directory between the searched one and the file holds a pyvenv.cfg."""
    parts = path.split(b"/")[:-1]
    for i in range(1, len(parts) + 1):
        d = b"/".join(parts[:i])
        if d not in cache:
            cache[d] = _has(d + b"/" + VENV_MARKER, dir_fd)
        if cache[d]:
            return True
    return False


def _result(out: _Collector, res, backend: str, where: _Where, timeout: float, max_results: int,
            backend_notes: tuple[dict, list[str]]) -> dict:
    listed = out.listed()
    nfiles = len(out.files)
    fields: dict = {
        "path": names.written(os.fsencode(res.rel)),
        "backend": BACKEND_NAMES[backend],
        "matches": "\n".join(out.lines),
        "files": listed,
        "total_matches": out.total,
        "total_files": nfiles,
        "shown": len(out.lines),
        "truncated": bool(out.reasons),
    }
    notes = []
    at_least = "" if out.exact else "at least "
    if out.reasons:
        fields["truncated_by"] = list(out.reasons)
        if out.total > len(out.lines):
            notes.append(f"showing {len(out.lines)} of {at_least}{out.total:,} matching lines in {at_least}"
                         f"{nfiles:,} files; narrow the search with path or glob"
                         + (f", or raise max_results (up to {MAX_RESULTS_MAX})"
                            if "max_results" in out.reasons and max_results < MAX_RESULTS_MAX else ""))
        if out.unlisted:
            fields["files_not_listed"] = len(out.unlisted)
            notes.append(f"{len(out.unlisted):,} more files with matches are counted but not listed")
    if out.lines_cut:
        fields["lines_cut"] = out.lines_cut
        notes.append(f"{out.lines_cut} long line{'s are' if out.lines_cut != 1 else ' is'} cut to {LINE_CHARS} "
                     "characters around the match (read_file shows it whole)")
    if not out.exact:
        fields["complete"] = False
        notes.append(f"the search stopped after {timeout:g} s: the counts are those found by then")
    if where.skipped["rules"]:
        fields["skipped_by_rules"] = where.skipped["rules"]
        notes.append(f"{where.skipped['rules']} files with matches are left out: a permission rule makes "
                     "read_file ask or deny them")
    if where.skipped["outside"]:
        fields["skipped_outside"] = where.skipped["outside"]
        notes.append(f"{where.skipped['outside']} files with matches are left out: they changed during the "
                     "search, or now lead outside the working directory")
    fields.update(backend_notes[0])
    notes += backend_notes[1]
    if notes:
        fields["note"] = "; ".join(notes)
    result = ok(**fields)
    if any(names.is_written(p) for p in listed) or names.is_written(fields["path"]):
        result["names_escaped"] = names.NOTE
    return result


def shown_count(result: dict) -> str:
    """`12 matching lines in 3 files` for the result row."""
    total, nfiles = result.get("total_matches", 0), result.get("total_files", 0)
    if not total:
        return "no matches"
    return (f"{total:,} matching line{'s' if total != 1 else ''} in {nfiles:,} file{'s' if nfiles != 1 else ''}"
            + (f", {result.get('shown', 0)} shown" if result.get("truncated") else ""))


__all__ = ["search_workspace", "kill_all", "choose", "compile_glob", "compile_pattern", "Ignores", "child_env",
           "BACKENDS", "MAX_RESULTS", "MAX_RESULTS_MAX", "LINE_CHARS", "OUTPUT_BYTES", "TIMEOUT"]
