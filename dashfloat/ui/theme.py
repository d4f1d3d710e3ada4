"""Palettes for 1, 16 and 256 colours, and the glyph sets for Unicode and ASCII terminals.

One table, STYLES, names every attribute the UI and the Markdown renderer use, with its
monochrome, 16-colour and 256-colour forms. The 16-colour forms use only the standard
names and never a bright background (on the Linux console that means blink).
Pure data: no urwid import; `palette(depth)` returns urwid's 6-tuples.

Markdown and code colours are the terminal's own 16 (at every depth): they follow the
user's colour scheme, light or dark, and each colour change costs 5 bytes on the wire
instead of 11-13 for a 256-colour one (a highlighted answer changes colour every few
characters). Plain code is the terminal's default colour, so it reads on any background.
"""

from __future__ import annotations

import re

from dashfloat.frozen import Frozen

# name: (mono, fg16, bg16, fg256, bg256)
STYLES: dict[str, tuple[str, str, str, str, str]] = {
    "": ("default", "default", "default", "default", "default"),
    # transcript entries
    "user_prefix": ("bold", "light cyan,bold", "default", "#8df,bold", "default"),
    "user": ("default", "default", "default", "default", "default"),
    "assistant_prefix": ("bold", "light green,bold", "default", "#9d8,bold", "default"),
    "system_info": ("default", "dark cyan", "default", "#8ab", "default"),
    "system_warn": ("bold", "yellow", "default", "#db6", "default"),
    "system_error": ("standout", "light red", "default", "#f66", "default"),
    "system_note": ("default", "dark gray", "default", "#777", "default"),
    "marker": ("underline", "yellow", "default", "#db6", "default"),
    "reasoning": ("default", "dark gray", "default", "#888", "default"),
    "reasoning_head": ("underline", "dark gray", "default", "#999", "default"),
    "accent": ("bold", "yellow", "default", "#fb5", "default"),
    "dim": ("default", "dark gray", "default", "#777", "default"),
    # tool rows and previews
    "tool": ("bold", "yellow", "default", "#fb5", "default"),
    "tool_name": ("bold", "default,bold", "default", "#ddd,bold", "default"),
    "tool_text": ("default", "dark gray", "default", "#999", "default"),
    "tool_ok": ("default", "dark green", "default", "#8b8", "default"),
    "diff_add": ("bold", "dark green", "default", "#9d8", "default"),
    "diff_del": ("default", "dark red", "default", "#d88", "default"),
    "diff_hunk": ("default", "dark cyan", "default", "#8ab", "default"),
    "diff_header": ("bold", "default,bold", "default", "#ccc,bold", "default"),
    "confirm": ("standout", "yellow,bold", "default", "#fb5,bold", "default"),
    # status bar
    "status": ("standout", "black", "light gray", "#ddd", "#333"),
    "status_phase": ("standout", "black", "light gray", "#fb5,bold", "#333"),
    "status_model": ("standout", "dark blue", "light gray", "#8df", "#333"),
    "status_hint": ("standout", "dark gray", "light gray", "#999", "#333"),
    "status_error": ("standout", "dark red", "light gray", "#f66,bold", "#333"),
    # prompt
    "prompt_prefix": ("bold", "light cyan,bold", "default", "#8df,bold", "default"),
    "prompt": ("default", "default", "default", "default", "default"),
    # help overlay
    "help": ("default", "default", "default", "default", "#222"),
    "help_title": ("bold", "white,bold", "default", "#fff,bold", "#222"),
    "help_key": ("bold", "yellow", "default", "#fb5", "#222"),
    # markdown
    "md_h1": ("bold,underline", "light magenta,bold", "default", "light magenta,bold", "default"),
    "md_h2": ("bold", "light magenta,bold", "default", "light magenta,bold", "default"),
    "md_heading": ("bold", "dark magenta", "default", "dark magenta", "default"),
    "md_em": ("default", "default,italics", "default", "default,italics", "default"),
    "md_strong": ("bold", "default,bold", "default", "default,bold", "default"),
    "md_strike": ("default", "dark gray,strikethrough", "default", "dark gray,strikethrough", "default"),
    "md_code": ("underline", "yellow", "default", "yellow", "default"),
    "md_link": ("underline", "light blue,underline", "default", "light blue,underline", "default"),
    "md_url": ("default", "dark gray", "default", "dark gray", "default"),
    "md_bullet": ("bold", "yellow", "default", "yellow", "default"),
    "md_quote": ("default", "dark gray", "default", "dark gray", "default"),
    "md_hr": ("default", "dark gray", "default", "dark gray", "default"),
    "md_table_border": ("default", "dark gray", "default", "dark gray", "default"),
    "md_table_head": ("bold", "default,bold", "default", "default,bold", "default"),
    "md_code_block": ("default", "default", "default", "default", "default"),
    "md_code_lang": ("default", "dark gray", "default", "dark gray", "default"),
    # syntax highlighting inside fenced code
    "code_plain": ("default", "default", "default", "default", "default"),
    "code_keyword": ("bold", "light magenta", "default", "light magenta", "default"),
    "code_string": ("default", "light green", "default", "light green", "default"),
    "code_comment": ("default", "dark gray", "default", "dark gray", "default"),
    "code_number": ("default", "light cyan", "default", "light cyan", "default"),
    "code_name_func": ("bold", "light blue", "default", "light blue", "default"),
    "code_builtin": ("default", "yellow", "default", "yellow", "default"),
    "code_operator": ("default", "default", "default", "default", "default"),
}

DEPTHS = (1, 16, 256)


