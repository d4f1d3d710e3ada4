"""The session figures of issue 9, measured in-process (no pty): resume of a 10 MB and a
100 MB journal (<= 0.3 s, <= 1.5 s), listing 1,000 sessions (<= 100 ms), the memory a resume
takes, and the journal bytes a typical turn adds (median <= 8 KB).

    .venv/bin/python tests/bench/sessions_bench.py [--runs 3] [--big-mb 100]

Journals are written by the real writer (dashfloat/journal.py) with turns shaped like real
ones (a prompt, reasoning, an answer in Markdown, two or three calls with their rows,
decisions, results, a preview); the bytes per turn come from the real Agent running real
tools on a scratch project against a scripted model, questions answered with y.
"""

from __future__ import annotations

import json
import os
import queue
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchtable import HEAD, print_rows  # noqa: E402

from dashfloat import journal as J  # noqa: E402
from dashfloat import messages as M  # noqa: E402
from dashfloat import sessions as S  # noqa: E402

WORDS = ("the loader reads each layer and keeps the first value it finds for every key while "
         "errors name the file and the key so that a user can fix them at once without guessing").split()


def prose(rng: random.Random, n: int) -> str:
    out, size = [], 0
    while size < n:
        w = rng.choice(WORDS)
        out.append(w)
        size += len(w) + 1
    text = " ".join(out)
    return "\n\n".join(text[i:i + 400] for i in range(0, len(text), 400))


def code(rng: random.Random, n: int) -> str:
    lines, size = [], 0
    while size < n:
        line = f"    value_{rng.randrange(10**6)} = compute({rng.randrange(1000)}, key='{rng.choice(WORDS)}')"
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines) + "\n"


def write_journal(path: Path, target_bytes: int, seed: int = 1) -> int:
    """A journal of about `target_bytes` (the file itself), in realistic turns; returns turns."""
    rng = random.Random(seed)
    j = J.Journal(path, {"id": path.stem, "cwd": "/work/project", "model": "bench-model"})
    j.begin(title="make the loader report every bad key")
    turn = 0
    while j.bytes_written < target_bytes:
        turn += 1
        j.event("prompt", turn=turn, text=prose(rng, rng.randrange(80, 400)))
        calls = []
        for k in range(rng.randrange(1, 4)):
            cid = f"call_{turn}_{k}"
            name = rng.choice(("read_file", "read_file", "edit_file", "execute_command", "list_directory"))
            args = {"path": f"src/mod{rng.randrange(40)}.py"}
            if name == "edit_file":
                args.update(search_block=code(rng, 120), replace_block=code(rng, 160))
            if name == "execute_command":
                args = {"command": "pytest -q tests/unit"}
            calls.append((cid, name, args))
        j.event("reasoning", text=prose(rng, rng.randrange(200, 800)))
        j.event("answer", status="done", content=prose(rng, rng.randrange(100, 600)),
                calls=[{"id": c, "name": n, "arguments": json.dumps(a)} for c, n, a in calls])
        for cid, name, args in calls:
            j.ui((M.TOOL_CALL, {"id": cid, "name": name, "summary": f"{name} {args.get('path', '')}"}))
            j.event("decision", id=cid, tool=name, decision="allow", by="mode accept-edits", mode="accept-edits",
                    args_sha256="0" * 64)
        for cid, name, _args in calls:
            if name == "read_file":
                content = json.dumps({"ok": True, "path": "src/x.py", "content": code(rng, rng.randrange(500, 3800)),
                                      "lines": 80, "truncated": False})
            elif name == "execute_command":
                content = json.dumps({"ok": True, "exit_code": 0, "output": prose(rng, rng.randrange(200, 1500))})
            elif name == "edit_file":
                content = json.dumps({"ok": True, "path": "src/x.py", "bytes": 4000, "line": 12})
            else:
                content = json.dumps({"ok": True, "entries": [{"name": f"f{i}.py", "type": "file"} for i in range(30)]})
            details = [["stat", "+3 -2 lines"], ["hunk", "@@ -10,4 +10,5 @@"]] if name == "edit_file" else None
            content = json.dumps(json.loads(content), ensure_ascii=False, separators=(",", ":"))  # as results.encode
            j.result(cid, name, content, **({"details": details} if details else {}))
        j.event("answer", status="done", content=prose(rng, rng.randrange(300, 1500)))
        j.event("turn_end", turn=turn, usage={"total_tokens": 1000 + turn * 50}, tokens=1000 + turn * 50)
    j.close()
    return turn


