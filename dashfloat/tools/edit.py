"""edit_file's search-block protocol, and previewable plans for edits and writes.

ADR 0007 §3: ``locate`` counts exact byte matches of the search block; zero matches → "search
block not found"; two or more → an error naming the count; an empty search block and a search
block equal to the replace block are errors. Only a unique match mutates. Overlapping matches
count (``xx\nxx\n`` occurs twice in ``xx\nxx\nxx\n``): ``bytes.count`` would say once and the
edit would land at an arbitrary one of two places.

A mutation is planned first (``plan_edit`` / ``plan_write``): the plan holds the exact bytes that
will land (``new``) and the bytes they replace (``old``). The preview is built from the plan, and
``apply_edit`` / ``apply_write`` write exactly ``plan.new`` after checking that the file still
holds ``plan.old`` (and still resolves to the same place); otherwise nothing is written and the
result is ``changed_since_preview``. What the user approved is byte-identical to what lands.
Reads, the check and the write all go through one descriptor of the root (``safeopen``), the
check and the write through the same directory descriptor. A file with several hard links
(``links`` > 1) is replaced under this name only; the preview and the result say so.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from dashfloat.tools import files, names, pathpolicy
from dashfloat.tools.files import EDIT_MAX_BYTES
from dashfloat.tools.pathpolicy import shown
from dashfloat.tools.results import error, ok

# Counting stops here: past it the exact number helps no one, and a periodic block in a
# periodic 8 MiB file could otherwise cost seconds of CPU.
LOCATE_CAP = 1000


def occurrences(data: bytes, search: bytes, cap: int = LOCATE_CAP) -> list[int]:
    """Start offsets of every exact occurrence of ``search`` in ``data``, overlapping ones
    included, at most ``cap`` of them. (An empty ``search`` matches at every offset.)"""
    found: list[int] = []
    at = data.find(search)
    while at != -1 and len(found) < cap:
        found.append(at)
        at = data.find(search, at + 1)
    return found


def locate(data: bytes, search: bytes) -> int:
    """The number of exact occurrences of ``search`` in ``data``, overlapping ones included,
    up to LOCATE_CAP. Only 1 lets an edit land; plan_edit refuses an empty ``search`` first."""
    return len(occurrences(data, search))


def _ambiguous(rel: str, search: bytes, found: list[int]) -> dict:
    count = len(found)
    overlapping = any(b - a < len(search) for a, b in zip(found, found[1:], strict=False))
    times = f"at least {count}" if count >= LOCATE_CAP else str(count)
    return error(
        "search_ambiguous",
        f"search block found {times} times in {rel}"
        + (" (overlapping)" if overlapping else "")
        + "; it must match exactly once (include more surrounding lines)",
        matches=count,
        overlapping=overlapping,
    )


@dataclass(frozen=True)
class EditPlan:
    """An approved-to-be edit: ``new`` is exactly what apply_edit writes.

    path: the real file path written; rel: display path (escaped, for results and previews);
    old/new: the whole file's bytes before/after; mtime_ns, size, mode: of the file at planning;
    line: 1-based line where the match starts; root/abs: to re-resolve at apply time.
    """

    path: str
    rel: str
    old: bytes
    new: bytes
    mtime_ns: int
    size: int
    mode: int
    line: int = 1
    root: str = ""
    abs: str = ""
    links: int = 1


@dataclass(frozen=True)
class WritePlan:
    """A planned write_file: ``new`` is exactly what apply_write writes.

    old: the current bytes, or None when the file does not exist yet (``created`` True);
    old_binary: the current content looks binary (a preview should not dump it);
    mode/mtime_ns/size: of the existing file, None for a new one.
    """

    path: str
    rel: str
    old: bytes | None
    new: bytes
    created: bool
    mode: int | None = None
    mtime_ns: int | None = None
    size: int | None = None
    old_binary: bool = False
    root: str = ""
    abs: str = ""
    links: int = 1  # hard links of the existing file: above 1, the write breaks the link


def _read_existing(res: pathpolicy.Resolved, what: str) -> tuple[bytes, os.stat_result] | dict:
    """Stat (refusing above EDIT_MAX_BYTES before any open), then read a regular file's bytes."""
    rel = shown(res.rel)
    beneath = files.open_root(res)
    if isinstance(beneath, dict):
        return beneath
    with beneath:
        bad = pathpolicy.check_regular(res, beneath)
        if bad is not None:
            return bad
        try:
            st = beneath.stat(res.rel)
        except OSError as exc:
            return files._os_error(exc, "stat", rel)
        if st.st_size > EDIT_MAX_BYTES:
            return error(
                "too_large",
                f"{what} refuses files above {EDIT_MAX_BYTES} bytes: {rel} is {st.st_size} bytes",
                size=st.st_size,
            )
        fd = files.open_regular(beneath, res.rel)
    if isinstance(fd, dict):
        return fd
    try:
        data = files.read_bytes_bounded(fd, EDIT_MAX_BYTES + 1)
        st = os.fstat(fd)
    except OSError as exc:
        return files._os_error(exc, "read", rel)
    finally:
        os.close(fd)
    if len(data) > EDIT_MAX_BYTES:
        return error(
            "too_large",
            f"{what} refuses files above {EDIT_MAX_BYTES} bytes: {rel} grew past it",
            size=max(len(data), st.st_size),  # read stopped one byte past the limit
        )
    return data, st


