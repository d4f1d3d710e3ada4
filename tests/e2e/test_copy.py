"""/copy (issue 15 §4): the last answer or one of its code blocks reaches the terminal's
clipboard as an OSC 52 sequence (base64 of the text, in the bytes on the pty) and the copy
file (0600, its path on screen); while an answer streams it copies the finished one; inside
tmux (its default configuration) the text reaches tmux's buffer and the outer terminal."""

from __future__ import annotations

import base64
import os
import shutil
import stat
import subprocess
import threading

import pytest

from tests.e2e.conftest import wait_ready
from tests.e2e.harness import clean_env, dashfloat_bin
from tests.fakeserver import sse_reply

ANSWER = ("Two ways:\n\n```python\nimport os\nprint(os.getcwd())\n```\n\n"
          "- or in a shell:\n\n  ```sh\n  pwd\n  ```\n")


def pieces(text: str, n: int = 7) -> list[str]:
    return [text[i : i + n] for i in range(0, len(text), n)]


def osc52(text: str) -> bytes:
    return b"\x1b]52;c;" + base64.b64encode(text.encode()) + b"\x07"


def flat(t) -> str:
    """The screen's text with wrapped lines joined (entries wrap at the terminal's width)."""
    return " ".join(line.strip() for line in t.lines if line.strip())


def copy_file(tmp_path):
    return tmp_path / "state" / "dashfloat" / "copy.txt"


def test_copy_the_answer_a_block_and_the_list(dash, server, tmp_path):
    server.push(sse_reply(pieces(ANSWER)))
    t = dash()
    t.type("/copy\r")
    t.wait_text("Nothing to copy: no answer yet in this session.")
    t.type("where am I?\r")
    t.wait_text("pwd")
    t.wait_status("idle")

    t.type("/copy\r")
    t.wait_text("Copied the last answer (")
    whole = ANSWER.rstrip()
    t.wait_for(lambda t: osc52(whole) in t.raw, what="the OSC 52 sequence of the answer")
    path = copy_file(tmp_path)
    assert path.read_text() == whole
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    t.wait_for(lambda t: "copy.txt" in t.text, what="the file's path on screen")

    t.type("/copy 2\r")
    t.wait_text("Copied code block 2 (sh, 3 characters, 1 line)")
    t.wait_for(lambda t: osc52("pwd") in t.raw, what="the OSC 52 sequence of block 2")
    assert path.read_text() == "pwd"

    t.type("/copy list\r")
    t.wait_text("1. python, 2 lines: import os")
    t.wait_text("2. sh, 1 line: pwd")
    t.type("/copy 3\r")
    t.wait_text("The last answer has 2 code blocks, not 3")
    assert path.read_text() == "pwd", "a refused /copy leaves the file as it was"


def test_copy_while_an_answer_streams_copies_the_finished_one(dash, server, tmp_path):
    go_on = threading.Event()
    server.push(sse_reply(pieces("First answer, done.")),
                sse_reply(["Second ", "answer ", "still ", "coming", "... and now finished."], waits={4: go_on}))
    t = dash()
    t.type("one\r")
    t.wait_text("First answer, done.")
    t.wait_status("idle")
    t.type("two\r")
    t.wait_text("answer still")
    t.type("/copy\r")  # taken while the turn runs, not refused
    t.wait_text("/copy again when it ends")
    assert copy_file(tmp_path).read_text() == "First answer, done."
    assert osc52("First answer, done.") in t.raw
    assert " streaming " in t.status() or " waiting " in t.status()
    go_on.set()
    t.wait_text("and now finished.")
    t.wait_status("idle")
    t.type("/copy\r")
    t.wait_for(lambda t: copy_file(tmp_path).exists()
               and copy_file(tmp_path).read_text() == "Second answer still coming... and now finished.",
               what="the second answer in the copy file")


def test_too_long_for_osc52_goes_to_the_file_only_and_says_so(dash, server, tmp_path):
    from dashfloat.copyout import OSC52_MAX

    big = "```\n" + "\n".join("x" * 99 for _ in range(OSC52_MAX // 100)) + "\n```\n\nTHE END"
    server.push(sse_reply(pieces(big, 4000)))
    t = dash()
    t.type("big\r")
    t.wait_text("THE END", timeout=30)
    t.wait_status("idle")
    t.type("/copy 1\r")
    t.wait_for(lambda t: "carries at most 73 KiB): the file has it whole." in flat(t), 15, "the entry")
    assert b"\x1b]52;" not in t.raw
    assert copy_file(tmp_path).read_text() == big.split("\n", 1)[1].split("\n```", 1)[0]


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_inside_tmux_with_its_defaults_the_text_reaches_tmux_and_the_outer_terminal(spawn, server, tmp_path):
    server.push(sse_reply(pieces(ANSWER)))
    sock = tmp_path / "tmux.sock"
    env = clean_env(tmp_path)
    env.pop("TMUX", None)
    # -f /dev/null: tmux's defaults (set-clipboard external, allow-passthrough off), under
    # which a program's own OSC 52 is dropped
    t = spawn(["tmux", "-S", str(sock), "-f", "/dev/null", "new-session",
               dashfloat_bin(), "--base-url", server.url, "--model", "test-model"], env=env)
    try:
        wait_ready(t)
        t.type("where am I?\r")
        t.wait_text("pwd")
        t.wait_status("idle")
        t.type("/copy 1\r")
        t.wait_text("tmux load-buffer -w")
        code = "import os\nprint(os.getcwd())"
        t.wait_for(lambda t: base64.b64encode(code.encode()) in t.raw, what="tmux's OSC 52 to the outer terminal")
        shown = subprocess.run(["tmux", "-S", str(sock), "show-buffer"], capture_output=True, env=env, timeout=10)
        assert shown.stdout.decode() == code
        assert copy_file(tmp_path).read_text() == code
    finally:
        subprocess.run(["tmux", "-S", str(sock), "kill-server"], capture_output=True, env=env, timeout=10)
        if os.path.exists(sock):
            os.unlink(sock)


def test_headless_copy_writes_the_file_and_no_escape_sequence(server, tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    server.push(sse_reply(["The ", "answer."]))
    env = clean_env(tmp_path, TERM="dumb")
    base = [dashfloat_bin(), "--base-url", server.url, "--model", "test-model", "-C", str(project)]
    first = subprocess.run(base + ["-p", "hi"], capture_output=True, env=env, timeout=30)
    assert first.returncode == 0 and first.stdout == b"The answer.\n", first.stderr
    done = subprocess.run(base + ["--continue", "-v", "-p", "/copy"], capture_output=True, env=env, timeout=30)
    err = done.stderr.decode()
    assert done.returncode == 0, err
    path = copy_file(tmp_path)
    assert f"Copied the last answer (11 characters, 1 line) to {path}." in err
    assert b"\x1b]52" not in done.stdout + done.stderr
    assert path.read_text() == "The answer."
