"""Tests for the mutation tool itself (tests/mutation): the mutants are the ones it claims, the
rest of the file is untouched, and the reviewed list parses. The mutation run itself is
`make mutation`, never part of `make test`."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.mutation import run_mutation
from tests.mutation.mutants import Mutant, mutants


def mutated(source: str) -> dict[str, str]:
    """desc@line -> the mutated line, for each mutant of `source`."""
    src = textwrap.dedent(source).encode()
    out = {}
    for m in mutants("m.py", src):
        lines = m.apply(src).decode().splitlines()
        out[f"{m.desc}@{m.line}"] = lines[m.line - 1].strip()
    return out


def test_each_kind_changes_only_its_node():
    found = mutated("""\
        def f(a, b, items):
            if a < b and b != 3:
                a += 1
            for x in items:
                if not x:
                    break
                continue
            return items[a:b]
        """)
    assert found["`<` -> `<=`@2"] == "if a <= b and b != 3:"
    assert found["`!=` -> `==`@2"] == "if a < b and b == 3:"
    assert found["`and` -> `or`@2"] == "if a < b or b != 3:"
    assert found["`3` -> `4`@2"] == "if a < b and b != 4:"
    assert found["`3` -> `2`@2"] == "if a < b and b != 2:"
    assert found["`3` -> `0`@2"] == "if a < b and b != 0:"
    assert found["`+=` -> `-=`@3"] == "a -= 1"
    assert found["`a += 1` -> `pass`@3"] == "pass"
    assert found["`not x` -> `x`@5"] == "if x:"
    assert found["`break` -> `continue`@6"] == "continue"
    assert found["`continue` -> `break`@7"] == "break"
    assert found["`return x` -> `return None`@8"] == "return None"
    src = textwrap.dedent("def f(items, a, b):\n    return items[a:b]\n").encode()
    shifted = {m.apply(src).decode().splitlines()[1].strip() for m in mutants("m.py", src) if m.kind == "slice"}
    assert shifted == {"return items[(a) + 1:b]", "return items[(a) - 1:b]",
                       "return items[a:(b) + 1]", "return items[a:(b) - 1]"}
    assert found["`c` -> `not (c)`@2"] == "if not (a < b and b != 3):"
    assert "`c` -> `not (c)`@5" not in found   # `not x` has its own mutant: `x`


def test_calls_raises_and_attribute_stores_are_deleted_and_conditions_negated():
    found = mutated("""\
        def g(self, ok):
            self.x = 1
            print(ok)
            if ok:
                raise ValueError("no")
            return True
        """)
    assert found["`self.x = 1` -> `pass`@2"] == "pass"
    assert found["`print(ok)` -> `pass`@3"] == "pass"
    assert found["`c` -> `not (c)`@4"] == "if not (ok):"
    assert found['`raise ValueError("no")` -> `pass`@5'] == "pass"
    assert found["`True` -> `False`@6"] == "return False"
    assert "`return x` -> `return None`@6" in found


def test_text_around_the_change_is_kept_and_comments_are_not_operators():
    src = textwrap.dedent("""\
        x = (1 +  # a comment with - and < in it
             2)
        """).encode()
    (plus,) = [m for m in mutants("m.py", src) if m.desc == "`+` -> `-`"]
    assert plus.apply(src) == src.replace(b"1 +", b"1 -")


def test_a_bitwise_swap_keeps_the_grouping_of_its_neighbours():
    src = b"flags = A | B | C | D\n"
    got = {m.apply(src).decode().strip() for m in mutants("m.py", src) if m.kind == "binop"}
    # `A | B | C & D` would be a different mutant: `&` binds tighter than `|`
    assert got == {"flags = ((A) & (B)) | C | D", "flags = ((A | B) & (C)) | D", "flags = ((A | B | C) & (D))"}


def test_docstrings_strings_annotations_and_type_checking_blocks_are_not_mutated():
    found = mutated('''\
        """Module doc: 1 < 2."""
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            import os
        class C:
            """Doc."""
            size: int
            def h(self, n: int = 5) -> list[int]:
                """Doc 7."""
                return f"{n + 1}"
        ''')
    assert set(found) == {"`5` -> `6`@8", "`5` -> `4`@8", "`5` -> `0`@8", "`return x` -> `return None`@10"}


def test_every_mutant_of_a_real_module_compiles_and_differs_and_has_a_unique_ident():
    path = run_mutation.ROOT / "dashfloat" / "tools" / "guard.py"
    source = path.read_bytes()
    found = mutants("dashfloat/tools/guard.py", source)
    assert len(found) > 20
    assert len({m.ident for m in found}) == len(found)
    for m in found:
        text = m.apply(source)
        assert text != source
        compile(text, "guard.py", "exec")
        assert m.line in m.lines


SCOPED = b"""\
LIMIT = 3