def plan_edit(root: str | Path, path: str, search_block: str, replace_block: str) -> EditPlan | dict:
    """Plan replacing the unique occurrence of ``search_block`` by ``replace_block``.

    Errors: bad_arguments, empty_search, no_change, path_escape, not_found, not_a_file,
    special_file, too_large (by stat, before reading; with ``size``), binary, search_not_found,
    search_ambiguous (with ``matches`` and ``overlapping``), permission_denied, io_error.
    """
    for name, value in (("search_block", search_block), ("replace_block", replace_block)):
        if not isinstance(value, str):
            return error("bad_arguments", f"{name} must be a string")
    if search_block == "":
        return error("empty_search", "search_block is empty: give the exact text to replace")
    if search_block == replace_block:
        return error(
            "no_change", "search_block and replace_block are the same: the edit would change nothing"
        )
    search = files.encode_content(search_block, "search_block")
    if isinstance(search, dict):
        return search
    replace = files.encode_content(replace_block, "replace_block")
    if isinstance(replace, dict):
        return replace
    res = pathpolicy.resolve(root, path, must_exist=True)
    if isinstance(res, dict):
        return res
    got = _read_existing(res, "edit_file")
    if isinstance(got, dict):
        return got
    old, st = got
    rel = shown(res.rel)
    if files.is_binary(old[: files.BINARY_SAMPLE]):
        return error("binary", f"binary file, not edited: {rel} ({len(old)} bytes)", size=len(old))
    found = occurrences(old, search)  # the one count the preview and the write both obey
    if not found:
        return error(
            "search_not_found",
            f"search block not found in {rel} (it must match the file's text exactly, "
            "including whitespace and line endings)" + _replacement_hint(search_block, old),
        )
    if len(found) > 1:
        return _ambiguous(rel, search, found)
    at = found[0]
    new = old[:at] + replace + old[at + len(search) :]
    return EditPlan(
        path=res.real,
        rel=rel,
        old=old,
        new=new,
        mtime_ns=st.st_mtime_ns,
        size=len(old),
        mode=stat.S_IMODE(st.st_mode),
        line=old.count(b"\n", 0, at) + 1,
        root=pathpolicy.root_abs(root),
        abs=res.abs,
        links=st.st_nlink,
    )


def _replacement_hint(search_block: str, data: bytes) -> str:
    """Why a search block holding U+FFFD cannot match a file that is not UTF-8: read_file
    showed the file's undecodable bytes as U+FFFD, and those are not the bytes on disk."""
    if "\ufffd" not in search_block:
        return ""
    try:
        data.decode("utf-8")
        return ""
    except UnicodeDecodeError:
        return ("; the file is not valid UTF-8, and U+FFFD in the search block stands for bytes "
                "read_file could not decode: it matches none of them. Choose a search block "
                "without them")


def _changed(rel: str, why: str) -> dict:
    return error(
        "changed_since_preview",
        f"{rel} changed since the preview ({why}); nothing was written",
    )


def _recheck(plan: EditPlan | WritePlan) -> pathpolicy.Resolved | dict:
    """Re-resolve the plan's path; it must still resolve to the planned real path."""
    res = pathpolicy.resolve(plan.root, os.fsencode(plan.abs))  # our own path: bytes, no escapes
    if isinstance(res, dict):
        return res
    if res.real != plan.path:
        return _changed(plan.rel, "the path now leads somewhere else")
    return res


