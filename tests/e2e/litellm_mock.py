"""A scripted model for the LiteLLM proxy (tests/e2e/test_litellm.py), loaded by the proxy
from its config as a custom provider (litellm.CustomLLM). Not imported by the test suite.

What it streams depends on the last message it is given:
  a tool result       -> "The file says: <the result>" and finish_reason "stop"
  "... fail ..."      -> "Partial answer, " then an exception (an upstream failing mid-stream)
  "... overflow ..."  -> litellm.ContextWindowExceededError before any chunk
  anything else       -> one read_file(path="a.txt") call in two argument fragments
Every request's messages are appended, one JSON line each, to the file named by
$DASHFLOAT_MOCK_LOG: what the proxy accepted and passed on.
"""

from __future__ import annotations

import json
import os

import litellm
from litellm import CustomLLM
from litellm.llms.custom_llm import CustomLLMError


def _chunk(text="", *, tool_use=None, finish=""):
    return {
        "text": text,
        "tool_use": tool_use,
        "is_finished": bool(finish),
        "finish_reason": finish,
        "usage": None,
        "index": 0,
    }


def _call_fragment(arguments: str, first: bool) -> dict:
    return {
        "id": "call_mock_1" if first else None,
        "type": "function",
        "function": {"name": "read_file" if first else None, "arguments": arguments},
        "index": 0,
    }


class ScriptedModel(CustomLLM):
    def _script(self, messages: list):
        with open(os.environ["DASHFLOAT_MOCK_LOG"], "a", encoding="utf-8") as log:
            log.write(json.dumps(messages, default=str) + "\n")
        last = messages[-1] if messages else {}
        text = last.get("content") if isinstance(last.get("content"), str) else ""
        if last.get("role") == "tool":
            yield _chunk("The file says: " + text)
            yield _chunk(finish="stop")
        elif "overflow" in text:
            raise litellm.ContextWindowExceededError(
                message="This model's maximum context length is 4096 tokens. However, your messages "
                "resulted in 5000 tokens.",
                model="mock-tools",
                llm_provider="dashmock",
            )
        elif "fail" in text:
            yield _chunk("Partial answer, ")
            raise CustomLLMError(status_code=500, message="mock upstream exploded")
        else:
            yield _chunk(tool_use=_call_fragment('{"path": ', True))
            yield _chunk(tool_use=_call_fragment('"a.txt"}', False))
            yield _chunk(finish="tool_calls")

    def streaming(self, model, messages, *args, **kwargs):
        yield from self._script(messages)

    async def astreaming(self, model, messages, *args, **kwargs):
        for chunk in self._script(messages):
            yield chunk


handler = ScriptedModel()
