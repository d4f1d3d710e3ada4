"""The floor client: the least a terminal chat client can do, for `make bench` to compare with.

    python floor_client.py BASE_URL MODEL PROMPT

One streamed chat completion over the standard library's http.client, each content delta
written to the terminal as it arrives (what `cat` of the answer would show), then it waits
for a line on stdin (so the bench can read its memory at rest) and exits. No UI, no
Markdown, no wrapping of its own: what DashFloat's figures are measured against.
"""

from __future__ import annotations

import http.client
import json
import os
import sys
from urllib.parse import urlsplit


def main() -> int:
    base, model, prompt = sys.argv[1:4]
    url = urlsplit(base.rstrip("/") + "/chat/completions")
    conn = http.client.HTTPConnection(url.hostname, url.port)
    body = json.dumps({"model": model, "stream": True,
                       "messages": [{"role": "user", "content": prompt}]})
    conn.request("POST", url.path, body, {"Content-Type": "application/json"})
    resp = conn.getresponse()
    out = sys.stdout.fileno()
    buf = b""
    while True:
        data = resp.read1(1 << 16)
        if not data:
            break
        buf += data
        *events, buf = buf.split(b"\n\n")
        text = []
        for ev in events:
            for line in ev.split(b"\n"):
                if not line.startswith(b"data:"):
                    continue
                payload = line[5:].strip()
                if payload == b"[DONE]":
                    continue
                obj = json.loads(payload)
                for choice in obj.get("choices") or ():
                    piece = (choice.get("delta") or {}).get("content")
                    if piece:
                        text.append(piece)
        if text:
            os.write(out, "".join(text).encode())  # the tty turns \n into \r\n
    os.write(out, b"\n[floor: done]\n")
    sys.stdin.readline()
    return 0


if __name__ == "__main__":
    sys.exit(main())