CHILD = r"""
import sys, time, json
sys.path.insert(0, {root!r})
from pathlib import Path
from dashfloat import sessions as S
import dashfloat.tools.runner  # imported by every real start before this point
t0 = time.perf_counter()
loaded = S.load(Path({path!r}))
t1 = time.perf_counter()
msgs = S.ui_messages(loaded)
t2 = time.perf_counter()
print(json.dumps({{"load": t1 - t0, "ui": t2 - t1, "turns": loaded.turns,
                   "messages": len(loaded.conversation), "shown": len(msgs)}}))
"""

MEMORY = r"""
import sys, json, tracemalloc
sys.path.insert(0, {root!r})
from pathlib import Path
from dashfloat import sessions as S
import dashfloat.tools.runner
tracemalloc.start()
loaded = S.load(Path({path!r}))
msgs = S.ui_messages(loaded)
current, peak = tracemalloc.get_traced_memory()
text = sum(len(m.get("content") or "") + sum(len(c["function"]["arguments"]) for c in m.get("tool_calls") or ())
           for m in loaded.conversation)
print(json.dumps({{"peak": peak, "kept": current, "text": text}}))
"""


def resume_figures(path: Path, runs: int) -> dict:
    """Median over `runs` fresh processes: load (stream the journal: conversation + tail) and
    the screen's messages; the peak RSS growth of the process."""
    out = []
    for _ in range(runs):
        res = subprocess.run([sys.executable, "-c", CHILD.format(root=str(ROOT), path=str(path))],
                             capture_output=True, text=True, check=True)
        out.append(json.loads(res.stdout))
    figures = {k: statistics.median(r[k] for r in out) for k in out[0]}
    res = subprocess.run([sys.executable, "-c", MEMORY.format(root=str(ROOT), path=str(path))],
                         capture_output=True, text=True, check=True)
    figures.update(json.loads(res.stdout))
    return figures


def replay_figure(path: Path) -> float:
    """Drawing the resumed tail into a fresh App and rendering one 80x24 frame."""
    from urwid.testing import render_text

    from dashfloat.history import History
    from dashfloat.ui.app import App
    from dashfloat.ui.bridge import Outbox

    loaded = S.load(path)
    msgs = S.ui_messages(loaded)

    class Silent:
        def send(self, msg):
            pass

    app = App(agent=Silent(), outbox=Outbox(), model_name="m", ascii=False, depth=256, history=History(None))
    t0 = time.perf_counter()
    app.replay(msgs)
    render_text(app.root, (80, 24))
    return time.perf_counter() - t0


def listing_figures(base: Path, runs: int) -> dict:
    env = {"XDG_STATE_HOME": str(base / "state"), "HOME": str(base)}
    rng = random.Random(7)
    for i in range(1000):
        cwd = f"/work/p{i % 10}"
        path = S.project_dir(env, cwd) / f"{i:04x}{rng.randrange(16**12):012x}.jsonl"
        size = rng.choice((2_000, 20_000, 200_000, 1_000_000)) if i % 10 else 5_000
        j = J.Journal(path, {"id": path.stem, "cwd": cwd, "model": "m"})
        j.begin(title=f"session {i}")
        turn = 0
        while j.bytes_written < size:
            turn += 1
            j.event("prompt", turn=turn, text="x" * 300)
            j.event("answer", status="done", content="y" * 1500)
            j.event("turn_end", turn=turn, tokens=turn * 100)
        j.close()
    one, every = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        infos = S.list_sessions(env)
        every.append(time.perf_counter() - t0)
        assert len(infos) == 1000, len(infos)
        t0 = time.perf_counter()
        mine = S.list_sessions(env, "/work/p3")
        one.append(time.perf_counter() - t0)
        assert len(mine) == 100
    t0 = time.perf_counter()
    S.format_listing(infos, with_dirs=True)
    fmt = time.perf_counter() - t0
    return {"all_1000": statistics.median(every), "one_dir_100": statistics.median(one), "format_1000": fmt}