def _still_as_planned(rel: str, expected: bytes | None):
    """The check ``files.write_beneath`` runs in the directory descriptor it is about to write
    in: None when ``name`` there still holds exactly ``expected`` (or, for None, does not
    exist); else changed_since_preview (or the error that stopped the check)."""

    def check(dir_fd: int, name: bytes) -> dict | None:
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return None if expected is None else _changed(rel, "it was removed")
        except OSError as exc:
            return files._os_error(exc, "stat", rel)
        if expected is None:
            return _changed(rel, "it exists now")
        if not stat.S_ISREG(st.st_mode):
            return _changed(rel, "it is no longer a regular file")
        if st.st_size != len(expected):
            return _changed(rel, f"its size is now {st.st_size} bytes, was {len(expected)}")
        flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY
        try:
            fd = os.open(name, flags, dir_fd=dir_fd)
        except OSError as exc:
            return files._os_error(exc, "open", rel)
        try:
            now = files.read_bytes_bounded(fd, len(expected) + 1)
        except OSError as exc:
            return files._os_error(exc, "read", rel)
        finally:
            os.close(fd)
        if now != expected:
            return _changed(rel, "its content differs")
        return None

    return check


def apply_edit(plan: EditPlan) -> dict:
    """Write ``plan.new`` if the file still holds ``plan.old``.

    Result: ``{"ok": true, "path": rel, "bytes": len(new), "line": n}`` (with ``hard_links``
    and ``hard_links_note`` when the file had several names: only this one changed); errors:
    changed_since_preview (nothing written), path_escape, permission_denied, io_error.
    """
    res = _recheck(plan)
    if isinstance(res, dict):
        return res
    if not res.exists:
        return _changed(plan.rel, "it was removed")
    wrote = files.write_resolved(res, plan.new, check=_still_as_planned(plan.rel, plan.old),
                                 make_parents=False)
    if not wrote.get("ok"):
        return wrote
    result = ok(path=names.written(res.rel), bytes=len(plan.new), line=plan.line)
    for key in ("hard_links", "hard_links_note"):
        if key in wrote:
            result[key] = wrote[key]
    return files.mark_written_names(result, res.rel)


def plan_write(root: str | Path, path: str, content: str) -> WritePlan | dict:
    """Plan write_file: the path checked, the current bytes (or None), the bytes to land.

    Errors: bad_arguments, path_escape, not_found (a parent is a file), not_a_file (a
    directory), special_file, too_large (replacing a file above 8 MiB, by stat), permission_denied,
    io_error.
    """
    new = files.encode_content(content)
    if isinstance(new, dict):
        return new
    res = pathpolicy.resolve(root, path)
    if isinstance(res, dict):
        return res
    bad = files.check_write_target(res)
    if bad is not None:
        return bad
    rel = shown(res.rel)
    if not res.exists:
        return WritePlan(
            path=res.real,
            rel=rel,
            old=None,
            new=new,
            created=True,
            root=pathpolicy.root_abs(root),
            abs=res.abs,
        )
    got = _read_existing(res, "write_file")
    if isinstance(got, dict):
        return got
    old, st = got
    return WritePlan(
        path=res.real,
        rel=rel,
        old=old,
        new=new,
        created=False,
        mode=stat.S_IMODE(st.st_mode),
        mtime_ns=st.st_mtime_ns,
        size=len(old),
        old_binary=files.is_binary(old[: files.BINARY_SAMPLE]),
        root=pathpolicy.root_abs(root),
        abs=res.abs,
        links=st.st_nlink,
    )


def apply_write(plan: WritePlan) -> dict:
    """Write ``plan.new`` if the target is still as planned (absent, or holding ``plan.old``).

    Result: ``{"ok": true, "path": rel, "bytes": n, "created": bool}``; errors:
    changed_since_preview (nothing written), path_escape, not_a_directory, permission_denied,
    io_error.
    """
    res = _recheck(plan)
    if isinstance(res, dict):
        return res
    if plan.old is None and res.exists:
        return _changed(plan.rel, "it exists now")
    if plan.old is not None and not res.exists:
        return _changed(plan.rel, "it was removed")
    return files.write_resolved(res, plan.new, check=_still_as_planned(plan.rel, plan.old),
                                make_parents=plan.old is None)
