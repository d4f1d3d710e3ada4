"""The slash commands: one table that drives the agent's dispatch, `/help`, the F1 overlay,
the man page's COMMANDS section and the README check, so none of them can drift.

What is a command: a prompt whose very first word is a slash and a name, the name a letter
then letters, digits, `-` or `_`, with no other slash (`/help`, `/model gpt-4o`, and also
`/hepl`, which is an unknown command: an error entry, never sent to the model). Anything
else is a prompt for the model, so a prompt may start with a path: `/etc/hosts is broken`
and `/usr/bin/python crashes` have a second slash, `/ what` has no name. To send a prompt
that starts with a word like `/tmp` as text, begin it with a space. Pure: no urwid, no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_WORD = re.compile(r"/([A-Za-z][A-Za-z0-9_-]*)(?=\s|$)")


@dataclass(frozen=True)
class Command:
    name: str  # without the slash
    args: str  # how its arguments are written, "" for none
    help: str  # one sentence for /help NAME, F1 and the man page
    brief: str = ""  # a few words for the /help list (one row at 80 columns)
    anytime: bool = False  # also while a turn runs (it changes nothing the turn uses)


COMMANDS: tuple[Command, ...] = (
    Command("help", "[NAME]", "List the commands, a line each; with NAME, tell that one in full.",
            brief="list the commands; /help NAME tells one in full"),
    Command(
        "clear",
        "",
        "Start a fresh conversation in the same session: the model no longer sees the earlier "
        "messages; the journal, /undo and the permission rules go on.",
        brief="a fresh conversation in the same session",
    ),
    Command(
        "compact",
        "[FOCUS]",
        "Compact the conversation now: old tool outputs become stubs and everything before the "
        "latest turn is summarised by the model (FOCUS: what the summary must keep); the first "
        "request and the instructions stay as they are.",
        brief="compact the conversation now",
    ),
    Command(
        "usage",
        "",
        "Show the tokens used since DashFloat started (input, cached, output, per request and "
        "for the last turn), their cost when the config has a price for the model, and the "
        "budgets with how much of each is used.",
        brief="tokens, cost and budgets so far",
    ),
    Command(
        "model",
        "[NAME]",
        "Show the model and the endpoint's models; with NAME, switch to it (a name the "
        "endpoint's model list does not have is refused, with the closest ones).",
        brief="show the model, or switch to NAME",
    ),
    Command(
        "mode",
        "[NAME]",
        "Show the permission mode; with NAME (ask, accept-edits, read-only, unrestricted), "
        "switch to it for the session.",
        brief="show the permission mode, or switch to NAME",
    ),
    Command(
        "permissions",
        "[revoke N]",
        "List the permission rules by layer, session rules numbered; revoke N removes "
        "session rule N.",
        brief="the permission rules; revoke a session rule",
    ),
    Command(
        "undo",
        "[N]",
        "Put back the files DashFloat's own tools changed in the last turn that changed files "
        "(with N, the last N such turns): a file changed since is shown as a diff and asked "
        "about, never overwritten unasked. Changes made by commands are not covered.",
        brief="put back the files of the last N turns",
    ),
    Command(
        "copy",
        "[N]",
        "Copy the last answer, or its Nth code block (/copy list numbers them), to your "
        "clipboard (OSC 52, through ssh and tmux) and to $XDG_STATE_HOME/dashfloat/copy.txt.",
        anytime=True,
        brief="copy the last answer, or its Nth code block",
    ),
    Command(
        "sessions",
        "",
        "List the sessions of this working directory, newest first, the current one marked "
        "(dashfloat --resume ID resumes one).",
        brief="this directory's sessions",
    ),
    Command("quit", "", "Leave DashFloat (also while a turn runs: it is stopped first).", brief="leave DashFloat"),
)

_BY_NAME = {c.name: c for c in COMMANDS}


def parse(text: str) -> tuple[str, str] | None:
    """(name, the rest stripped) when `text` is a slash command, known or not; None when it
    is a prompt for the model. The name is lower-cased."""
    m = _WORD.match(text)
    if m is None:
        return None
    return m.group(1).lower(), text[m.end() :].strip()


def lookup(name: str) -> Command | None:
    return _BY_NAME.get(name.lower())


def usage(cmd: Command) -> str:
    return f"/{cmd.name}" + (f" {cmd.args}" if cmd.args else "")


def closest(name: str) -> list[str]:
    """Known command names that look like `name` (for "did you mean")."""
    import difflib  # only for a mistyped command: keep it off the start-up path

    return difflib.get_close_matches(name.lower(), list(_BY_NAME), n=2, cutoff=0.6)


def unknown_text(name: str) -> str:
    """The error entry for `/name` when no command has that name."""
    near = closest(name)
    mean = f" Did you mean {' or '.join('/' + n for n in near)}?" if near else ""
    return (f"Unknown command /{name}; /help lists them.{mean} "
            "(To send a prompt that starts with /, begin it with a space.)")


@dataclass(frozen=True)
class Completion:
    """What Tab makes of the prompt: the new text and cursor, and the names that still fit
    when there are several (shown as a notice)."""

    text: str
    cursor: int
    choices: tuple[str, ...] = ()


def complete(text: str, cursor: int) -> Completion | None:
    """Tab on the prompt: complete the command name being typed at its very start (`/us` ->
    `/usage `; `/mo` -> `/mode`, the longest common start, choices /model /mode). None when there is nothing to
    complete: the cursor is not in a first word that is a slash and the start of a name, or
    no command starts so. Pure: a function of the text, the cursor and the table."""
    if not text.startswith("/") or not 1 <= cursor <= len(text):
        return None
    word_end = len(text)
    for i, ch in enumerate(text):
        if ch.isspace():
            word_end = i
            break
    if cursor != word_end:
        return None  # only at the end of the first word (not inside it, not after it)
    typed = text[1:cursor]
    if typed and not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", typed):
        return None  # a path (/etc/...), not a command name
    names = [c.name for c in COMMANDS if c.name.startswith(typed.lower())]
    if not names:
        return None
    if len(names) == 1:
        name = names[0]
        rest = text[cursor:]
        if rest[:1].isspace():
            return Completion("/" + name + rest, len(name) + 1)
        return Completion("/" + name + " " + rest, len(name) + 2)
    common = names[0]
    for n in names[1:]:
        while not n.startswith(common):
            common = common[:-1]
    new = "/" + common + text[cursor:]
    return Completion(new, len(common) + 1, tuple("/" + n for n in names))


def help_rows() -> list[tuple[str, str]]:
    """[(usage, help), ...] in table order: for /help and the F1 overlay."""
    return [(usage(c), c.help) for c in COMMANDS]


def help_text(name: str = "") -> str:
    """The /help entry: a line per command (fits 80 columns); with `name`, that command in
    full. An unknown name says so, with the list."""
    if name:
        cmd = lookup(name.strip().lstrip("/"))
        if cmd is not None:
            return f"{usage(cmd)}\n    {cmd.help}"
    width = max(len(usage(c)) for c in COMMANDS)
    lines = ([f"No command /{name.strip().lstrip('/')}."] if name else []) + [
        "Commands (typed at the start of a prompt; anything else goes to the model):"]
    for c in COMMANDS:
        lines.append(f"  {usage(c):<{width}}  {c.brief}")
    lines.append("/help NAME tells one in full; Tab completes a name; F1 shows the keys; a prompt "
                 "that starts with a space is sent as it is.")
    return "\n".join(lines)


def _groff(text: str) -> str:
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + text if text[:1] in (".", "'") else text


def man_section() -> str:
    """The groff body of the man page's COMMANDS section (no .SH line)."""
    lines = [
        "A prompt whose first word is a slash and a name is a command, not a message to the",
        "model; an unknown name is an error that says so.",
        "A first word with a second slash is a path, so",
        ".B \"/etc/hosts is broken\"",
        "is sent to the model; to send a prompt that starts with a word like",
        ".BR /tmp ,",
        "begin it with a space.",
        "Tab at the end of a command's first letters completes its name (or lists the names",
        "that fit).",
    ]
    for cmd in COMMANDS:
        lines.append(".TP")
        lines.append("\\fB" + _groff("/" + cmd.name) + "\\fR" + (" " + _groff_args(cmd.args) if cmd.args else ""))
        lines.append(_groff(cmd.help))
    return "\n".join(lines) + "\n"


def _groff_args(args: str) -> str:
    """Literal words bold, placeholders (upper case) italic, brackets roman:
    `[revoke N]` -> `[\\fBrevoke\\fR \\fIN\\fR]`."""

    def font(m: re.Match) -> str:
        word = m.group(0)
        return ("\\fI" if word.isupper() else "\\fB") + word + "\\fR"

    return re.sub(r"[A-Za-z][A-Za-z\\-]*", font, _groff(args))
