"""Confinement under a race (issue 14 §1): a directory inside the root is swapped back and forth
with a symbolic link to an outside directory, as fast as another process can, while the real
tool functions read, list, write, edit and run commands through it.

Nothing outside may ever be read (the outside files hold a unique secret, also in a file name:
it must never appear in a result or a preview), created or changed (the outside directory is
snapshot: names, contents, mtimes, its own mtime). Individual calls may fail, each with a
clear error. On the code before safeopen the outside leaked within a few dozen calls.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

import pytest

from dashfloat.tools import pathpolicy, runner, safeopen

READS = 300
WRITES = 300  # write_file and edit_file, alternating
COMMANDS = 40  # execute_command in the swapped directory (each starts a process: fewer)

# The swapper: exchange <root>/d (a directory) and <root>/alt (a link to the outside) with one
# renameat2(RENAME_EXCHANGE) each time, so "d" is always one or the other; where the kernel or
# libc has no renameat2, three renames (then "d" is briefly missing).
SWAPPER = r"""
import ctypes, os, sys, time
d, alt, spare = sys.argv[1:4]
libc = ctypes.CDLL(None, use_errno=True)
exchange = getattr(libc, "renameat2", None)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
def swap():
    if exchange is not None and exchange(AT_FDCWD, d.encode(), AT_FDCWD, alt.encode(), RENAME_EXCHANGE) == 0:
        return
    os.rename(d, spare); os.rename(alt, d); os.rename(spare, alt)
swap(); swap()
sys.stdout.write("ready\n"); sys.stdout.flush()
n = 0
while True:
    swap()
    n += 1
    if n % 1000 == 0:
        time.sleep(0.001)  # now and then a quiet millisecond: some calls get through whole
"""

# The clear errors a call may end with while its directory is being swapped.
ALLOWED_FAILURES = {"path_escape", "path_changed", "not_found", "changed_since_preview"}


def snapshot(directory) -> dict:
    """Everything observable about the outside directory."""
    out = {".": os.stat(directory).st_mtime_ns}
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        st = os.lstat(path)
        with open(path, "rb") as f:
            out[name] = (st.st_mode, st.st_size, st.st_mtime_ns, st.st_nlink, f.read())
    return out


@pytest.fixture(params=["openat2", "walk"])
def mode(request, monkeypatch):
    """Both ways safeopen opens: the kernel's openat2, and the descriptor walk."""
    if request.param == "walk":
        monkeypatch.setattr(safeopen, "_openat2_state", False)
    elif not safeopen.have_openat2(os.open("/", os.O_RDONLY)):
        pytest.skip("this kernel has no usable openat2")
    return request.param


@pytest.fixture
def swapping(tmp_path):
    """(root, outside, secret): <root>/d swaps with a link to <outside> until the test ends."""
    secret = f"SECRET-{uuid.uuid4().hex}"
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "d").mkdir(parents=True)
    outside.mkdir()
    (root / "d" / "f.txt").write_text("inside\n")
    (root / "d" / "e.txt").write_text("inside\n")
    (outside / "f.txt").write_text(f"{secret}\n")
    (outside / "e.txt").write_text(f"{secret} inside\n")  # an edit of it would find its block
    (outside / f"name-{secret}.txt").write_text("x\n")  # a listing would show the secret
    os.symlink(outside, root / "alt")
    proc = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, str(root / "d"), str(root / "alt"), str(root / "spare")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "ready\n", proc.stderr.read()
        yield root, outside, secret
    finally:
        proc.kill()
        proc.wait()


