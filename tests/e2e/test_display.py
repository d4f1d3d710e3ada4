"""End to end: glyphs and colours: --ascii draws nothing but ASCII, NO_COLOR draws no colour."""

from __future__ import annotations

import re

from tests.e2e.harness import Term, clean_env
from tests.fakeserver import sse_reply

F1 = "\x1bOP"

# every Markdown element the renderer draws with glyphs, in one screenful
SHORT_MD = """\
## Heading

- a bullet with **bold**, *em* and `code`
1. numbered

> a quote

| k | v |
| --- | --- |
| a | 1 |

```python
x = 1
```

---
See [docs](http://example.com).
"""


def non_ascii(t: Term) -> list[str]:
    """The rows holding a non-ASCII character, each with the characters listed."""
    out = []
    for i, row in enumerate(t.lines):
        bad = sorted({c for c in row if ord(c) > 127})
        if bad:
            out.append(f"row {i}: {bad!r}: {row}")
    return out


def test_ascii_mode_screen_is_pure_ascii(dash, server):
    # pyte decodes bytes as Latin-1 and honours SO/SI (DEC line drawing): any UTF-8 byte or
    # DEC graphics glyph the app emits shows up as a non-ASCII character on this screen
    server.push(
        sse_reply(
            [SHORT_MD],
            reasoning=["Thinking it over.\n"],
            usage={"prompt_tokens": 10, "completion_tokens": 250, "total_tokens": 260},
        )
    )
    t = dash("--ascii", utf8=False)
    first = non_ascii(t)

    t.type("explain\r")
    t.wait_for(lambda t: " idle " in t.status() and "ctx 260 tok" in t.status(), what="the answer, idle")
    answer = non_ascii(t)
    assert "thought" in t.text

    t.send(F1)
    t.wait_for(lambda t: "DashFloat keys" in t.text and any(re.search(r"\+-{20,}\+", r) for r in t.lines),
               what="the help overlay, bottom border included")
    overlay = non_ascii(t)
    t.send("\x1b")
    t.wait_gone("DashFloat keys")

    problems = {"first frame": first, "answer": answer, "help overlay": overlay}
    assert not any(problems.values()), "non-ASCII on an --ascii screen:\n" + "\n".join(
        f"{where}: {row}" for where, rows in problems.items() for row in rows
    )


def test_no_color_starts_and_uses_no_colours(dash, server, tmp_path):
    server.push(sse_reply(["# Heading\n\n", "Some **bold** and `code`.\n"]))
    t = dash(env=clean_env(tmp_path, NO_COLOR="1"))
    t.type("hi\r")
    t.wait_text("Some bold and code.")
    t.wait_status("idle")
    sgr = set(re.findall(rb"\x1b\[([0-9;]*)m", bytes(t.raw)))
    colours = []
    for params in sgr:
        for p in params.split(b";"):
            if p and (30 <= int(p) <= 38 or 40 <= int(p) <= 48 or 90 <= int(p) <= 107):
                colours.append(params)
    assert not colours, f"colour SGR codes under NO_COLOR: {sorted(set(colours))}"