# ---- bytes per turn, from the real agent ---------------------------------------------------


def turn_bytes() -> dict:
    """Run a scripted 12-turn session through the real Agent (real tools on a scratch project,
    every question answered y) and measure what each turn adds to the journal and the store."""
    from dashfloat.agent import Agent
    from dashfloat.llm.client import StreamResult
    from dashfloat.llm.endpoint import Endpoint

    rng = random.Random(3)
    tmp = Path(tempfile.mkdtemp(prefix="df-bench-"))
    proj = tmp / "proj"
    (proj / "src").mkdir(parents=True)
    for i in range(6):
        (proj / "src" / f"mod{i}.py").write_text(code(rng, rng.choice((1500, 3000, 6000, 12000))))

    def episode(content="", calls=()):
        return (content, list(calls))  # calls: (name, args) or a function that makes one now

    def materialize(spec) -> StreamResult:
        content, calls = spec
        made = [c() if callable(c) else c for c in calls]
        return StreamResult(content=content, reasoning=prose(rng, 400), tool_calls=[
            {"id": f"c{rng.randrange(10**9)}", "name": n, "args": a, "error": None} for n, a in made],
            finish_reason="tool_calls" if made else "stop", usage={"total_tokens": rng.randrange(2000, 30000)},
            cancelled=False)

    def read(i):
        return ("read_file", {"path": f"src/mod{i}.py"})

    def edit(i):
        def make():
            text = (proj / "src" / f"mod{i}.py").read_text().splitlines()
            line = text[rng.randrange(len(text))]
            return ("edit_file", {"path": f"src/mod{i}.py", "search_block": line, "replace_block": line + "  # checked"})
        return make

    turns = [
        [episode(prose(rng, 1200))],
        [episode(calls=[read(0), read(1)]), episode(prose(rng, 900))],
        [episode(calls=[edit(0)]), episode(prose(rng, 500))],
        [episode(calls=[("write_file", {"path": "src/new.py", "content": code(rng, 2000)})]), episode(prose(rng, 400))],
        [episode(calls=[("execute_command", {"command": "ls -la src; wc -l src/*.py"})]), episode(prose(rng, 600))],
        [episode(calls=[read(2)]), episode(calls=[edit(2)]), episode(prose(rng, 700))],
        [episode(calls=[("list_directory", {"path": "src"}), read(3)]), episode(prose(rng, 800))],
        [episode(prose(rng, 1500))],
        [episode(calls=[read(0)]), episode(calls=[edit(0), edit(1)]), episode(prose(rng, 500))],
        [episode(calls=[("execute_command", {"command": "seq 1 700"})]), episode(prose(rng, 300))],
        [episode(calls=[read(4), read(5)]), episode(prose(rng, 1000))],
        [episode(calls=[edit(3)]), episode(prose(rng, 400))],
    ]
    script: queue.SimpleQueue = queue.SimpleQueue()

    def stream(endpoint, model, messages, *, on_event, cancel, **kw):
        r = materialize(script.get_nowait())
        on_event(("reasoning", r.reasoning))
        if r.content:
            on_event(("content", r.content))
        return r

    posted: queue.SimpleQueue = queue.SimpleQueue()
    path = tmp / "state" / "bench.jsonl"
    j = J.Journal(path, {"id": "bench", "cwd": str(proj), "model": "m"})
    agent = Agent(Endpoint(base_url="http://127.0.0.1:9/v1"), "m", posted.put, stream_fn=stream, root=str(proj),
                  journal=j, git_report=False)
    agent.start()

    def until_idle():
        while True:
            m = posted.get(timeout=20)
            if m[0] == M.CONFIRM:
                agent.send((M.CONFIRM_DECISION, m[1], "approved"))
            if m[0] == M.USAGE:
                return

    def store_size():
        return sum(f.stat().st_size for f in j.store.path.rglob("*") if f.is_file()) if j.store.path.exists() else 0

    sizes, store = [], []
    for i, eps in enumerate(turns):
        for ep in eps:
            script.put(ep)
        before = path.stat().st_size if path.exists() else 0
        store_before = store_size()
        agent.send((M.PROMPT, f"turn {i + 1}: " + prose(rng, 150)))
        until_idle()
        deadline = time.monotonic() + 5
        while True:  # the turn_end event follows the usage message
            lines = path.read_bytes().splitlines()
            if json.loads(lines[-1])["type"] == "turn_end" or time.monotonic() > deadline:
                break
            time.sleep(0.005)
        sizes.append(path.stat().st_size - before)
        store.append(store_size() - store_before)
    agent.send((M.QUIT,))
    agent.join(5)
    loaded = S.load(path)
    assert len(loaded.conversation) == len(agent.messages) and not loaded.notes
    return {"per_turn": sizes, "median": statistics.median(sizes), "max": max(sizes), "store": store,
            "first_includes_header": True}