def palette(depth: int) -> list[tuple[str, str, str, str, str, str]]:
    """urwid palette entries (name, fg16, bg16, mono, fg_high, bg_high).

    urwid picks the part for the screen's depth itself; `depth` only decides whether the
    high-colour part is offered at all, so a forced 16-colour run never emits 256-colour codes.
    """
    out = []
    for name, (mono, fg16, bg16, fg256, bg256) in STYLES.items():
        if depth >= 256:
            out.append((name, fg16, bg16, mono, fg256, bg256))
        else:
            out.append((name, fg16, bg16, mono))
    return out


class Glyphs(Frozen):
    """The characters the UI draws with (UNICODE, or ASCII where UTF-8 cannot be shown)."""

    __slots__ = ("spinner", "user", "assistant", "system", "collapsed", "expanded", "tool", "ellipsis", "sep")

    def __init__(self, spinner: tuple[str, ...], user: str, assistant: str, system: str, collapsed: str,
                 expanded: str, tool: str, ellipsis: str, sep: str):
        self._set(spinner=spinner, user=user, assistant=assistant, system=system, collapsed=collapsed,
                  expanded=expanded, tool=tool, ellipsis=ellipsis, sep=sep)


UNICODE = Glyphs(
    spinner=("⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"),
    user="❯",
    assistant="●",
    system="·",
    collapsed="▸",
    expanded="▾",
    tool="⚙",
    ellipsis="…",
    sep="│",
)

ASCII = Glyphs(
    spinner=("|", "/", "-", "\\"),
    user=">",
    assistant="*",
    system="-",
    collapsed="+",
    expanded="-",
    tool="#",
    ellipsis="~",
    sep="|",
)

ASCII_FALLBACKS = {"·": ".", "•": "*", "→": ">", "…": "~", "─": "-", "│": "|", "┼": "+", "▸": ">", "▾": "v",
                   # a command preview's counts (⟨4,000 × U+3000⟩) and line breaks in a summary
                   "⟨": "<", "⟩": ">", "×": "x", "⏎": "/"}


LOCALE_VARS = ("LC_ALL", "LC_CTYPE", "LANG")


def startup_environ(environ=None, proc_environ: bytes | None = None) -> dict:
    """`environ` (default os.environ) with the locale variables as the process was started.

    Python replaces a C locale's LC_CTYPE with C.UTF-8 in os.environ at start-up (PEP 538
    locale coercion), so every LANG=C console would look UTF-8; Linux keeps what exec
    passed in /proc/self/environ. Elsewhere `environ` is taken as it is."""
    import os

    env = dict(os.environ if environ is None else environ)
    if proc_environ is None:
        try:
            with open("/proc/self/environ", "rb") as f:
                proc_environ = f.read()
        except OSError:
            return env
    started = {}
    for item in proc_environ.split(b"\0"):
        name, sep, value = item.partition(b"=")
        if sep:
            started[os.fsdecode(name)] = os.fsdecode(value)
    for var in LOCALE_VARS:
        env.pop(var, None)
        if var in started:
            env[var] = started[var]
    return env


def utf8_locale(environ) -> bool:
    """Whether the locale (LC_ALL, then LC_CTYPE, then LANG: the first one set) is UTF-8.
    Pass `startup_environ()`, not os.environ (see there)."""
    for var in LOCALE_VARS:
        value = environ.get(var, "")
        if value:
            return "utf-8" in value.lower() or "utf8" in value.lower()
    return False


def choose_ascii(setting: str, environ) -> bool:
    """--ascii on/off, or auto: ASCII only where nothing says UTF-8 and the terminal is a
    plain console (Python's UTF-8 mode hides a C locale, so urwid cannot decide this;
    pass `startup_environ()`)."""
    if setting == "on":
        return True
    if setting == "off":
        return False
    if utf8_locale(environ):
        return False
    return environ.get("TERM", "") in ("linux", "vt100", "vt102", "vt220", "ansi")


# Terminals without colours, when no terminfo entry can be read: the DEC VT family up to
# the VT400s (the VT525 has colour) and the *-mono / *-m variants.
_MONO_TERM = re.compile(r"(?:vt(?:52|1\d\d|2\d\d|3\d\d|4\d\d)(?:[-.].*)?|.*-mono|.*-m)$")


def terminfo_colors(term: str) -> int | None:
    """The `colors` capability of TERM's terminfo entry (0 when it has none), or None when
    no entry can be read. curses is imported here only: the look-up costs about 1 ms."""
    if not term:
        return None
    try:
        import curses

        curses.setupterm(term, -1)
        colors = curses.tigetnum("colors")
    except Exception:  # no curses, no entry, no terminfo database
        return None if not _MONO_TERM.match(term) else 0
    return max(colors, 0)  # -1: absent, -2: cancelled


def choose_depth(setting: str, detected: int, term_colors: int | None = None) -> int:
    """The colour depth to run with: a --colors value, or urwid's detection capped at 256
    (truecolor is rarely forwarded over ssh, and the palette does not need it). A terminal
    whose terminfo entry has fewer than 8 colours (vt100, vt220: `term_colors`) gets none:
    urwid counts a known name as 16 colours even when its entry has no colours at all."""
    if setting != "auto":
        return int(setting)
    if detected <= 1 or (term_colors is not None and term_colors < 8):
        return 1
    if detected < 256:
        return 16
    return 256


def use_ascii_encoding() -> None:
    """Make urwid draw with ASCII only (its fallbacks for line and box characters too)."""
    import urwid

    urwid.set_encoding("ascii")
    urwid.set_ascii_fallbacks(ASCII_FALLBACKS)
