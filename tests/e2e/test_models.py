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
    assert body["messages"] == [{"role": "user", "content": "which model?"}]
