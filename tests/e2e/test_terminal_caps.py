"""End to end: a terminal without colours gets no colour codes, and a console whose locale
is not UTF-8 gets ASCII glyphs, both with the default (auto) settings."""

from __future__ import annotations

import re

from tests.e2e.harness import clean_env
from tests.fakeserver import sse_reply

ANSWER = ["# A heading\n\n", "Some **bold**, *em* and `code`.\n\n",
          "```python\ndef f(x):\n    return x + 1  # one\n```\n\n", "> quoted\n"]


def colour_sgrs(raw: bytes) -> list[bytes]:
    """Every SGR sequence in `raw` that sets a colour (30-37, 40-47, 90-97, 100-107, 38;...,
    48;...); bold, underline and reverse are fine."""
    out = []
    for params in re.findall(rb"\x1b\[([0-9;:]*)m", raw):
        codes = [int(p) for p in re.split(rb"[;:]", params) if p]
        if any(30 <= c <= 38 or 40 <= c <= 48 or 90 <= c <= 97 or 100 <= c <= 107 for c in codes):
            out.append(params)
    return out


def test_term_vt100_gets_no_colour_codes(dash, server, tmp_path):
    server.push(sse_reply(ANSWER))
    t = dash(env=clean_env(tmp_path, TERM="vt100"))
    t.type("hi\r")
    t.wait_text("return x + 1")
    t.wait_status("idle")
    assert not colour_sgrs(bytes(t.raw)), sorted(set(colour_sgrs(bytes(t.raw))))
    assert re.search(rb"\x1b\[[0-9;]*[147]m", bytes(t.raw)), "bold, underline or reverse still used"


def test_term_xterm_still_gets_colours(dash, server, tmp_path):
    """The check that vt100 gets none must not take colours from a colour terminal."""
    server.push(sse_reply(ANSWER))
    t = dash(env=clean_env(tmp_path, TERM="xterm"))
    t.type("hi\r")
    t.wait_text("return x + 1")
    t.wait_status("idle")
    assert colour_sgrs(bytes(t.raw))


def test_a_c_locale_console_gets_ascii_glyphs(dash, server, tmp_path):
    """Python turns LC_CTYPE into C.UTF-8 for a C locale; the glyph choice must see the
    locale the user has, or a Linux console shows mojibake for the prompt sign."""
    t = dash(env=clean_env(tmp_path, TERM="linux", LANG="C"), utf8=False)
    t.wait_quiet(0.3)
    assert not any(b >= 0x80 for b in bytes(t.raw)), "non-ASCII bytes on a C-locale console"
    assert t.lines[-1].startswith(">")
