"""Which files a command changed: `git status --porcelain` before and after it runs.

/undo covers only the files DashFloat's own tools wrote; a command can change any file. So
when the working directory is in a git work tree, the agent takes a `snapshot` before an
approved command runs and another after, and the row of the call says which files differ
(`report`), and that /undo does not cover them. A file that was already modified before and
is modified again shows up too: each listed file's size, mtime and inode are compared as well.

git runs here without a question, so it runs the way tools/repocheck.py runs git: with the
repository's program-running settings neutralised (its environment), and not at all when the
repository's config names programs that cannot be neutralised (a clean filter that `git
status` would run): then the report says so. Bounded: TIMEOUT seconds for all the git runs
of one snapshot, MAX_OUTPUT bytes of status, MAX_STATS files compared by their metadata.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

TIMEOUT = 3.0  # seconds for every git run of one snapshot together (the check included)
MAX_OUTPUT = 4 * 1024 * 1024
MAX_STATS = 2000
MAX_NAMED = 8  # files named in a report; the rest are counted
NOT_COVERED = "/undo does not cover changes made by commands"


@dataclass(frozen=True)
class Snapshot:
    top: str  # the work tree's top directory
    root: str  # the real path of DashFloat's working directory (paths are shown relative to it)
    entries: dict  # path relative to top -> (XY status, (size, mtime_ns, ino) or None)
    sources: dict = field(default_factory=dict)  # a renamed or copied path -> where it came from


def work_tree_top(root: str) -> str | None:
    """The nearest directory at or above `root` (as spelled: the caller resolves links if it
    wants the real one) that has a `.git`, directory or file (no git run), or None."""
    path = os.path.abspath(root)
    while True:
        if os.path.lexists(os.path.join(path, ".git")):
            return path
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent


def _env(environ: Mapping[str, str], changes: Mapping[str, str | None]) -> dict[str, str]:
    from dashfloat.tools import exec as _exec

    env = {**environ, **_exec.ENV_OVERRIDES}
    for key, value in changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    env.update({"GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0"})
    return env


def snapshot(root: str, *, environ: Mapping[str, str] | None = None, timeout: float = TIMEOUT) -> Snapshot | str | None:
    """The status of the work tree under `root`: a Snapshot; None when `root` is not in a
    work tree (nothing to report); a str saying why it could not be read."""
    if work_tree_top(os.path.realpath(root)) is None:
        return None
    import shutil  # here, like repocheck: the system prompt needs work_tree_top at start

    from dashfloat.tools import repocheck

    environ = dict(os.environ if environ is None else environ)
    started = time.monotonic()
    git = shutil.which("git", path=environ.get("PATH"))
    if git is None:
        return None
    verdict = repocheck.check("git status", root, root, environ=environ, timeout=timeout)
    if verdict.reasons:
        return "not read: " + repocheck.describe(verdict.reasons)
    env = _env(environ, verdict.env)
    left = timeout - (time.monotonic() - started)
    probe = repocheck._Probe(git, env, max(0.1, left))
    try:
        status, out, err = probe.run(["rev-parse", "--show-toplevel"], root, env=env)
        if status != 0:
            return None  # not a work tree after all (a bare repository, a .git of another kind)
        top = os.fsdecode(out.strip().split(b"\n")[0])
        status, out, err = probe.run(["status", "--porcelain=v1", "-z", "--untracked-files=normal",
                                      "--ignore-submodules=dirty", "--", "."], root, env=env, limit=MAX_OUTPUT)
    except repocheck._Unreadable as exc:
        return f"not read: {exc}"
    if status != 0:
        return f"not read: git status failed: {err or f'exit status {status}'}"
    sources: dict = {}
    return Snapshot(top=top, root=os.path.realpath(root), entries=_entries(out, top, sources), sources=sources)


def _entries(out: bytes, top: str, sources: dict | None = None) -> dict:
    """The records of `git status --porcelain=v1 -z` (`XY path`; a rename's or copy's source
    in the next field, put in `sources`), each with its file's metadata."""
    fields = out.split(b"\0")
    entries: dict = {}
    i = 0
    while i < len(fields):
        rec = fields[i]
        i += 1
        if len(rec) < 4:
            continue
        xy, path = rec[:2].decode("ascii", "replace"), os.fsdecode(rec[3:])
        if xy[0] in "RC":  # a rename or copy: the source follows
            if sources is not None and i < len(fields):
                sources[path] = os.fsdecode(fields[i])
            i += 1
        entries[path] = xy
    out_entries = {}
    for n, (path, xy) in enumerate(entries.items()):
        meta = None
        if n < MAX_STATS:
            try:
                st = os.lstat(os.path.join(top, path))
                meta = (st.st_size, st.st_mtime_ns, st.st_ino)
            except OSError:
                meta = None
        out_entries[path] = (xy, meta)
    return out_entries


_MOVED = ("renamed", "copied")


def changed(before: Snapshot, after: Snapshot) -> list[tuple[str, str]]:
    """(path relative to the work tree's top, what happened) for each file that differs."""
    out = []
    for path in sorted(set(before.entries) | set(after.entries)):
        b, a = before.entries.get(path), after.entries.get(path)
        if a is None:
            out.append((path, "now clean" if b[0] != "??" else "removed"))
        elif b is None:
            xy = a[0]
            what = "new" if xy == "??" else "deleted" if "D" in xy else "modified"
            if xy[0] in "RC":  # git mv: the source is gone from the status (report names it)
                what = "renamed" if xy[0] == "R" else "copied"
            out.append((path, what))
        elif a != b:
            out.append((path, "deleted" if "D" in a[0] else "modified"))
    return out


def shown_changes(before: Snapshot | str | None, after: Snapshot | str | None) -> list[tuple[str, str]]:
    """(path, what happened) for each file the command changed, the path relative to the
    working directory when it is beneath it (else absolute); [] when unknown or none."""
    if not isinstance(before, Snapshot) or not isinstance(after, Snapshot):
        return []
    return [(_shown(before, path), what) for path, what in changed(before, after)]


def _shown(shot: Snapshot, path: str) -> str:
    """`path` (relative to the work tree's top; a directory git collapsed ends in "/") as the
    user reads it: relative to the working directory when beneath it, else absolute; the
    working directory itself, new as a whole, is "./"."""
    full = os.path.join(shot.top, path)
    if not full.startswith(shot.root + os.sep):
        return full
    shown = os.path.relpath(full, shot.root)
    return shown + "/" if path.endswith("/") else shown


def report(before: Snapshot | str | None, after: Snapshot | str | None) -> str | None:
    """The note for the call's row; None when there is nothing to say (no work tree, no change)."""
    if before is None or after is None:
        return None
    if isinstance(before, str) or isinstance(after, str):
        why = before if isinstance(before, str) else after
        return f"git status {why}: which files the command changed is unknown ({NOT_COVERED})"
    diff = changed(before, after)
    if not diff:
        return None
    names = [f"{_shown(before, path)} ({what}"
             f"{f' from {_shown(after, after.sources[path])}' if what in _MOVED and path in after.sources else ''})"
             for path, what in diff[:MAX_NAMED]]
    more = f" and {len(diff) - MAX_NAMED} more" if len(diff) > MAX_NAMED else ""
    count = f"{len(diff)} file{'s' if len(diff) != 1 else ''}"
    return f"git status: the command changed {count}: {', '.join(names)}{more}. {NOT_COVERED}."
