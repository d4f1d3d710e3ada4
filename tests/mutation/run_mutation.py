"""Mutation testing for DashFloat's llm/, tools/, agent, conversation, sessions, headless mode, config,
instructions, commands, /copy, the event schema and the UI's Markdown, long text, screen writer,
status bar, keymap and theme: `make mutation`.

A test suite is as good as the mutants it kills. For each module this makes the mutants of
tests/mutation/mutants.py (operators, constants, conditions, deleted statements...), applies
one at a time to a private copy of the project in a temporary directory (the worktree is never
written), and runs the fast tests (tests/unit, tests/test_*.py, and for the modules of
dashfloat/ui/ tests/widget too; never e2e) that can see it:

1. the tests that run the mutated lines (a traced run of the fast suite says which; redone
   when the code or the tests change), with ``-x``;
2. if they all pass, every fast test file that runs or imports the module, to confirm (less
   the tests step 1 has just passed).

A mutant is *killed* when a test fails (or the module no longer imports), *timed out* when
the tests hang past the mutant's time limit (process group killed), *reviewed equivalent*
when tests/mutation/equivalent.txt lists it, and otherwise *survived*: a behaviour change no
test sees. Results are kept in tests/mutation/results.json (in the tree: a fresh clone
resumes where the last run stopped, and `--report` prints its figures) by module, mutant and
the hashes of the module and of its tests, so a re-run only tries what changed (after an
edit, a mutant whose function is unchanged keeps its result: `carry`); the traced
coverage and the lock live in .mutation-cache/. At most two test processes run
at once, under nice 19; every process a run starts carries a marker in its environment and
is killed by it afterwards, whatever it did (setsid, daemons).

Each pytest run is a child forked from the workspace's fork server (forkserver.py), which has
imported pytest and the third-party packages once, but never dashfloat nor the tests: a run
of one trivial test takes a third of the time of a new interpreter's (0.5 s, not 1.3 s, on a
loaded machine), and a mutant's code is imported fresh. The child is a session of its own,
killed with its group at the time limit; the server carries the marker (its children must)
and is the one process spared by it.
``--no-fork`` runs a new interpreter each time, as before: the same decisions, slower.

    python tests/mutation/run_mutation.py [MODULE ...] [--jobs N] [--survivors] [--keep-kills] [--report]

Marking an equivalent mutant: add its line from the survivor list to equivalent.txt as
``path:line:col :: mutation :: source line :: why it cannot change behaviour``.
"""

from __future__ import annotations

import argparse
import ast
import fcntl
import functools
import hashlib
import json
import os
import queue
import re
import resource
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.mutation.mutants import Mutant, mutants  # noqa: E402