def test_a_directory_swapped_with_an_outside_link_never_lets_the_outside_through(swapping, mode):
    root, outside, secret = swapping
    before = snapshot(outside)
    outcomes: dict[str, dict[str, int]] = {}

    def check(kind: str, i: int, path: str, result: dict, shown: object = None) -> None:
        text = json.dumps([result, shown], default=repr)
        assert secret not in text, f"{kind} #{i} read outside the root: {text[:400]}"
        after = snapshot(outside)
        assert after == before, f"{kind} #{i} created or changed something outside: {after.keys()}"
        code = "ok" if result.get("ok") else result.get("code")
        outcomes.setdefault(kind, {}).setdefault(code, 0)
        outcomes[kind][code] += 1
        if not result.get("ok"):
            assert code in ALLOWED_FAILURES, f"{kind} #{i}: unexpected failure {result}"
            assert path in result["error"], f"{kind} #{i}: the error does not name {path}: {result}"

    def mutate(kind: str, i: int, args: dict) -> None:
        path = args.get("path", args.get("cwd"))
        prepared = runner.prepare(kind, args, str(root))
        if isinstance(prepared, dict):
            check(kind, i, path, prepared)
            return
        result = runner.execute(kind, args, str(root), prepared)
        check(kind, i, path, result, (prepared.preview, prepared.full))

    for i in range(max(READS, WRITES)):
        if i < READS:
            check("read_file", i, "d/f.txt",
                  runner.execute("read_file", {"path": "d/f.txt"}, str(root), None))
            if i % 10 == 0:
                check("list_directory", i, "d",
                      runner.execute("list_directory", {"path": "d"}, str(root), None))
        if i < WRITES:
            if i % 2:
                mutate("write_file", i, {"path": f"d/new-{i}.txt", "content": f"written {i}\n"})
            else:
                mutate("edit_file", i, {"path": "d/e.txt", "search_block": "inside",
                                        "replace_block": "inside!"})
        if i < COMMANDS:
            mutate("execute_command", i, {"command": "cat f.txt e.txt; ls", "cwd": "d"})

    # the race was really run: through the directory some reads and some writes worked, and
    # some of each were refused
    for kinds in (("read_file",), ("write_file", "edit_file")):
        worked = sum(outcomes[k].get("ok", 0) for k in kinds)
        refused = sum(n for k in kinds for code, n in outcomes[k].items() if code != "ok")
        assert worked > 0 and refused > 0, outcomes
    assert snapshot(outside) == before


# -- the same, deterministic: the swap lands right after the path policy's check ---------------


@pytest.fixture
def swap_after_check(tmp_path, monkeypatch):
    """swap_after_check(n): the n-th call of pathpolicy.resolve from now on returns its (inside)
    answer and then swaps <root>/d for a link to <outside>, exactly where an open by name would
    follow it. Returns (root, outside, secret)."""
    secret = f"SECRET-{uuid.uuid4().hex}"
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "d").mkdir(parents=True)
    outside.mkdir()
    for name in ("f.txt", "e.txt"):
        (root / "d" / name).write_text("inside\n")
        (outside / name).write_text(f"{secret} inside\n")
    (outside / f"name-{secret}").write_text("x\n")  # a listing would show the secret
    real_resolve = pathpolicy.resolve

    def arm(n: int):
        calls = []

        def resolve(*a, **kw):
            got = real_resolve(*a, **kw)
            calls.append(a)
            if len(calls) == n:
                os.rename(root / "d", tmp_path / "d-moved")
                os.symlink(outside, root / "d")
            return got

        monkeypatch.setattr(pathpolicy, "resolve", resolve)
        return root, outside, secret

    return arm


@pytest.mark.parametrize("kind, args, nth", [
    ("read_file", {"path": "d/f.txt"}, 1),
    ("list_directory", {"path": "d"}, 1),
    ("edit_file", {"path": "d/e.txt", "search_block": "inside", "replace_block": "in"}, 1),
    ("write_file", {"path": "d/sub/new.txt", "content": "x"}, 2),  # the 2nd: the re-check at apply
    ("execute_command", {"command": "cat f.txt; ls; touch made-here", "cwd": "d"}, 1),
])
def test_a_swap_right_after_the_check_is_refused_by_every_tool(swap_after_check, mode, kind, args, nth):
    root, outside, secret = swap_after_check(nth)
    before = snapshot(outside)
    if kind in runner.READ_ONLY:
        result, shown = runner.execute(kind, args, str(root), None), None
    else:
        prepared = runner.prepare(kind, args, str(root))
        if isinstance(prepared, dict):
            result, shown = prepared, None
        else:
            result = runner.execute(kind, args, str(root), prepared)
            shown = (prepared.preview, prepared.full)
    text = json.dumps([result, shown], default=repr)
    assert secret not in text, f"{kind} read outside the root: {text[:300]}"
    assert snapshot(outside) == before, f"{kind} created or changed something outside"
    assert result["ok"] is False and result["code"] == "path_escape", result
    assert "symbolic link leads outside: d" in result["error"], result