def first(x):
    return x + 1


class Box:
    def size(self, n):
        if n > LIMIT:
            return n * 2
        return n
"""


def test_a_mutant_keeps_its_scope_key_when_lines_move_and_loses_it_when_its_function_changes():
    before = {m.scope_key: m for m in mutants("m.py", SCOPED)}
    moved = SCOPED.replace(b"def first(x):\n", b"# a comment\n\n\ndef first(x):\n")
    after = {m.scope_key: m for m in mutants("m.py", moved)}
    assert set(before) == set(after)
    assert all(before[k].scope_hash == after[k].scope_hash for k in before)
    assert {before[k].ident for k in before} != {after[k].ident for k in after}  # lines moved
    edited = {m.scope_key: m for m in mutants("m.py", SCOPED.replace(b"return x + 1", b"return x + 2"))}
    first_keys = [k for k in before if k.startswith("first+")]
    size_keys = [k for k in before if k.startswith("Box.size+")]
    assert first_keys and size_keys and any(k.startswith("<top>LIMIT+") for k in before)
    assert all(edited[k].scope_hash == before[k].scope_hash for k in size_keys)
    assert all(k not in edited or edited[k].scope_hash != before[k].scope_hash for k in first_keys)


def test_a_review_of_a_line_outside_the_lines_asked_for_takes_no_mutant_inside_them():
    src = b"def first():\n    x = 0\n    return x\n\n\ndef second():\n    x = 0\n    return x\n"
    lines = src.decode().splitlines()
    found = mutants("m.py", src)
    (late,) = [m for m in found if m.line == 7 and m.desc == "`0` -> `1`"]
    review = run_mutation.Reviewed("m.py", 2, late.col, late.desc, "x = 0", "why", 1)
    inside, reviewed = run_mutation.in_span([review], "m.py", found, lines, "6-8")
    assert late in inside and all(m.line >= 6 for m in inside)
    assert reviewed == {}, "the entry is the first function's: the second's mutant is still tried"
    _all, reviewed = run_mutation.in_span([review], "m.py", found, lines, "1-4")
    assert list(reviewed.values()) == [review] and review.line_now == 2


def test_results_are_carried_over_to_an_edited_module_where_the_function_is_unchanged():
    old_src = "a" * 20
    tried = mutants("m.py", SCOPED)
    cached = {m.ident: {"status": "killed", "src": old_src, "scope_key": m.scope_key,
                        "scope_hash": m.scope_hash, "killer": f"t::{m.ident}"} for m in tried}
    new = SCOPED.replace(b"def first(x):\n    return x + 1\n",
                         b"def first(x):\n    y = x\n    return y - 1\n")
    found = mutants("m.py", new)
    carried = run_mutation.carry(cached, found, "b" * 20, prune=True)
    size = [m for m in found if m.scope_key.startswith(("Box.size+", "<top>"))]
    assert carried == len(size) > 0
    assert set(cached) == {m.ident for m in size}  # the rest: pruned (first() changed)
    for m in size:
        old = next(t for t in tried if t.scope_key == m.scope_key)
        assert cached[m.ident] == {"status": "killed", "src": "b" * 20, "scope_key": m.scope_key,
                                   "scope_hash": m.scope_hash, "killer": f"t::{old.ident}"}


def test_a_result_of_the_current_source_gets_its_scope_written_in():
    found = mutants("m.py", SCOPED)
    cached = {m.ident: {"status": "killed", "src": "c" * 20} for m in found}
    assert run_mutation.carry(cached, found, "c" * 20, prune=False) == 0
    assert all(cached[m.ident]["scope_key"] == m.scope_key and cached[m.ident]["scope_hash"] == m.scope_hash
               for m in found)


def test_every_module_of_llm_tools_and_the_agent_is_mutated():
    """The brief's scope is llm/, tools/ and the agent: a new module there joins the run."""
    root = run_mutation.ROOT
    wanted = {str(p.relative_to(root)) for part in ("llm", "tools")
              for p in (root / "dashfloat" / part).glob("*.py") if p.name != "__init__.py"}
    wanted |= {"dashfloat/agent.py", "dashfloat/conversation.py"}
    assert wanted - set(run_mutation.DEFAULT_MODULES) == set()


