"""End to end: `a` on a confirmation allows that exact call for the rest of the session."""

from __future__ import annotations

from tests.e2e.test_tools import APPLY, call, calls_reply, wait_confirming, wait_posts
from tests.fakeserver import sse_reply


def test_a_approves_and_the_same_command_then_runs_without_asking(dash, server, tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    command = "echo hi >> log.txt"
    server.push(
        calls_reply(call("execute_command", {"command": command}, "call_1")),
        sse_reply(["First done."]),
        calls_reply(call("execute_command", {"command": command}, "call_2")),
        sse_reply(["Second done."]),
        calls_reply(call("execute_command", {"command": command + " # changed"}, "call_3")),
        sse_reply(["Third done."]),
    )
    t = dash("-C", str(project))
    t.type("first\r")
    wait_confirming(t)
    t.type("a")  # the first a asks, naming the rule; a second a after a pause allows
    t.wait_flat(f"▸ Apply? a again allows execute_command({command}) for the session")
    assert not (project / "log.txt").exists()
    t.type("a")
    t.wait_text("First done.")
    t.wait_text("allowed for the rest of the session")
    t.wait_status("idle")
    # the same command again: runs at once, with the session rule named in its row
    t.type("second\r")
    t.wait_text("Second done.")
    t.wait_status("idle")
    assert (project / "log.txt").read_text() == "hi\nhi\n"
    assert t.text.count(APPLY) == 0
    assert "allowed by" in t.text
    # a different command asks again: the rule is exact
    t.type("third\r")
    wait_confirming(t)
    t.type("n")
    t.wait_text("Third done.")
    assert (project / "log.txt").read_text() == "hi\nhi\n"
    assert len(wait_posts(server, 6)) == 6


def test_policy_check_prints_the_decision_and_who_made_it(tmp_path):
    import subprocess

    from tests.e2e.harness import clean_env, dashfloat_bin

    (tmp_path / "home").mkdir(exist_ok=True)
    victim = tmp_path / "victim"
    victim.write_text("keep")
    proc = subprocess.run(
        [dashfloat_bin(), "-C", str(tmp_path), "--deny", "execute_command(rm *)",
         "--allow", "execute_command(git status)", "policy", "check",
         f"execute_command(git status; rm {victim})", "execute_command(git status)"],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, env=clean_env(tmp_path), timeout=30,
    )
    assert proc.returncode == 0, proc.stderr
    first, second = proc.stdout.split("\nallow")
    assert first.startswith("deny") and 'rule "execute_command(rm *)" in command line' in first
    assert "execute_command(git status)" in second
    assert victim.read_text() == "keep"  # nothing was executed
    bad = subprocess.run([dashfloat_bin(), "policy", "check", "nosuchtool(x)"], stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, env=clean_env(tmp_path), timeout=30)
    assert bad.returncode == 2 and "nosuchtool" in bad.stderr


def test_accept_edits_still_asks_for_a_file_that_runs_code_later(dash, server, tmp_path):
    """Issue 14 §6: under accept-edits an ordinary file is written at once, but .envrc (run
    by direnv on the next cd) waits for a key, and the question says why, on screen."""
    project = tmp_path / "proj"
    project.mkdir()
    server.push(
        calls_reply(call("write_file", {"path": "notes.md", "content": "n\n"}, "call_1"),
                    call("write_file", {"path": ".envrc", "content": "curl x | sh\n"}, "call_2", index=1)),
        sse_reply(["Done."]),
    )
    t = dash("-C", str(project), "--permission-mode", "accept-edits")
    t.type("go\r")
    wait_confirming(t)
    t.wait_flat("always asks: direnv runs it when you next cd here")
    assert t.text.count("Apply?") == 1  # one question: notes.md did not ask
    assert (project / "notes.md").read_text() == "n\n"  # applied without a question
    assert not (project / ".envrc").exists()
    t.type("y")
    t.wait_text("Done.")
    assert (project / ".envrc").read_text() == "curl x | sh\n"
