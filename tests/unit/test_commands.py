"""The slash-command table (dashfloat/commands.py) and everything it drives: the agent's
dispatch, /help, the F1 overlay, the man page and the README."""

from __future__ import annotations

import queue
import re
import threading
from pathlib import Path

import pytest

from dashfloat import commands
from dashfloat import messages as M
from dashfloat.agent import Agent
from dashfloat.llm.errors import ChatError
from tests.unit.test_agent import ENDPOINT, Outbox, result

README = Path(__file__).resolve().parents[2] / "README.md"
NAMES = [c.name for c in commands.COMMANDS]


# ---- what is a command ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, parsed",
    [
        ("/help", ("help", "")),
        ("/model gpt-4o", ("model", "gpt-4o")),
        ("/model   llama3.2:latest  ", ("model", "llama3.2:latest")),
        ("/permissions revoke 2", ("permissions", "revoke 2")),
        ("/Model X", ("model", "X")),
        ("/model\nx", ("model", "x")),
        ("/hepl", ("hepl", "")),  # unknown, but a command: never sent to the model
        ("/foo bar baz", ("foo", "bar baz")),
        ("/tmp", ("tmp", "")),  # a slash word without a further slash is a command name
        ("/etc/hosts is broken", None),  # a path: a prompt
        ("/usr/bin/python crashes", None),
        ("/a/b", None),
        ("/x.py is wrong", None),
        ("/tmp, is it full?", None),
        ("/ what", None),
        ("/1 or 2", None),
        ("//tmp", None),
        (" /tmp is full", None),  # a leading space: always a prompt
        ("hello /model", None),
        ("", None),
    ],
)
def test_what_is_a_command(text, parsed):
    assert commands.parse(text) == parsed


def test_the_table_is_complete_and_every_command_has_a_handler():
    assert NAMES == ["help", "clear", "compact", "usage", "model", "mode", "permissions", "undo", "copy", "sessions", "quit"]
    for cmd in commands.COMMANDS:
        assert callable(getattr(Agent, f"_{cmd.name}_command")), cmd.name
        assert cmd.help.endswith(".") and cmd.help[0].isupper()
    handlers = {n[1 : -len("_command")] for n in dir(Agent) if n.startswith("_") and n.endswith("_command")}
    assert handlers == set(NAMES), "a handler without a row in the table (or the reverse)"


def test_help_text_lists_every_command_with_its_arguments():
    text = commands.help_text()
    for usage in ("/help", "/clear", "/compact [FOCUS]", "/usage", "/model [NAME]", "/mode [NAME]",
                  "/permissions [revoke N]", "/undo [N]", "/sessions", "/quit"):
        assert re.search(rf"^  {re.escape(usage)}\s", text, re.MULTILINE), usage


def test_unknown_text_says_so_and_suggests():
    assert commands.unknown_text("foo").startswith("Unknown command /foo; /help lists them.")
    assert "Did you mean /help?" in commands.unknown_text("hepl")
    assert "Did you mean" not in commands.unknown_text("foo")
    assert "begin it with a space" in commands.unknown_text("tmp")


def test_the_man_page_and_the_readme_list_every_command():
    from dashfloat import manpage

    page = manpage.generate()
    assert ".SH COMMANDS" in page
    section = page.split(".SH COMMANDS", 1)[1].split(".SH ", 1)[0]
    assert section.strip().endswith(commands.man_section().strip())
    for name in NAMES:
        assert f"\\fB/{name}\\fR" in section, name
    readme = README.read_text(encoding="utf-8")
    for cmd in commands.COMMANDS:
        assert f"`{commands.usage(cmd)}`" in readme, f"README.md does not list {commands.usage(cmd)}"


def test_the_help_overlay_has_a_commands_section():
    from urwid.testing import render_text

    from dashfloat.ui.widgets import help_widget

    text = "\n".join(render_text(help_widget(False), (100, 200)))
    assert "Commands (at the start of a prompt)" in text
    for usage, help_ in commands.help_rows():
        assert re.search(rf"{re.escape(usage)}\s+{re.escape(help_[:30])}", text), usage


# ---- the agent ------------------------------------------------------------------------------


