"""Where requests go: a plain value, importable without the HTTP stack.

The UI builds it at start-up; only the agent's worker threads import `llm.client`
(and with it requests and urllib3), so the first frame does not wait for them.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Endpoint:
    base_url: str
    api_key: str | None = field(default=None, repr=False)
    api_key_env: str = "OPENAI_API_KEY"
    headers: dict = field(default_factory=dict)
    connect_timeout: float = 10.0
    read_timeout: float = 120.0  # idle: the longest wait for the next bytes
    is_default: bool = False