CACHE_DIR = ROOT / ".mutation-cache"
RESULTS = Path(__file__).with_name("results.json")
EQUIVALENT = Path(__file__).with_name("equivalent.txt")
# in the brief's order of priority: a partial run covers the ones that matter most
DEFAULT_MODULES = [
    "dashfloat/tools/pathpolicy.py", "dashfloat/tools/safeopen.py", "dashfloat/tools/names.py",
    "dashfloat/tools/repocheck.py", "dashfloat/tools/edit.py", "dashfloat/tools/files.py",
    "dashfloat/tools/exec.py", "dashfloat/tools/rules.py", "dashfloat/tools/scripts.py",
    "dashfloat/tools/alwaysask.py", "dashfloat/tools/permissions.py",
    "dashfloat/tools/guard.py", "dashfloat/tools/pipeline.py", "dashfloat/tools/preview.py",
    "dashfloat/tools/results.py", "dashfloat/tools/catalogue.py", "dashfloat/tools/runner.py",
    "dashfloat/llm/sse.py", "dashfloat/llm/toolcalls.py", "dashfloat/llm/errors.py",
    "dashfloat/llm/bodyreader.py", "dashfloat/llm/client.py", "dashfloat/llm/transport.py",
    "dashfloat/agent.py", "dashfloat/conversation.py",
    "dashfloat/tools/hooks.py", "dashfloat/tools/reaper.py", "dashfloat/llm/endpoint.py",
    "dashfloat/tools/search.py", "dashfloat/masking.py", "dashfloat/context.py", "dashfloat/metering.py",
    "dashfloat/tools/gitchanges.py", "dashfloat/tools/undo.py", "dashfloat/llm/viarequests.py",
    "dashfloat/tools/cargocheck.py", "dashfloat/frozen.py", "dashfloat/journal.py", "dashfloat/sessions.py",
    "dashfloat/headless.py", "dashfloat/config.py", "dashfloat/prompt.py", "dashfloat/commands.py",
    "dashfloat/copyout.py", "dashfloat/events.py",
    "dashfloat/ui/markdown.py", "dashfloat/ui/longtext.py", "dashfloat/ui/screen.py", "dashfloat/ui/statusline.py",
    "dashfloat/ui/keymap.py", "dashfloat/ui/theme.py",
]
TOKEN_VAR = "DASHFLOAT_MUTATION_RUN"
PYTEST = ["-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "--no-header", "-o", "addopts="]


def widget_scope(module: str) -> bool:
    """Whether `module`'s mutants also face tests/widget (the UI's tests: an App on a fake
    terminal, 50 s for the lot): only the modules of dashfloat/ui/ do, so the others' tests
    and results stay what they were."""
    return module.startswith("dashfloat/ui/")


def fast_test_files(widget: bool = False) -> list[str]:
    dirs = [ROOT / "tests" / "unit", ROOT / "tests", *([ROOT / "tests" / "widget"] if widget else [])]
    return [str(p.relative_to(ROOT)) for d in dirs for p in sorted(d.glob("test_*.py"))]


def helper_files(widget: bool = False) -> list[str]:
    """Test files that are not tests themselves but that every test file may use."""
    dirs = [ROOT / "tests", ROOT / "tests" / "unit", *([ROOT / "tests" / "widget"] if widget else [])]
    return sorted(str(p.relative_to(ROOT)) for d in dirs for p in d.glob("*.py") if not p.name.startswith("test_"))


def dump_results(results: dict[str, dict[str, dict]]) -> str:
    """The results as JSON with one mutant a line: a run's diff shows what it tried."""
    out = ["{"]
    for i, module in enumerate(sorted(results)):
        out.append(f"{json.dumps(module)}: {{")
        items = sorted(results[module].items())
        for j, (ident, result) in enumerate(items):
            sep = "," if j < len(items) - 1 else ""
            out.append(f"{json.dumps(ident)}: {json.dumps(result, sort_keys=True, separators=(',', ':'))}{sep}")
        out.append("}," if i < len(results) - 1 else "}")
    out.append("}")
    return "\n".join(out) + "\n"


def digest(paths) -> str:
    h = hashlib.sha256()
    for rel in sorted(paths):
        h.update(rel.encode() + b"\0" + (ROOT / rel).read_bytes() + b"\0")
    return h.hexdigest()[:20]


@functools.cache
def file_hash(rel: str) -> str:
    path = ROOT / rel
    return hashlib.sha256(path.read_bytes()).hexdigest()[:20] if path.exists() else "-"


@functools.cache
def _test_source(rel: str) -> tuple[str, list[ast.stmt]]:
    source = (ROOT / rel).read_text(encoding="utf-8")
    return source, ast.parse(source).body


@functools.cache
def test_hash(nodeid: str) -> str:
    """A hash of the source of the test function `nodeid` names (its file's hash when it
    cannot be found): a mutant that test killed stays killed while the test is unchanged, even
    when other tests are added to its file. Remembered for the run (the worktree is never
    written): re-checking a cached module's killed mutants parses each test file once."""
    rel, _, rest = nodeid.partition("::")
    path = ROOT / rel
    if not rest or not path.exists():
        return file_hash(rel)
    names = [part.split("[")[0] for part in rest.split("::")]
    source, body = _test_source(rel)
    found = None
    for name in names:
        found = next((n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                      and n.name == name), None)
        if found is None:
            return file_hash(rel)
        body = getattr(found, "body", [])
    segment = ast.get_source_segment(source, found) or ""
    return "fn:" + hashlib.sha256(segment.encode()).hexdigest()[:20]


# -- the private copies ------------------------------------------------------------------------
class Workspace:
    """A copy of the project (git's files as they are on disk) in a temporary directory, where
    one mutant at a time is written and its tests run."""

    def __init__(self, base: Path, n: int, fork: bool = True, copy: bool = True):
        self.dir = base / f"w{n}"
        self.tmp = base / f"tmp{n}"
        self.tmp.mkdir(parents=True)
        self.dir.mkdir(parents=True, exist_ok=True)
        if copy:
            self.copy_project()
        self.token = f"{os.getpid()}-{n}-{os.urandom(4).hex()}"
        self.proc: subprocess.Popen | None = None
        self.fork = fork              # run pytest in children of a fork server (forkserver.py)
        self.server: subprocess.Popen | None = None
        self.server_out = b""
        self.child: int | None = None  # the fork server's child running now
        self.runs = 0

    def copy_project(self):
        listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                                capture_output=True, check=True).stdout.decode().split("\0")
        for rel in filter(None, listed):
            src = ROOT / rel
            if src.is_file() and not rel.startswith(".mutation-cache") and rel != "tests/mutation/results.json":
                dst = self.dir / rel
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dst)
        # hash-checked bytecode: a mutated file is always recompiled, whatever its mtime
        subprocess.run([sys.executable, "-m", "compileall", "-q", "--invalidation-mode",
                        "checked-hash", "dashfloat"], cwd=self.dir, check=True)

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(PYTHONPATH=str(self.dir), TMPDIR=str(self.tmp), PYTHONHASHSEED="0",
                   **{TOKEN_VAR: self.token})
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        return env

    def pytest(self, tests: list[str], timeout: float, extra_env: dict | None = None,
               options: tuple[str, ...] = ()) -> tuple[str, int | None, str]:
        """Run pytest on `tests` (node ids or files) here: ("passed" | "failed" | "timeout",
        exit code, output)."""
        argfile = self.tmp / "tests.txt"   # hundreds of node ids: pytest reads them from a file
        argfile.write_text("\n".join(tests) + "\n")
        args = [*PYTEST[2:], *options, f"@{argfile}"]     # what follows `-m pytest`
        if self.fork and not extra_env:
            result = self.forked(args, timeout)
            if result is not None:
                return result
        env = self.env()
        env.update(extra_env or {})
        self.proc = subprocess.Popen([sys.executable, *PYTEST[:2], *args], cwd=self.dir, env=env,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        try:  # as the fork server's children (forkserver.DATA_LIMIT): a runaway mutant fails
            limit = int(env.get("DASHFLOAT_MUTATION_DATA_LIMIT", 4 << 30))
            resource.prlimit(self.proc.pid, resource.RLIMIT_DATA, (limit, limit))
        except (OSError, ValueError):
            pass
        try:
            out, _ = self.proc.communicate(timeout=timeout)
            code = self.proc.returncode
            status = "passed" if code == 0 else "failed"
        except subprocess.TimeoutExpired:
            self.kill_group()
            self.kill_marked()
            try:
                out, _ = self.proc.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                out = b""
            code, status = None, "timeout"
        finally:
            self.proc = None
            self.kill_marked()
        return status, code, out.decode("utf-8", "replace")

    # -- the fork server ---------------------------------------------------------------------
    def start_server(self) -> bool:
        """Start this workspace's fork server (tests/mutation/forkserver.py) and wait until it
        has imported pytest and the packages: False when it could not."""
        self.stop_server()
        errors = open(self.tmp / "forkserver.err", "ab")
        try:
            self.server = subprocess.Popen([sys.executable, str(Path(__file__).with_name("forkserver.py"))],
                                           cwd=self.dir, env=self.env(), stdin=subprocess.PIPE,
                                           stdout=subprocess.PIPE, stderr=errors, start_new_session=True)
        finally:
            errors.close()
        self.server_out = b""
        if self.server_reply(120) != "ready":   # nice 19 on a busy machine
            self.stop_server()
            return False
        return True

    def stop_server(self):
        server, self.server = self.server, None
        if server is None:
            return
        try:
            server.stdin.close()
        except OSError:
            pass
        try:
            server.wait(timeout=5)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        server.stdout.close()

    def server_reply(self, timeout: float) -> str | None:
        """The server's next line; None when it does not come within `timeout` seconds or the
        server is gone."""
        deadline = time.monotonic() + timeout
        fd = self.server.stdout.fileno()
        while b"\n" not in self.server_out:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 4096)
            if not chunk:
                return None
            self.server_out += chunk
        line, _, self.server_out = self.server_out.partition(b"\n")
        return line.decode()

    def forked(self, argv: list[str], timeout: float) -> tuple[str, int | None, str] | None:
        """pytest `argv` in a child of the fork server, as pytest() does in a new process; None
        when the server is not there (it could not start, or died): then the caller runs it so."""
        if self.server is None or self.server.poll() is not None:
            if not self.start_server():
                self.fork = False
                return None
        out_path = self.tmp / "pytest.out"
        start = time.monotonic()
        try:
            self.server.stdin.write(json.dumps({"argv": argv, "out": str(out_path)}).encode() + b"\n")
            self.server.stdin.flush()
        except OSError:
            self.stop_server()
            return None
        reply = self.server_reply(30)
        if reply is None or not reply.startswith("pid "):
            self.stop_server()
            self.kill_marked()
            return None
        self.child = int(reply.split()[1])
        self.runs += 1
        try:
            reply = self.server_reply(max(0.0, timeout - (time.monotonic() - start)))
            if reply is None and self.server.poll() is None:
                self.kill_group()
                self.kill_marked()
                reply = self.server_reply(10)
                status, code = "timeout", None
            elif reply is None or not reply.startswith("exit "):
                # the server died under its child: no result, the caller runs it again
                self.stop_server()
                return None
            else:
                code = int(reply.split()[1])
                status = "passed" if code == 0 else "failed"
            if reply is None:   # the child did not end even when killed
                self.stop_server()
        finally:
            self.child = None
            self.kill_marked()
        try:
            out = out_path.read_bytes()
        except OSError:
            out = b""
        return status, code, out.decode("utf-8", "replace")

    def kill_group(self):
        proc = self.proc
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        child = self.child
        if child is not None:
            # not reaped until the server has answered: the pid is still this child's
            for kill in (os.killpg, os.kill):
                try:
                    kill(child, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def kill_marked(self):
        """Kill every process whose environment carries this workspace's marker: whatever a
        mutant's tests started and left (a daemon, a setsid child) dies with the run. The fork
        server carries it too (its children must), and is spared."""
        needle = f"{TOKEN_VAR}={self.token}".encode()
        spare = {os.getpid()}
        if self.server is not None:
            spare.add(self.server.pid)
        for _ in range(3):
            found = False
            for entry in os.listdir("/proc"):
                if not entry.isdigit() or int(entry) in spare:
                    continue
                try:
                    with open(f"/proc/{entry}/environ", "rb") as fh:
                        if needle not in fh.read().split(b"\0"):
                            continue
                    os.kill(int(entry), signal.SIGKILL)
                    found = True
                except (OSError, ProcessLookupError):
                    continue
            if not found:
                return
            time.sleep(0.2)

    def write(self, rel: str, data: bytes):
        (self.dir / rel).write_bytes(data)


# -- which tests run which lines ---------------------------------------------------------------
@dataclass
class Coverage:
    seconds: dict[str, float]                       # nodeid -> seconds (traced)
    lines: dict[str, dict[int, list[str]]]          # module -> line -> nodeids
    files: dict[str, set[str]] = field(default_factory=dict)  # module -> test files
    broken: set[str] = field(default_factory=set)   # tests that fail without a mutant

    def tests_for(self, mutant: Mutant) -> list[str]:
        by_line = self.lines.get(mutant.module, {})
        found: set[str] = set()
        for line in mutant.lines:
            found.update(by_line.get(line, ()))
        if not widget_scope(mutant.module):
            found = {t for t in found if not t.startswith("tests/widget/")}
        return sorted(found, key=lambda t: (self.seconds.get(t, 0), t))


def load_coverage(workspaces: list[Workspace], say) -> Coverage:
    """Which fast tests run which lines of dashfloat/, from a traced run of them, cached in
    .mutation-cache/coverage.json. A change to dashfloat/ or to a helper file (conftest...)
    traces every test file again (lines move); a test file added or changed traces just that
    file, so a session of writing tests to kill mutants waits seconds, not minutes, per run."""
    tests = fast_test_files(widget=True)
    key = digest([*helper_files(widget=True), *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "dashfloat").rglob("*.py"))])
    hashes = {rel: file_hash(rel) for rel in tests}
    path = CACHE_DIR / "coverage.json"
    data = json.loads(path.read_text()) if path.exists() else None
    if data is None or data.get("key") != key or "files" not in data:
        todo, kept, kept_failed = tests, {}, []
    else:
        todo = [rel for rel in tests if data["files"].get(rel) != hashes[rel]]
        same = set(tests) - set(todo)
        kept = {node: info for node, info in data["tests"].items() if node.split("::")[0] in same}
        kept_failed = [node for node in data.get("failed", []) if node.split("::")[0] in same]
    if todo or data is None or data.get("files") != hashes:
        say(f"tracing which tests run which lines ({len(todo)} of {len(tests)} test files, "
            f"{len(workspaces)} processes)...")
        start = time.monotonic()
        # balance the files over the workspaces by size
        groups: list[list[str]] = [[] for _ in workspaces]
        sizes = [0] * len(workspaces)
        for rel in sorted(todo, key=lambda r: -(ROOT / r).stat().st_size):
            i = sizes.index(min(sizes))
            groups[i].append(rel)
            sizes[i] += (ROOT / rel).stat().st_size
        results: list[dict] = [{} for _ in workspaces]
        failures: list[str] = []
        failed: list[str] = []

        def trace(i: int):
            if not groups[i]:
                return
            ws = workspaces[i]
            out = ws.tmp / "coverage.json"
            # every test runs (no -x): one that fails only under the tracer (a timing test)
            # is left out of the mutants' runs, not a reason to stop
            status, code, text = ws.pytest(
                groups[i], timeout=3600, options=("-p", "tests.mutation.covplugin", "--maxfail=1000000"),
                extra_env={"DASHFLOAT_MUTCOV_PREFIX": str(ws.dir / "dashfloat"),
                           "DASHFLOAT_MUTCOV_OUT": str(out)})
            if status == "timeout" or not out.exists() or code not in (0, 1):
                failures.append(f"the traced run of the fast tests failed ({status}, exit {code}):\n{text[-3000:]}")
                return
            data = json.loads(out.read_text())
            results[i] = data["tests"]
            failed.extend(data.get("failed", []))

        threads = [threading.Thread(target=trace, args=(i,)) for i in range(len(workspaces))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if failures:
            sys.exit(failures[0])
        merged: dict[str, dict] = dict(kept)
        for part in results:
            merged.update(part)
        if not merged:
            sys.exit("the traced run recorded no tests")
        failed = kept_failed + failed
        if len(failed) > 20:
            sys.exit(f"{len(failed)} tests fail without any mutant, e.g. {failed[:5]}")
        data = {"key": key, "files": hashes, "tests": merged, "failed": sorted(failed)}
        CACHE_DIR.mkdir(exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(data))
        tmp.replace(path)
        say(f"traced {sum(len(r) for r in results)} tests in {time.monotonic() - start:.0f} s")
    seconds: dict[str, float] = {}
    lines: dict[str, dict[int, list[str]]] = {}
    files: dict[str, set[str]] = {}
    broken = set(data.get("failed", []))
    if broken:
        say(f"left out of the mutants' runs: {len(broken)} tests that fail without a mutant (under the "
            f"tracer): {', '.join(sorted(broken))}")
    for nodeid, info in data["tests"].items():
        if nodeid in broken:
            continue
        seconds[nodeid] = info["seconds"]
        for module, found in info["lines"].items():
            per_line = lines.setdefault(module, {})
            for line in found:
                per_line.setdefault(line, []).append(nodeid)
            files.setdefault(module, set()).add(nodeid.split("::")[0])
    return Coverage(seconds, lines, files, broken)


def module_test_files(module: str, coverage: Coverage) -> list[str]:
    """The fast test files that run `module` (traced) or import it by name."""
    dotted = module[:-3].replace("/", ".")
    package, _, name = dotted.rpartition(".")
    pattern = re.compile(rf"\b{re.escape(dotted)}\b|from {re.escape(package)} import [^\n]*\b{re.escape(name)}\b")
    candidates = fast_test_files(widget=widget_scope(module))
    found = set(coverage.files.get(module, ())) & set(candidates)
    for rel in candidates:
        if pattern.search((ROOT / rel).read_text(encoding="utf-8")):
            found.add(rel)
    return sorted(found)


# -- the reviewed list -------------------------------------------------------------------------
@dataclass
class Reviewed:
    module: str
    line: int
    col: int
    desc: str
    source: str
    reason: str
    lineno: int            # in equivalent.txt
    used: bool = False


def load_equivalent() -> list[Reviewed]:
    out: list[Reviewed] = []
    if not EQUIVALENT.exists():
        return out
    for n, raw in enumerate(EQUIVALENT.read_text(encoding="utf-8").splitlines(), 1):
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        parts = raw.split(" :: ")
        match = re.fullmatch(r"(\S+):(\d+):(\d+)", parts[0].strip())
        if len(parts) != 4 or not match or not parts[3].strip():
            sys.exit(f"{EQUIVALENT.name}:{n}: expected 'path:line:col :: mutation :: source line :: reason'")
        out.append(Reviewed(match[1], int(match[2]), int(match[3]), parts[1].strip(), parts[2].strip(),
                            parts[3].strip(), n))
    return out


def match_equivalent(reviewed: list[Reviewed], module: str, found: list[Mutant], lines: list[str]) -> dict[str, Reviewed]:
    """Mutant ident -> its review. An entry whose line moved (the same mutation of the same
    source text at the same column, nearest to the recorded line) still matches."""
    out: dict[str, Reviewed] = {}
    by_key: dict[tuple, list[Mutant]] = {}
    for m in found:
        by_key.setdefault((m.col, m.desc, lines[m.line - 1].strip()), []).append(m)
    for entry in reviewed:
        if entry.module != module:
            continue
        candidates = [m for m in by_key.get((entry.col, entry.desc, entry.source), []) if m.ident not in out]
        if candidates:
            best = min(candidates, key=lambda m: abs(m.line - entry.line))
            out[best.ident] = entry
            entry.used = True
            entry.line_now = best.line
    return out


def in_span(reviewed: list[Reviewed], module: str, found: list[Mutant], lines: list[str],
            span: str | None) -> tuple[list[Mutant], dict[str, Reviewed]]:
    """The mutants on the lines of `span` ("A-B", --lines; all without one) and their reviews.
    The entries are matched over the whole module first: an entry for a line outside the span
    must not take a mutant of the same text inside it (which would then never be tried)."""
    equivalent = match_equivalent(reviewed, module, found, lines)
    if span:
        lo, _, hi = span.partition("-")
        found = [m for m in found if int(lo) <= m.line <= int(hi or lo)]
        kept = {m.ident for m in found}
        equivalent = {ident: entry for ident, entry in equivalent.items() if ident in kept}
    return found, equivalent


# -- the run -----------------------------------------------------------------------------------
def killer_unchanged(old: dict) -> bool:
    """The test that killed a mutant is as it was (or was not recorded: an import failure)."""
    return old.get("killer") is None or old.get("killer_hash") in (test_hash(old["killer"]),
                                                                    file_hash(old["killer_file"]))


def wanted(old: dict | None, src_hash: str, tests_hash: str, *, survivors: bool,
           killer_unchanged=killer_unchanged, keep_kills: bool = False) -> bool:
    """Whether a mutant is tried in this run, given its last result `old` (None: never tried).
    A run tries what is new or changed: a mutant never tried, one of a changed module, a kill
    whose test changed, any other result whose tests changed (but with `keep_kills`, when the
    tests were only added to, a kill or a timeout stands). --survivors tries exactly the mutants that survived last time,
    whatever else changed."""
    if survivors:
        return bool(old) and old["status"] == "survived"
    if not old or old.get("src") != src_hash:
        return True
    if old["status"] == "killed":
        return not keep_kills and not killer_unchanged(old)
    if keep_kills and old["status"] == "timeout":
        return False
    return old.get("tests_hash") != tests_hash


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("modules", nargs="*", help="paths of modules (default: llm/, tools/, agent, conversation)")
    ap.add_argument("--jobs", type=int, default=2, help="test processes at once (default 2)")
    ap.add_argument("--survivors", action="store_true", help="re-try only the mutants that survived last time")
    ap.add_argument("--keep-kills", action="store_true",
                    help="a kill or a timeout stands though the tests changed (when tests were only added): faster")
    ap.add_argument("--report", action="store_true", help="print the last results; run nothing (results carried over to edited modules are saved)")
    ap.add_argument("--no-confirm", action="store_true", help="skip step 2 (faster, may report false survivors)")
    ap.add_argument("--no-fork", action="store_true",
                    help="a new interpreter for each pytest run (no fork server: slower, the same results)")
    ap.add_argument("--check-equivalent", action="store_true", help="run the reviewed-equivalent mutants too")
    ap.add_argument("--lines", help="only mutants on these lines, e.g. 10-20 (with one module)")
    ap.add_argument("--update-equivalent", action="store_true",
                    help="rewrite equivalent.txt with the current line numbers of moved entries")
    args = ap.parse_args(argv)
    try:
        os.nice(19)
    except OSError:
        pass
    modules = args.modules or DEFAULT_MODULES
    for module in modules:
        if not (ROOT / module).is_file():
            ap.error(f"no such module: {module}")
    modules = [str((ROOT / m).resolve().relative_to(ROOT)) for m in modules]

    def say(text: str):
        print(text, flush=True)

    CACHE_DIR.mkdir(exist_ok=True)
    cache_path = RESULTS
    cache: dict[str, dict[str, dict]] = json.loads(cache_path.read_text()) if cache_path.exists() else {}
    cache_lock = threading.Lock()

    def save_cache():
        """Write this run's modules into the cache file, keeping the others as they are on
        disk (another run may have written them meanwhile)."""
        with cache_lock, open(CACHE_DIR / "lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            on_disk = json.loads(cache_path.read_text()) if cache_path.exists() else {}
            on_disk.update({m: cache[m] for m in modules if m in cache and (cache[m] or m in on_disk)})
            tmp = cache_path.with_suffix(f".tmp{os.getpid()}")
            tmp.write_text(dump_results(on_disk))
            tmp.replace(cache_path)

    reviewed = load_equivalent()
    base = Path(tempfile.mkdtemp(prefix="dashfloat-mutation-"))
    workspaces: list[Workspace] = []
    stop = threading.Event()
    try:
        jobs = max(1, args.jobs)
        if args.report:
            coverage = None
        else:
            workspaces = [Workspace(base, n, fork=not args.no_fork) for n in range(jobs)]
            coverage = load_coverage(workspaces, say)

        plan = []        # (mutant, selected tests, files, module hashes)
        per_module: dict[str, dict] = {}
        rewritten = False  # results carried over, given their scope or pruned: saved now
        for module in modules:
            source = (ROOT / module).read_bytes()
            found = mutants(module, source)
            lines = source.decode("utf-8").splitlines()
            found, equivalent = in_span(reviewed, module, found, lines, args.lines)
            src_hash = hashlib.sha256(source).hexdigest()[:20]
            info = {"mutants": found, "lines": lines, "equivalent": equivalent, "src": src_hash}
            per_module[module] = info
            before = json.dumps(cache.get(module, {}), sort_keys=True)
            carried = carry(cache.setdefault(module, {}), found, src_hash, prune=not args.lines)
            if carried:
                say(f"{module}: {carried} results carried over from functions the edit left unchanged")
            rewritten |= json.dumps(cache[module], sort_keys=True) != before
            if coverage is None:
                continue
            files = module_test_files(module, coverage)
            tests_hash = digest([*files, *helper_files(widget=widget_scope(module))])
            info.update(files=files, tests_hash=tests_hash)
            cached = cache.setdefault(module, {})
            for m in found:
                old = cached.get(m.ident)
                if m.ident in equivalent and not args.check_equivalent:
                    continue
                if not wanted(old, src_hash, tests_hash, survivors=args.survivors, keep_kills=args.keep_kills):
                    continue
                plan.append((m, coverage.tests_for(m), files, src_hash, tests_hash))

        if rewritten:
            save_cache()
        if plan:
            say(f"{len(plan)} mutants to try in {len({p[0].module for p in plan})} modules "
                f"({sum(len(i['mutants']) for i in per_module.values())} in all; the rest cached or reviewed)")
        jobs_q: queue.Queue = queue.Queue()
        for item in plan:
            jobs_q.put(item)
        done = [0]
        started = time.monotonic()
        originals = {m: (ROOT / m).read_bytes() for m in modules}

        def record(m: Mutant, result: dict):
            with cache_lock:
                cache.setdefault(m.module, {})[m.ident] = result
                done[0] += 1
                n = done[0]
            if n % 25 == 0 or n == len(plan):
                elapsed = time.monotonic() - started
                eta = elapsed / n * (len(plan) - n)
                say(f"  {n}/{len(plan)} mutants tried, {elapsed / 60:.1f} min, about {eta / 60:.0f} min to go")
            if n % 100 == 0:
                save_cache()

        def worker(ws: Workspace):
            while not stop.is_set():
                try:
                    m, selected, files, src_hash, tests_hash = jobs_q.get_nowait()
                except queue.Empty:
                    return
                original = originals[m.module]
                ws.write(m.module, m.apply(original))
                try:
                    result = try_mutant(ws, m, selected, files, coverage, confirm=not args.no_confirm)
                finally:
                    if not stop.is_set():  # (when stopped, the workspace is being removed)
                        ws.write(m.module, original)
                if stop.is_set():
                    return
                result.update(src=src_hash, tests_hash=tests_hash, scope_key=m.scope_key, scope_hash=m.scope_hash)
                record(m, result)

        threads = [threading.Thread(target=worker, args=(ws,), daemon=True) for ws in workspaces]
        for t in threads:
            t.start()
        # Ctrl-C, and SIGTERM, stop the run keeping its results: also when it was started in the
        # background of a script, where the shell has SIGINT ignored (Python then keeps it so)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.default_int_handler)
        try:
            while any(t.is_alive() for t in threads):
                for t in threads:
                    t.join(0.5)
        except KeyboardInterrupt:
            stop.set()
            # a worker may be between two runs: kill until each has seen `stop` (its
            # workspace is removed next, under a run that still writes there)
            deadline = time.monotonic() + 10
            while any(t.is_alive() for t in threads) and time.monotonic() < deadline:
                for ws in workspaces:
                    ws.kill_group()
                time.sleep(0.1)
            save_cache()
            say("interrupted: results so far are cached")
            return 130
        if plan:
            save_cache()
        return report(per_module, cache, reviewed, say, args.update_equivalent)
    finally:
        stop.set()
        for ws in workspaces:
            ws.kill_group()
            ws.stop_server()
            ws.kill_marked()
        shutil.rmtree(base, ignore_errors=True)


def carry(cached: dict[str, dict], found: list[Mutant], src_hash: str, prune: bool) -> int:
    """Results of a module that was edited, kept where the edit cannot have reached: a
    mutant whose function (its scope: mutants.py) has the same source as when it was tried
    takes that result, under its new ident (its line may have moved). A result of the
    current source gets its scope written in, for the next edit. With `prune`, results of
    mutants that exist no more are dropped. Returns how many were carried over.

    A carried result is as good as the module's other functions are to the mutant's tests:
    a change elsewhere that made a killed mutant survive is not seen until the function
    changes (or results.json is cleared for the module)."""
    by_scope = {(r["scope_key"], r["scope_hash"]): r for r in cached.values()
                if r.get("scope_key") and r.get("scope_hash") and r.get("src") != src_hash}
    carried = 0
    for m in found:
        old = cached.get(m.ident)
        if old is not None and old.get("src") == src_hash:
            if m.scope_hash and not old.get("scope_key"):
                old.update(scope_key=m.scope_key, scope_hash=m.scope_hash)
            continue
        moved = by_scope.get((m.scope_key, m.scope_hash)) if m.scope_hash else None
        if moved is not None:
            cached[m.ident] = {**moved, "src": src_hash}
            carried += 1
    if prune:
        now = {m.ident for m in found}
        for ident in [i for i in cached if i not in now]:
            del cached[ident]
    return carried


def try_mutant(ws: Workspace, m: Mutant, selected: list[str], files: list[str], coverage: Coverage,
               confirm: bool) -> dict:
    """Run the tests for one mutant (already written into `ws`)."""
    steps = []
    if selected:
        steps.append(("lines", selected, sum(coverage.seconds.get(t, 0.05) for t in selected)))
    if confirm or not selected:
        budget = sum(s for t, s in coverage.seconds.items() if t.split("::")[0] in files)
        steps.append(("files", quickest_first(m.module, files, coverage), budget))
    start = time.monotonic()
    passed: list[str] = []    # the tests of step 1, all passed: the confirming run leaves them out
    for step, tests, traced_seconds in steps:
        if not tests:
            continue
        # the traced run is slower than a plain one; the margin is for a loaded machine
        limit = 20 + 3 * traced_seconds
        options = [f"--deselect={t}" for t in sorted(coverage.broken) if t.split("::")[0] in tests]
        if passed:
            done = set(passed)
            if all(t in done for t in coverage.seconds if t.split("::")[0] in tests):
                continue
            (ws.tmp / "passed.txt").write_text("\n".join(passed) + "\n")
            options += ["-p", "tests.mutation.deselect", f"--mutation-deselect={ws.tmp / 'passed.txt'}"]
        status, code, out = ws.pytest(tests, timeout=limit, options=tuple(options))
        if status == "timeout":
            return {"status": "timeout", "step": step, "limit": round(limit), "seconds": round(time.monotonic() - start, 1)}
        if status == "failed" and code == 5 and passed:
            status = "passed"   # no test left: all of them ran in step 1
        if status == "failed":
            if not crashed(code) and code not in (1, 2):
                # 3 internal error, 4 usage error, 5 no tests: a problem of the run, unless
                # the mutant broke the import of the package pytest is loading
                if "Traceback" not in out and "Error" not in out:
                    return {"status": "error", "step": step, "code": code, "out": out[-2000:]}
            killer = killer_of(out)
            killer_file = killer.split("::")[0] if killer else None
            return {"status": "killed", "step": step, "killer": killer, "killer_file": killer_file,
                    "killer_hash": test_hash(killer) if killer else None,
                    "seconds": round(time.monotonic() - start, 1)}
        if step == "lines":
            passed = list(tests)
    return {"status": "survived", "seconds": round(time.monotonic() - start, 1)}


def crashed(code: int | None) -> bool:
    """Whether the test process died of an abort or a crash (SIGABRT, SIGSEGV, SIGBUS): the
    tests did not pass, so the mutant is killed. A mutant's endless loop that grows memory
    can end so at the data limit (Python aborts when it cannot even raise MemoryError) instead
    of failing a test. The runner's own kill at the time limit is a timeout, not this."""
    return code is not None and -code in (signal.SIGABRT, signal.SIGSEGV, signal.SIGBUS)


def quickest_first(module: str, files: list[str], coverage: Coverage) -> list[str]:
    """The same files in the order most likely to fail soonest (pytest runs them in the order
    given, and -x stops at the first failure): the module's own test file, then the others by
    their traced time, shortest first. Only the order changes: a survivor still runs them all."""
    own = f"test_{Path(module).stem}.py"
    seconds: dict[str, float] = {}
    for nodeid, s in coverage.seconds.items():
        rel = nodeid.split("::")[0]
        seconds[rel] = seconds.get(rel, 0.0) + s
    return sorted(files, key=lambda f: (Path(f).name != own, seconds.get(f, 0.0), f))


_FAILED_RE = re.compile(r"^(?:FAILED|ERROR) (.+?)(?: - .*)?$", re.M)


def killer_of(out: str) -> str | None:
    match = _FAILED_RE.search(out)
    if match and match[1].startswith("tests/"):
        return match[1]
    return None


def report(per_module: dict, cache: dict, reviewed: list[Reviewed], say, update: bool) -> int:
    packages: dict[str, list[int]] = {}
    survivors_total = 0
    say("")
    say(f"{'module':36} {'mutants':>7} {'killed':>7} {'timeout':>7} {'equiv':>6} {'survived':>8} {'untried':>7}")
    survivor_lines: list[str] = []
    for module, info in per_module.items():
        cached = cache.get(module, {})
        counts = {"killed": 0, "timeout": 0, "equivalent": 0, "survived": 0, "untried": 0}
        for m in info["mutants"]:
            old = cached.get(m.ident)
            valid = old is not None and old.get("src") == info["src"]
            if m.ident in info["equivalent"]:
                counts["equivalent"] += 1
                if valid and old["status"] == "killed":
                    entry = info["equivalent"][m.ident]
                    say(f"note: {EQUIVALENT.name}:{entry.lineno} is killed now ({old.get('killer')}): remove it")
            elif not valid:
                counts["untried"] += 1
            elif old["status"] in ("killed", "timeout"):
                counts[old["status"]] += 1
            else:   # survived, or error
                counts["survived"] += 1
                text = info["lines"][m.line - 1].strip()
                flag = "" if old["status"] == "survived" else f" [{old['status']}: exit {old.get('code')}]"
                survivor_lines.append(f"{module}:{m.line}:{m.col} :: {m.desc} :: {text}{flag}")
        survivors_total += counts["survived"]
        package = "agent" if module in ("dashfloat/agent.py", "dashfloat/conversation.py") else module.split("/")[1]
        total = len(info["mutants"])
        row = [total, counts["killed"], counts["timeout"], counts["equivalent"], counts["survived"], counts["untried"]]
        acc = packages.setdefault(package, [0] * 6)
        for i, v in enumerate(row):
            acc[i] += v
        say(f"{module:36} {total:7} {counts['killed']:7} {counts['timeout']:7} {counts['equivalent']:6} "
            f"{counts['survived']:8} {counts['untried']:7}")
    say("")
    for package, row in packages.items():
        say(f"{'package ' + package:36} {row[0]:7} {row[1]:7} {row[2]:7} {row[3]:6} {row[4]:8} {row[5]:7}")
    if survivor_lines:
        say("")
        say("survivors (path:line:col :: mutation :: source line):")
        for line in survivor_lines:
            say("  " + line)
    modules = set(per_module)
    for entry in reviewed:
        if entry.module in modules and not entry.used:
            say(f"stale: {EQUIVALENT.name}:{entry.lineno} matches no mutant now ({entry.module}:{entry.line})")
    moved = [e for e in reviewed if e.used and getattr(e, "line_now", e.line) != e.line]
    if moved:
        if update:
            text = EQUIVALENT.read_text(encoding="utf-8").splitlines(keepends=True)
            for e in moved:
                text[e.lineno - 1] = text[e.lineno - 1].replace(f"{e.module}:{e.line}:{e.col}",
                                                                f"{e.module}:{e.line_now}:{e.col}", 1)
            EQUIVALENT.write_text("".join(text), encoding="utf-8")
            say(f"updated the line numbers of {len(moved)} entries in {EQUIVALENT.name}")
        else:
            say(f"{len(moved)} entries of {EQUIVALENT.name} moved lines (--update-equivalent rewrites them)")
    say("")
    say(f"surviving mutants: {survivors_total}")
    return 1 if survivors_total else 0


if __name__ == "__main__":
    sys.exit(main())