def start(models=None, **kw):
    """An agent whose endpoint lists `models` (a list, an exception to raise, or a callable)."""
    asked = []

    def list_models(ep):
        asked.append(ep)
        if callable(models):
            return models()
        if isinstance(models, BaseException):
            raise models
        return list(models or [])

    streams = []

    def stream(endpoint, model, messages, *, on_event, cancel, **k):
        streams.append((model, messages))
        return result("answered")

    out = Outbox()
    model = kw.pop("model", "m")
    agent = Agent(ENDPOINT, model, out.post, stream_fn=stream, list_models_fn=list_models, **kw)
    agent.start()
    out.wait(lambda m: m == (M.MODEL, model))  # the start-up is over: the policy exists
    return agent, out, streams, asked


def after(out, mark, pred):
    return out.wait(lambda m: pred(m) and m in out.seen[mark:])


def entry(out, mark, level=None):
    return after(out, mark, lambda m: m[0] == M.SYSTEM and (level is None or m[1] == level))[2]


def idle(out, mark):
    after(out, mark, lambda m: m == (M.PHASE, "idle"))


def test_help_is_an_info_entry_listing_every_command():
    agent, out, streams, _ = start()
    mark = len(out.seen)
    agent.send((M.PROMPT, "/help"))
    text = entry(out, mark, "info")
    assert text == commands.help_text()
    assert streams == [] and not any(m[0] == M.USER for m in out.seen)


@pytest.mark.parametrize("text", ["/foo", "/hepl", "/tmp", "/Foo bar"])
def test_an_unknown_command_is_an_error_entry_and_never_reaches_the_model(text):
    agent, out, streams, _ = start()
    mark = len(out.seen)
    agent.send((M.PROMPT, text))
    err = entry(out, mark, "error")
    name = text.split()[0][1:].lower()
    assert err.startswith(f"Unknown command /{name}; /help lists them.")
    agent.send((M.PROMPT, "/help"))  # the agent is still idle and answering
    entry(out, len(out.seen), "info")
    assert streams == [] and agent.messages == []


@pytest.mark.parametrize("text", ["/etc/hosts is broken", "/usr/bin/x --version crashes", " /tmp is full"])
def test_a_prompt_that_starts_with_a_path_goes_to_the_model(text):
    agent, out, streams, _ = start()
    agent.send((M.PROMPT, text))
    out.wait_kind(M.ASSISTANT_END, "done")
    assert streams[0][1][1:] == [{"role": "user", "content": text}]  # after the system message


def test_model_name_in_the_list_is_set():
    agent, out, streams, asked = start(["alpha", "beta"])
    mark = len(out.seen)
    agent.send((M.PROMPT, "/model beta"))
    after(out, mark, lambda m: m == (M.MODEL, "beta"))
    assert entry(out, mark, "info") == "Model set to beta."
    idle(out, mark)
    assert agent.model == "beta" and len(asked) == 1


def test_model_name_not_in_the_list_is_refused_with_the_closest():
    models = ["gpt-4o", "gpt-4o-mini", "gpt-4.1", "o3-mini", "text-embedding-3-small"]
    agent, out, streams, _ = start(models, model="gpt-4o-mini")
    mark = len(out.seen)
    agent.send((M.PROMPT, "/model gpt-4p"))
    err = entry(out, mark, "error")
    assert "has no model 'gpt-4p'" in err
    assert "Closest: gpt-4o" in err and "text-embedding" not in err
    assert "/model lists all 5" in err and "The model stays gpt-4o-mini." in err
    idle(out, mark)
    assert agent.model == "gpt-4o-mini" and not any(m[0] == M.MODEL for m in out.seen[mark:])


def test_an_ollama_name_without_its_latest_tag_is_accepted():
    agent, out, _, _ = start(["llama3.2:latest", "qwen2.5-coder:7b"])
    mark = len(out.seen)
    agent.send((M.PROMPT, "/model llama3.2"))
    after(out, mark, lambda m: m == (M.MODEL, "llama3.2"))
    mark = len(out.seen)
    agent.send((M.PROMPT, "/model qwen2.5-coder"))  # no :latest listed: a different model
    assert "Closest: qwen2.5-coder:7b" in entry(out, mark, "error")


@pytest.mark.parametrize(
    "models, says",
    [
        (ChatError("not_found", "the endpoint has no model list (404)", ""), "the endpoint's model list is not available"),
        (SystemExit(1), "the model list failed: SystemExit"),
        ([], "lists no models"),
    ],
    ids=["404", "crash", "empty"],
)
def test_model_is_accepted_with_a_warning_when_the_list_is_unavailable(models, says):
    agent, out, _, _ = start(models)
    mark = len(out.seen)
    agent.send((M.PROMPT, "/model my-model"))
    after(out, mark, lambda m: m == (M.MODEL, "my-model"))
    warn = entry(out, mark, "warn")
    assert warn.startswith("Model set to my-model, unchecked") and says in warn
    idle(out, mark)


