"""End to end: model discovery through GET /models when no model is given, and /model."""

from __future__ import annotations

from tests.fakeserver import sse_reply


def posts(server) -> list[dict]:
    return [r for r in server.requests if r["method"] == "POST"]


def test_single_model_is_picked_up(dash, server):
    server.models = ["only-model-here"]
    server.push(sse_reply(["Hi ", "from the only model."]))
    t = dash(model=None, wait=False)
    t.wait_for(lambda t: " idle " in t.status() and " only-model-here " in t.status(),
               timeout=15, what="the discovered model in the status bar")
    assert any(r["method"] == "GET" and r["path"] == "/v1/models" for r in server.requests)
    t.type("hello\r")
    t.wait_text("from the only model.")
    assert posts(server)[0]["json"]["model"] == "only-model-here"


def test_several_models_listed_then_chosen_with_slash_model(dash, server):
    server.models = ["a", "b", "model-c"]
    t = dash(model=None, wait=False)
    t.wait_for(lambda t: "/model NAME" in t.flat and " idle " in t.status(), timeout=15,
               what="a system entry listing the models")
    assert "a, b, model-c" in t.flat, t.dump()
    assert "no model" in t.status(), "nothing chosen yet"

    t.type("/model b\r")
    t.wait_for(lambda t: "│ b " in t.status(), what="model b in the status bar")
    assert "no model" not in t.status()
    assert posts(server) == [], "/model is a command, not a chat message"

    server.push(sse_reply(["Answered ", "by b."]))
    t.type("which model?\r")
    t.wait_text("Answered by b.")
    t.wait_status("idle")
    body = posts(server)[0]["json"]
    assert body["model"] == "b"
    assert body["messages"][1:] == [{"role": "user", "content": "which model?"}]


def test_slash_commands_help_unknown_model_check_and_a_path_prompt(dash, server):
    """In the real program: /help lists the commands, an unknown /word is an error entry
    that reaches no model, /model refuses a name the endpoint does not list, a prompt that
    starts with a path is a prompt, and /permissions revoke out of range says so."""
    from dashfloat import commands

    server.models = ["test-model", "other-model"]
    t = dash(rows=60)  # the whole list on screen (it is longer than 24 rows)
    t.type("/help\r")
    t.wait_flat("a prompt that starts with a space is sent as it is.")  # its last line: all of it is drawn
    for cmd in commands.COMMANDS:
        assert commands.usage(cmd) in t.flat, commands.usage(cmd)
    t.type("/hepl\r")
    t.wait_flat("Unknown command /hepl; /help lists them. Did you mean /help?")
    t.type("/model other-modle\r")
    t.wait_flat("has no model 'other-modle'. Closest: other-model")
    t.wait_status("idle")
    assert " test-model " in t.status()
    t.type("/permissions revoke 3\r")
    t.wait_flat("There are no session rules to revoke")
    assert posts(server) == [], "commands never reach the model"

    server.push(sse_reply(["Looked at ", "the hosts file."]))
    t.type("/etc/hosts is broken\r")
    t.wait_text("the hosts file.")
    t.wait_status("idle")
    (body,) = [p["json"] for p in posts(server)]
    assert body["messages"][1:] == [{"role": "user", "content": "/etc/hosts is broken"}]