def test_the_reviewed_list_parses_and_names_existing_modules():
    for entry in run_mutation.load_equivalent():
        assert (run_mutation.ROOT / entry.module).is_file(), entry
        assert entry.reason and entry.desc.startswith(("`", "slice")), entry


@pytest.mark.parametrize("out, killer", [
    ("F\nFAILED tests/unit/test_x.py::test_a[p q] - AssertionError: x\n", "tests/unit/test_x.py::test_a[p q]"),
    ("ERROR tests/unit/test_y.py - ImportError\n", "tests/unit/test_y.py"),
    ("1 passed\n", None),
])
def test_the_failing_test_is_read_from_pytest_output(out, killer):
    assert run_mutation.killer_of(out) == killer


def test_the_confirming_files_run_the_modules_own_tests_first_then_the_quickest():
    cov = run_mutation.Coverage(
        seconds={"tests/test_agent.py::a": 30.0, "tests/unit/test_b.py::x": 2.0,
                 "tests/unit/test_b.py::y": 2.0, "tests/unit/test_c.py::z": 1.0,
                 "tests/unit/test_safeopen.py::s": 9.0},
        lines={})
    files = ["tests/test_agent.py", "tests/unit/test_b.py", "tests/unit/test_c.py",
             "tests/unit/test_safeopen.py"]
    got = run_mutation.quickest_first("dashfloat/tools/safeopen.py", files, cov)
    assert got == ["tests/unit/test_safeopen.py", "tests/unit/test_c.py", "tests/unit/test_b.py",
                   "tests/test_agent.py"]
    assert sorted(got) == sorted(files)  # the same files: only the order changes


@pytest.mark.parametrize("module, widget", [("dashfloat/ui/markdown.py", True), ("dashfloat/ui/app.py", True),
                                            ("dashfloat/agent.py", False), ("dashfloat/llm/sse.py", False)])
def test_only_the_uis_mutants_face_the_widget_tests(module, widget):
    """tests/widget runs an App on a fake terminal: the modules of dashfloat/ui/ face it,
    the others keep the tests (and so the results) they had."""
    m = Mutant(module=module, line=3, end_line=3, kind="const", desc="`1` -> `2`", start=0, end=1,
               replacement=b"2")
    cov = run_mutation.Coverage(seconds={"tests/widget/test_app_widgets.py::w": 0.5, "tests/unit/test_x.py::u": 0.1},
                                lines={module: {3: ["tests/widget/test_app_widgets.py::w", "tests/unit/test_x.py::u"]}})
    widget_test = ["tests/widget/test_app_widgets.py::w"] if widget else []
    assert cov.tests_for(m) == ["tests/unit/test_x.py::u", *widget_test]
    assert run_mutation.widget_scope(module) is widget
    files = run_mutation.fast_test_files(widget=widget)
    assert ("tests/widget/test_app_widgets.py" in files) is widget
    assert set(run_mutation.fast_test_files()) <= set(files)
    assert ("tests/widget/conftest.py" in run_mutation.helper_files(widget=widget)) is widget


class _TracingWorkspace:
    """Stands in for a Workspace in load_coverage: each traced test file has one test that
    runs line 1 of dashfloat/m.py; `asked` records the files each run was given."""

    def __init__(self, tmp, root, n):
        self.tmp, self.dir, self.asked = tmp / f"ws{n}", root, []
        self.tmp.mkdir()

    def pytest(self, files, timeout, options=(), extra_env=None):
        self.asked.append(sorted(files))
        tests = {f"{rel}::t": {"seconds": 0.1, "lines": {"dashfloat/m.py": [1]}} for rel in files}
        Path(extra_env["DASHFLOAT_MUTCOV_OUT"]).write_text(json.dumps({"tests": tests, "failed": []}))
        return "passed", 0, ""


