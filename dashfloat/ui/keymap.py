"""The one keymap table: it drives key dispatch, the F1 help overlay, the status-bar hints
and the KEYBINDINGS section of the man page (a test fails when they drift apart).

Pure data and pure functions: no urwid import, so the man page generator and the tests
read it without a terminal. Keys are urwid key names ("ctrl c", "meta enter", "page up").
"""

from __future__ import annotations

from dashfloat.frozen import Frozen
from dashfloat.ui.confirmgate import ALWAYS_WINDOW as _ALWAYS
from dashfloat.ui.confirmgate import GRACE as _GRACE
from dashfloat.ui.confirmgate import HOLD as _HOLD
from dashfloat.ui.confirmgate import QUIET as _QUIET

# Contexts, most specific first. "global" applies everywhere unless an overlay owns keys.
CONTEXTS = {
    "global": "Anywhere",
    "prompt": "Prompt (the editor at the bottom)",
    "transcript": "Transcript",
    "confirm": "Confirming a tool call (its preview is in the transcript)",
    "view": "The whole preview (v on a confirmation)",
    "help": "Help overlay",
}


class Binding(Frozen):
    """keys: what is pressed; command: what it does in `context`; help: the help screen's
    and the man page's text; hint: the status bar's short label (empty: not hinted);
    label: how help and hints show the keys when not just their names ("a a": twice)."""

    __slots__ = ("keys", "command", "context", "help", "hint", "label")

    def __init__(self, keys: tuple[str, ...], command: str, context: str, help: str, hint: str = "",
                 label: str = ""):
        self._set(keys=keys, command=command, context=context, help=help, hint=hint, label=label)


KEYMAP: tuple[Binding, ...] = (
    # confirmations
    Binding(
        ("y",),
        "approve",
        "confirm",
        "Approve this call, once: the next call asks again. Like n and a, it counts only when pressed on its "
        f"own: after a pause of {_QUIET} s in typing, not sooner than {_GRACE} s after the preview appeared, and "
        f"not followed by another key within {_HOLD} s (then it was the start of a word). Keys that do not "
        "decide are dropped, never typed into the prompt; the status bar says why.",
        "approve",
    ),
    Binding(
        ("a",),
        "approve_always",
        "confirm",
        "Pressed twice, with a pause between (within "
        f"{_ALWAYS:g} s): approve, and allow this exact command (or this file) without asking for the rest of "
        "the session. The first a shows the rule the second would add.",
        "always",
        label="a a",
    ),
    Binding(("n",), "reject", "confirm", "Reject this call; the model is told and the turn goes on.", "reject"),
    Binding(
        ("esc", "ctrl c"),
        "stop_turn",
        "confirm",
        "Reject this call and every other pending call of the answer, and end the turn (at once, even "
        "right after typing).",
        "stop",
    ),
    Binding(
        ("v",),
        "view_preview",
        "confirm",
        "Read the whole preview (every line of a long diff or command) in a pager before deciding.",
        "view all",
    ),
    # the whole preview (v on a confirmation)
    Binding(
        ("up", "down", "page up", "page down", "home", "end"),
        "view_scroll",
        "view",
        "Scroll the preview.",
    ),
    Binding(
        ("q", "esc", "v"),
        "close_view",
        "view",
        "Back to the transcript; the call still waits. y, n, a and Ctrl-C decide here as well.",
        "back",
    ),
    # prompt
    Binding(("enter",), "submit", "prompt", "Send the prompt to the model.", "send"),
    Binding(
        ("meta enter",),
        "newline",
        "prompt",
        "Insert a newline (a backslash at the end of the line followed by Enter does too).",
        "newline",
    ),
    Binding(("up",), "history_prev", "prompt", "On the first line: the previous prompt from history."),
    Binding(("down",), "history_next", "prompt", "On the last line: the next prompt from history."),
    Binding(("ctrl g",), "external_editor", "prompt", "Edit the prompt in $VISUAL or $EDITOR."),
    Binding(
        ("tab",),
        "complete",
        "prompt",
        "At the end of a command's first letters (/mo): complete its name; when several fit, the longest "
        "common start, and the status bar lists them.",
    ),
    Binding(("ctrl a",), "line_start", "prompt", "Move to the start of the line."),
    Binding(("ctrl e",), "line_end", "prompt", "Move to the end of the line."),
    Binding(("ctrl u",), "kill_line", "prompt", "Delete from the cursor to the start of the line."),
    Binding(
        ("ctrl d",),
        "quit_if_empty",
        "prompt",
        "On an empty prompt: quit. Otherwise delete the character under the cursor.",
    ),
    # global
    Binding(("esc",), "cancel", "global", "Cancel the answer being streamed (the partial text is kept).", "cancel"),
    Binding(
        ("ctrl c",),
        "interrupt",
        "global",
        "Cancel the answer being streamed; on an idle prompt clear it; pressed twice in a row, quit.",
        "quit",
    ),
    Binding(("page up",), "scroll_page_up", "transcript", "Scroll the transcript up one page."),
    Binding(("page down",), "scroll_page_down", "transcript", "Scroll the transcript down one page."),
    Binding(("meta up",), "scroll_line_up", "transcript", "Scroll the transcript up one line."),
    Binding(("meta down",), "scroll_line_down", "transcript", "Scroll the transcript down one line."),
    Binding(("home",), "scroll_top", "transcript", "Jump to the start of the transcript."),
    Binding(("end",), "scroll_bottom", "transcript", "Jump to the end and follow new output again.", "follow"),
    Binding(("ctrl t",), "toggle_reasoning", "global", "Show or hide the model's reasoning."),
    Binding(("ctrl l",), "redraw", "global", "Redraw the whole screen (after line noise over ssh)."),
    Binding(("ctrl z",), "suspend", "global", "Suspend to the shell; fg brings the screen back."),
    Binding(("f1",), "help", "global", "Show this help.", "help"),
    # help overlay
    Binding(("esc", "f1", "q"), "close_help", "help", "Close the help."),
    Binding(("up", "down", "page up", "page down"), "help_scroll", "help", "Scroll the help."),
)

