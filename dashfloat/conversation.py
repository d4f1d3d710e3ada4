"""The conversation sent to the model, and the tool-pairing invariant that guards it.

Every assistant message with `tool_calls` must be followed by exactly one `role: "tool"`
message per call, in call order, before anything else. Providers reject a conversation
that breaks this (a 400 that then repeats on every request), so `repair()` runs before
every request: it synthesises results for unanswered calls, drops orphaned and duplicate
tool messages, and puts results in call order. Pure functions, no I/O.
"""

from __future__ import annotations

from dashfloat import wire
from dashfloat.tools import results


def assistant_message(content: str, calls: list[dict]) -> dict:
    """The canonical assistant message: arguments re-encoded as a JSON string, and
    `"content"` always present, a string: `""` when the model said nothing but called tools.

    No one form is accepted everywhere; `""` is the one every server below accepts but the
    last, while `null` and a missing key each break several of them:

    | server                   | content null         | content ""         | key missing            | source |
    | ------------------------ | -------------------- | ------------------ | ---------------------- | ------ |
    | OpenAI, Azure OpenAI     | ok                   | ok                 | ok with tool_calls     | API reference ("required unless tool_calls") |
    | vLLM                     | ok                   | ok                 | ok                     | entrypoints/chat_utils.py parse_chat_message_content |
    | Ollama /v1               | ok with tool_calls   | ok                 | ok with tool_calls     | openai/openai.go FromChatRequest |
    | llama.cpp server         | ok                   | ok                 | error "Expected 'content'" | common/chat.cpp common_chat_msgs_parse_oaicompat |
    | llama-cpp-python         | HTTP 500 (validation: content is `str`) | ok | crash after the 200: empty body | llama_types.py, server/errors.py |
    | LM Studio                | "'content' field must be a string or an array of objects" | ok | - | lmstudio-bug-tracker #261 |
    | xAI (Grok)               | refused (2024)       | ok                 | refused                | pipecat-ai/pipecat #646 |
    | Mistral                  | ok in its OpenAPI schema; refused by mistral-common's server | ok | - | mistral-common #324 |
    | DeepSeek                 | ok                   | ok                 | -                      | agentjido/req_llm #966 (tried live) |
    | LiteLLM proxy 1.108      | passed on WITHOUT the key | passed on as "" | passed on without it | measured: tests/e2e/test_litellm.py |
    | Bedrock's OpenAI-compatible endpoint, Anthropic models | ok | 400 "text content blocks must be non-empty" | - | vercel/ai #13466 (req_llm #966 saw "" accepted) |

    LiteLLM drops a null content before it calls the model's server, so a null sent through
    it reaches a llama.cpp behind it as a missing key; it rewrites an empty text itself for
    Anthropic and Bedrock models. For the last row, llm/client.py answers that 400 by
    sending the same conversation once more with `null` in those messages, and keeps
    sending null to that endpoint. A message with neither text nor calls is never recorded
    (the agent reports "[model returned nothing]"): Anthropic-backed servers refuse an
    empty assistant turn in any form.
    """
    msg: dict = {"role": "assistant", "content": content or ""}
    if calls:
        msg["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {
                    "name": c.get("name") or "",
                    "arguments": wire.dumps(c["args"]) if c.get("args") is not None else "{}",
                },
            }
            for c in calls
        ]
    return msg


def tool_message(call_id: str, result: dict) -> dict:
    return {"role": "tool", "tool_call_id": call_id, "content": results.encode(result)}


def repair(messages: list[dict]) -> tuple[list[dict], list[str]]:
    """Return (a conversation that keeps the pairing invariant, what was repaired)."""
    out: list[dict] = []
    notes: list[str] = []
    i = 0
    n = len(messages)
    while i < n:
        msg = messages[i]
        role = msg.get("role")
        if role == "tool":
            notes.append(f"dropped a tool result for unknown call {msg.get('tool_call_id')!r}")
            i += 1
            continue
        out.append(msg)
        i += 1
        calls = (msg.get("tool_calls") or []) if role == "assistant" else []
        if not calls:
            continue
        ids = [c.get("id") for c in calls]
        answers: dict[str, dict] = {}
        while i < n and messages[i].get("role") == "tool":
            tm = messages[i]
            tid = tm.get("tool_call_id")
            if tid in ids and tid not in answers:
                answers[tid] = tm
            elif tid in answers:
                notes.append(f"dropped a second result for call {tid!r}")
            else:
                notes.append(f"dropped a tool result for unknown call {tid!r}")
            i += 1
        answered_order = [cid for cid in answers]
        if answered_order != [cid for cid in ids if cid in answers]:
            notes.append("put tool results back in call order")
        for cid in ids:
            if cid in answers:
                out.append(answers[cid])
            else:
                notes.append(f"added a missing result for call {cid!r}")
                out.append(
                    tool_message(cid, results.error("interrupted", "no result was recorded for this call; it did not run"))
                )
    return out, notes


def check(messages: list[dict]) -> list[str]:
    """The problems `repair` would fix (empty when the invariant holds)."""
    return repair(messages)[1]