def test_a_changed_test_file_is_traced_alone_and_a_changed_module_traces_them_all(tmp_path, monkeypatch):
    root = tmp_path / "project"
    (root / "dashfloat").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "dashfloat" / "m.py").write_text("x = 1\n")
    files = ["tests/test_a.py", "tests/test_b.py"]
    for rel in files:
        (root / rel).write_text("def test_t():\n    pass\n")
    monkeypatch.setattr(run_mutation, "ROOT", root)
    monkeypatch.setattr(run_mutation, "CACHE_DIR", root / ".cache")
    monkeypatch.setattr(run_mutation, "fast_test_files", lambda widget=False: list(files))
    monkeypatch.setattr(run_mutation, "helper_files", lambda widget=False: [])

    runs = []

    def load():
        run_mutation.file_hash.cache_clear()
        runs.append(tmp_path / f"run{len(runs)}")
        runs[-1].mkdir()
        spaces = [_TracingWorkspace(runs[-1], root, n) for n in range(2)]
        cov = run_mutation.load_coverage(spaces, lambda text: None)
        return sorted(rel for ws in spaces for run in ws.asked for rel in run), cov.files.get("dashfloat/m.py")

    assert load() == (files, set(files))
    assert load() == ([], set(files))  # nothing changed: nothing traced
    (root / "tests/test_b.py").write_text("def test_t():\n    assert True\n")
    assert load() == (["tests/test_b.py"], set(files))  # test_a's lines are kept
    files.remove("tests/test_a.py")
    assert load() == ([], {"tests/test_b.py"})  # a test file gone: its tests go too
    (root / "dashfloat" / "m.py").write_text("x = 2\n")
    assert load() == (["tests/test_b.py"], {"tests/test_b.py"})  # lines may have moved: all again
    files.append("tests/test_a.py")
    assert load() == (["tests/test_a.py"], set(files))


# -- the runs: a new interpreter per run, or a child of the fork server; the same decisions ------
FAKE_MODULE = "def answer():\n    return 42\n"
FAKE_TESTS = {
    "test_checks.py": "from fakemod import answer\n\n\ndef test_answer():\n    assert answer() == 42\n",
    "test_blind.py": "from fakemod import answer\n\n\ndef test_runs():\n    answer()\n",
    "test_daemon.py": (
        "import os, subprocess, sys, time\n\n\n"
        "def test_leaves_a_daemon(tmp_path):\n"
        "    pidfile = os.environ['FAKE_PIDFILE']\n"
        "    # a new session, its own process group, nothing shared with the test: only the\n"
        "    # environment's marker says where it came from\n"
        "    subprocess.Popen(['sh', '-c', 'echo $$ > %s.tmp && mv %s.tmp %s && exec sleep 300'\n"
        "                      % (pidfile, pidfile, pidfile)], start_new_session=True,\n"
        "                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "    while not os.path.exists(pidfile):\n"
        "        time.sleep(0.01)\n"),
}