COMMANDS = frozenset(b.command for b in KEYMAP)

_DISPATCH: dict[tuple[str, str], str] = {}
for _b in KEYMAP:
    for _k in _b.keys:
        _DISPATCH.setdefault((_b.context, _k), _b.command)


def lookup(contexts: tuple[str, ...], key: str) -> str | None:
    """The command bound to `key` in the first of `contexts` that binds it."""
    for ctx in contexts:
        cmd = _DISPATCH.get((ctx, key))
        if cmd is not None:
            return cmd
    return None


_KEY_WORDS = {
    "enter": "Enter",
    "esc": "Esc",
    "page up": "PgUp",
    "page down": "PgDn",
    "home": "Home",
    "end": "End",
    "up": "Up",
    "down": "Down",
    "tab": "Tab",
    "backspace": "Backspace",
    "delete": "Delete",
}


def key_label(key: str) -> str:
    """'meta enter' -> 'Alt-Enter', 'ctrl c' -> 'Ctrl-C', 'f1' -> 'F1'."""
    parts = key.split(" ")
    mods = []
    while len(parts) > 1 and parts[0] in ("ctrl", "meta", "shift"):
        mods.append({"ctrl": "Ctrl", "meta": "Alt", "shift": "Shift"}[parts.pop(0)])
    base = " ".join(parts)
    if base in _KEY_WORDS:
        base = _KEY_WORDS[base]
    elif len(base) == 1:
        base = base.upper() if mods else base
    elif base.startswith("f") and base[1:].isdigit():
        base = base.upper()
    return "-".join(mods + [base])


def keys_label(b: Binding) -> str:
    return b.label or ", ".join(key_label(k) for k in b.keys)


def hint_for(command: str) -> str:
    """'Esc cancel' style hint built from the table, so hints follow rebinding."""
    for b in KEYMAP:
        if b.command == command and b.hint:
            return f"{b.label or key_label(b.keys[0])} {b.hint}"
    raise KeyError(command)


def help_rows() -> list[tuple[str, list[tuple[str, str]]]]:
    """[(context title, [(keys, help), ...]), ...] for the help overlay and the man page."""
    out = []
    for ctx, title in CONTEXTS.items():
        rows = [(keys_label(b), b.help) for b in KEYMAP if b.context == ctx]
        if rows:
            out.append((title, rows))
    return out


def _groff_escape(text: str) -> str:
    text = text.replace("\\", "\\e")
    text = text.replace("-", "\\-")
    if text[:1] in (".", "'"):
        text = "\\&" + text
    return text


def man_keybindings_section() -> str:
    """The groff body of the man page's KEYBINDINGS section."""
    lines = []
    for title, rows in help_rows():
        lines.append(".SS " + _groff_escape(title))
        for keys, text in rows:
            lines.append(".TP")
            lines.append(".B " + _groff_escape(keys))
            lines.append(_groff_escape(text))
    return "\n".join(lines) + "\n"


# Seconds the screen waits before it takes a lone Esc for the key, not the start of an
# escape sequence (urwid's default is 0.125 s; a terminal sends a key's sequence in one
# write, so 50 ms is ample, as in Neovim's ttimeoutlen): Esc must stop a turn in < 0.1 s.
LONE_ESC_WAIT = 0.05


def lone_esc_wait() -> float:
    """Seconds the screen waits before it takes a lone Esc for the key (the app sets it
    on the screen; the man page states it)."""
    return LONE_ESC_WAIT