def run(runs: int = 3, big_mb: int = 100) -> list[tuple[str, str, str, str]]:
    """Every figure as (label, value, target, verdict) rows."""
    rows = []
    base = Path(tempfile.mkdtemp(prefix="df-sessions-"))
    tb = turn_bytes()
    rows.append(("journal bytes per turn, median (12 real turns)", f"{tb['median'] / 1024:.1f} KiB", "<= 8 KB",
                 "ok" if tb["median"] <= 8000 else "OVER"))
    rows.append(("journal bytes per turn, largest", f"{tb['max'] / 1024:.1f} KiB", "-", "-"))
    rows.append(("store bytes per turn (long texts, /undo), median", f"{statistics.median(tb['store']) / 1024:.1f} KiB",
                 "-", "-"))
    for mb, target in ((10, 0.3), (big_mb, 1.5)):
        path = base / f"j{mb}.jsonl"
        t0 = time.perf_counter()
        turns = write_journal(path, mb * 1_000_000)
        wrote = time.perf_counter() - t0
        f = resume_figures(path, runs)
        size = path.stat().st_size / 1e6
        rows.append((f"resume of a {size:.0f} MB journal ({turns:,} turns): load + screen",
                     f"{f['load'] + f['ui']:.3f} s", f"<= {target} s", "ok" if f["load"] + f["ui"] <= target else "OVER"))
        rows.append((f"  of which building the screen's {f['shown']:,} messages", f"{f['ui']:.3f} s", "-", "-"))
        rows.append((f"  peak memory of the load ({f['messages']:,} messages, {f['text'] / 1e6:.0f} M characters of text)",
                     f"{f['peak'] / 2**20:.0f} MiB (kept {f['kept'] / 2**20:.0f})", "-", "-"))
        rows.append((f"  writing it ({turns * 10:,} events or so)", f"{wrote:.2f} s", "-", "-"))
        if mb == 10:
            rows.append(("  drawing the tail again in the App + a frame", f"{replay_figure(path):.3f} s", "-", "-"))
    lf = listing_figures(base / "listing", runs)
    rows.append(("listing 1,000 sessions (every directory)", f"{lf['all_1000'] * 1000:.0f} ms", "<= 100 ms",
                 "ok" if lf["all_1000"] <= 0.1 else "OVER"))
    rows.append(("listing one directory's 100 of them", f"{lf['one_dir_100'] * 1000:.0f} ms", "-", "-"))
    import shutil

    shutil.rmtree(base, ignore_errors=True)
    return rows


def main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--big-mb", type=int, default=100)
    args = ap.parse_args(argv)
    print(f"session figures: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; "
          f"peak RSS of this process {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MiB")
    missed = print_rows([HEAD, *run(args.runs, args.big_mb)])
    print(f"session figures missing their target: {missed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