@pytest.fixture
def fake_workspace(tmp_path, monkeypatch):
    """A Workspace of a project of one module (fakemod.py) and three test files in tests/, not a copy
    of DashFloat's; its fork server (when it has one) is stopped afterwards."""
    made = []

    def make(fork: bool) -> run_mutation.Workspace:
        ws = run_mutation.Workspace(tmp_path / ("fork" if fork else "spawn"), 0, fork=fork, copy=False)
        ws.write("fakemod.py", FAKE_MODULE.encode())
        # hash-checked bytecode, as in a copy of the project: a mutant written within the
        # second of the original (same size, same mtime) is not taken for it
        subprocess.run([sys.executable, "-m", "compileall", "-q", "--invalidation-mode", "checked-hash",
                        "fakemod.py"], cwd=ws.dir, check=True)
        (ws.dir / "tests").mkdir()
        for name, text in FAKE_TESTS.items():
            ws.write(f"tests/{name}", text.encode())
        made.append(ws)
        return ws

    monkeypatch.setenv("FAKE_PIDFILE", str(tmp_path / "daemon.pid"))
    yield make
    for ws in made:
        ws.stop_server()
        ws.kill_marked()


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("fork", [True, False], ids=["fork-server", "new-interpreter"])
def test_a_mutant_is_killed_survives_or_times_out_the_same_way_in_both_kinds_of_run(fake_workspace, fork):
    ws = fake_workspace(fork)
    assert ws.pytest(["tests/test_checks.py"], timeout=60)[:2] == ("passed", 0)
    ws.write("fakemod.py", FAKE_MODULE.replace("42", "43").encode())
    status, code, out = ws.pytest(["tests/test_checks.py", "tests/test_blind.py"], timeout=60)
    assert (status, code) == ("failed", 1)
    assert run_mutation.killer_of(out) == "tests/test_checks.py::test_answer"
    assert ws.pytest(["tests/test_blind.py"], timeout=60)[:2] == ("passed", 0)   # a survivor
    ws.write("fakemod.py", b"def answer():\n    while True:\n        pass\n")
    started = time.monotonic()
    assert ws.pytest(["tests/test_checks.py"], timeout=3)[:2] == ("timeout", None)
    assert time.monotonic() - started < 15
    # the next run is as good as the first: the hung child is gone, the server serves
    ws.write("fakemod.py", FAKE_MODULE.encode())
    assert ws.pytest(["tests/test_checks.py"], timeout=60)[:2] == ("passed", 0)
    if fork:
        assert ws.runs == 5 and ws.server is not None and ws.server.poll() is None
    else:
        assert ws.runs == 0 and ws.server is None


@pytest.mark.parametrize("fork", [True, False], ids=["fork-server", "new-interpreter"])
def test_a_mutant_that_eats_memory_fails_at_the_data_limit(fake_workspace, fork, monkeypatch):
    """A mutant's endless loop that grows a list took a test child to 17 GB of the machine's
    24 (found in a run of conversation.py): the runs' data is capped, so it fails with
    MemoryError (a kill) instead. Here the cap is 300 MB."""
    monkeypatch.setenv("DASHFLOAT_MUTATION_DATA_LIMIT", str(300 << 20))
    ws = fake_workspace(fork)
    ws.write("fakemod.py", b"def answer():\n    x = []\n    while True:\n        x.append(bytearray(1 << 20))\n")
    status, code, out = ws.pytest(["tests/test_checks.py"], timeout=60)
    assert (status, code) == ("failed", 1), out
    assert "MemoryError" in out


@pytest.mark.parametrize("fork", [True, False], ids=["fork-server", "new-interpreter"])
def test_a_mutant_that_makes_the_test_process_abort_is_a_kill_not_a_run_error(fake_workspace, fork):
    """An aborted test process (exit -6: Python aborts when memory runs out at the data
    limit even for raising MemoryError) did not pass its tests: the runner counts a kill,
    where it counted "error: exit -6" and left the mutant a survivor."""
    ws = fake_workspace(fork)
    ws.write("fakemod.py", b"import os\n\ndef answer():\n    os.abort()\n")
    status, code, _out = ws.pytest(["tests/test_checks.py"], timeout=60)
    assert (status, code) == ("failed", -6)
    assert run_mutation.crashed(code)
    assert not any(run_mutation.crashed(c) for c in (None, 0, 1, 2, 3, 4, 5, -9, -15))


@pytest.mark.parametrize("fork", [True, False], ids=["fork-server", "new-interpreter"])
def test_what_the_tests_leave_running_is_killed_after_the_run_but_not_the_fork_server(fake_workspace, fork, tmp_path):
    ws = fake_workspace(fork)
    assert ws.pytest(["tests/test_daemon.py"], timeout=60)[:2] == ("passed", 0)
    daemon = int((tmp_path / "daemon.pid").read_text())
    deadline = time.monotonic() + 10
    while alive(daemon) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(daemon)
    if fork:
        assert ws.server.poll() is None
        assert ws.pytest(["tests/test_checks.py"], timeout=60)[:2] == ("passed", 0)
        assert ws.runs == 2