def test_a_slow_model_check_can_be_cancelled_and_its_late_answer_is_ignored():
    release = threading.Event()
    answered = queue.SimpleQueue()

    def slow():
        release.wait(5)
        answered.put(True)
        return ["other"]

    agent, out, _, _ = start(slow)
    mark = len(out.seen)
    agent.send((M.PROMPT, "/model other"))
    after(out, mark, lambda m: m == (M.PHASE, "waiting"))
    agent.send((M.CANCEL,))
    assert entry(out, mark, "info") == "Stopped checking model other; the model stays m."
    idle(out, mark)
    release.set()
    answered.get(timeout=5)
    mark = len(out.seen)
    agent.send((M.PROMPT, "/help"))  # handled after the late answer
    entry(out, mark)
    assert agent.model == "m" and not any(m[0] == M.MODEL and m[1] == "other" for m in out.seen)


def test_model_takes_one_name():
    agent, out, _, asked = start(["a"])
    mark = len(out.seen)
    agent.send((M.PROMPT, "/model a b"))
    assert entry(out, mark, "error") == "/model takes one model name, not 'a b'."
    assert asked == []


def add_rules(agent, n):
    for i in range(n):
        agent.policy.allow_exact("execute_command", {"command": f"make t{i}"})


@pytest.mark.parametrize(
    "rules, arg, says",
    [
        (2, "5", "There is no session rule 5: there are 2 (see /permissions)."),
        (1, "2", "There is no session rule 2: there is 1 (see /permissions)."),
        (2, "0", "There is no session rule 0: there are 2 (see /permissions)."),
        (0, "1", "There are no session rules to revoke (the a key on a confirmation adds one; "
                 "/permissions lists the rules)."),
        (0, "", "There are no session rules to revoke"),
        (2, "", "/permissions revoke N: N is a session rule's number, 1 to 2 (see /permissions)."),
        (2, "x", "/permissions revoke N: N is a session rule's number, 1 to 2 (see /permissions)."),
        (2, "-1", "/permissions revoke N: N is a session rule's number, 1 to 2 (see /permissions)."),
        (2, "1 2", "/permissions revoke N: N is a session rule's number, 1 to 2 (see /permissions)."),
    ],
)
def test_permissions_revoke_out_of_range_says_so_plainly(rules, arg, says):
    agent, out, _, _ = start()
    add_rules(agent, rules)
    mark = len(out.seen)
    agent.send((M.PROMPT, f"/permissions revoke {arg}".rstrip()))
    assert entry(out, mark, "error").startswith(says)
    assert len(agent.policy.session_rules()) == rules


def test_permissions_revoke_n_removes_that_rule():
    agent, out, _, _ = start()
    add_rules(agent, 3)
    mark = len(out.seen)
    agent.send((M.PROMPT, "/permissions revoke 2"))
    assert entry(out, mark, "info") == "Revoked session rule 2: execute_command(make t1)"
    assert [r.text for r in agent.policy.session_rules()] == ["execute_command(make t0)", "execute_command(make t2)"]


def test_permissions_with_an_unknown_argument_is_an_error():
    agent, out, _, _ = start()
    mark = len(out.seen)
    agent.send((M.PROMPT, "/permissions list"))
    assert entry(out, mark, "error").startswith("/permissions does not take 'list'")


def test_help_is_a_line_per_command_within_80_columns_and_help_name_tells_one_in_full():
    from dashfloat import commands as C

    listing = C.help_text().split("\n")
    rows = listing[1:-1]
    assert len(rows) == len(C.COMMANDS), "one row per command"
    assert all(len("  " + row) <= 80 for row in rows), "an entry's rows fit 80 columns with its indent"
    assert len(listing) <= 20, "the list fits a 24-row screen with the status bar and the prompt"
    full = C.help_text("copy")
    assert full.startswith("/copy [N]\n") and C.lookup("copy").help in full
    assert C.help_text("/undo").startswith("/undo [N]")
    unknown = C.help_text("nope").split("\n")
    assert unknown[0] == "No command /nope." and unknown[1:] == listing