def test_a_fork_server_that_died_is_replaced_and_the_run_still_happens(fake_workspace):
    ws = fake_workspace(True)
    assert ws.pytest(["tests/test_checks.py"], timeout=60)[:2] == ("passed", 0)
    first = ws.server
    first.kill()
    first.wait()
    assert ws.pytest(["tests/test_checks.py"], timeout=60)[:2] == ("passed", 0)
    assert ws.server is not first and ws.server.poll() is None


@pytest.mark.parametrize("fork", [True, False], ids=["fork-server", "new-interpreter"])
def test_the_confirming_run_leaves_out_exactly_the_tests_step_one_passed(fake_workspace, fork, tmp_path, monkeypatch):
    log = tmp_path / "ran.log"
    monkeypatch.setenv("FAKE_LOG", str(log))
    ws = fake_workspace(fork)
    ws.write("tests/test_count.py", (
        b"import os\n\n\n"
        b"def note(name):\n"
        b"    with open(os.environ['FAKE_LOG'], 'a') as fh:\n"
        b"        fh.write(name + '\\n')\n\n\n"
        b"def test_a():\n    note('test_a')\n\n\n"
        b"def test_ab():\n    note('test_ab')\n"))
    cov = run_mutation.Coverage(seconds={"tests/test_count.py::test_a": 0.1, "tests/test_count.py::test_ab": 0.1},
                                lines={})
    mutant = mutants("fakemod.py", FAKE_MODULE.encode())[0]
    result = run_mutation.try_mutant(ws, mutant, ["tests/test_count.py::test_a"], ["tests/test_count.py"], cov,
                                     confirm=True)
    assert result["status"] == "survived"
    # test_a ran once, in step 1; test_ab (a prefix match for pytest's --deselect) in step 2
    assert log.read_text().split() == ["test_a", "test_ab"]
    log.unlink()
    # when step 1 ran every test of the files, there is nothing to confirm
    result = run_mutation.try_mutant(ws, mutant, ["tests/test_count.py::test_a", "tests/test_count.py::test_ab"],
                                     ["tests/test_count.py"], cov, confirm=True)
    assert result["status"] == "survived"
    assert log.read_text().split() == ["test_a", "test_ab"]


# ---- which mutants a run tries -------------------------------------------------------------


def _result(status, src="s1", tests="t1"):
    return {"status": status, "src": src, "tests_hash": tests, "killer": "tests/x.py::t", "killer_file": "tests/x.py"}


@pytest.mark.parametrize("old, survivors, killer_same, tried", [
    (None, False, True, True),  # never tried
    (None, True, True, False),  # --survivors tries nothing new
    (_result("survived"), True, True, True),
    (_result("survived", tests="t0"), True, True, True),
    (_result("killed"), True, False, False),  # --survivors: not even a kill whose test changed
    (_result("timeout", tests="t0"), True, True, False),
    (_result("killed"), False, True, False),  # decided, and its killer is as it was
    (_result("killed"), False, False, True),  # its killer changed: is it still killed?
    (_result("killed", src="s0"), False, True, True),  # the module changed
    (_result("survived"), False, True, False),  # nothing changed since it survived
    (_result("survived", tests="t0"), False, True, True),  # its tests changed
    (_result("timeout", tests="t0"), False, True, True),
    (_result("timeout"), False, True, False),
])
def test_a_run_tries_what_is_new_or_changed_and_survivors_tries_only_survivors(old, survivors, killer_same, tried):
    assert run_mutation.wanted(old, "s1", "t1", survivors=survivors,
                               killer_unchanged=lambda o: killer_same) is tried


@pytest.mark.parametrize("old, tried", [
    (_result("killed"), False),  # its killer changed, but the tests were only added to
    (_result("killed", src="s0"), True),  # the module changed: tried again all the same
    (_result("timeout", tests="t0"), False),
    (_result("survived", tests="t0"), True),
    (None, True),
])
def test_keep_kills_leaves_a_kill_or_a_timeout_whose_tests_changed_as_it_is(old, tried):
    assert run_mutation.wanted(old, "s1", "t1", survivors=False, keep_kills=True,
                               killer_unchanged=lambda o: False) is tried
