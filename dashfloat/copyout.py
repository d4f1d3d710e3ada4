"""/copy: an answer, or one of its code blocks, out of a full-screen program over ssh.

Nobody can select a long answer with the mouse across pages of a full-screen program, so
/copy puts it on the clipboard of the terminal the person sits at, with the OSC 52 escape
sequence (it travels through ssh like any output), and also writes it to a private file
whose path the entry shows, for a terminal that ignores OSC 52.

* Inside tmux, a plain OSC 52 from a program is dropped unless `set-clipboard on` (the
  default, `external`, ignores it), and the DCS passthrough form only passes with
  `allow-passthrough on` (tmux 3.3+, default off). `tmux load-buffer -w -` works with the
  defaults (tmux 3.2+): tmux makes a buffer and sends OSC 52 to the outer terminal itself.
  So inside tmux that is tried first (agent side, a worker), and when it fails the
  sequence goes out both plain and wrapped for passthrough.
* GNU screen ($STY) passes a DCS string of at most ~768 bytes: the sequence goes out in
  wrapped pieces.
* Terminals cap the sequence (hterm 100,000 bytes, kitty, termux and others less): a text
  whose base64 exceeds OSC52_MAX is not sent at all (a cut clipboard would be wrong
  without a word) and the entry says so; the file has it whole.

What counts as "the last answer": the text the model wrote in the latest turn that wrote
any (all of its messages, tool calls between them left out), as the model wrote it
(Markdown). Its code blocks are numbered 1, 2, ... in the order the screen shows them,
found with the screen's own parser (mdparse.py). Pure, but for `write_file`.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping
from dataclasses import dataclass

OSC52_MAX = 100_000  # characters of base64 in one sequence (about 73 KiB of text)
SCREEN_PIECE = 500  # characters per DCS piece for GNU screen
FILE_NAME = "copy.txt"  # in the state directory, beside the log and the history
FIRST_LINE = 60  # characters of a block's first line that /copy list shows

USAGE = ("/copy copies the last answer, /copy N its Nth code block, /copy list shows its code blocks")


@dataclass(frozen=True)
class Block:
    lang: str  # the fence's language ("" when it names none, or an indented block)
    text: str  # the code, without its fences and without its last newline


@dataclass(frozen=True)
class Request:
    what: str  # "answer", "block" or "list"
    n: int = 0  # the block's number (1 = the first shown), for "block"


def parse_args(rest: str) -> Request | str:
    """What `/copy REST` asks for, or the error entry's text."""
    words = rest.split()
    if not words:
        return Request("answer")
    if len(words) == 1:
        word = words[0].lower()
        if word == "list":
            return Request("list")
        if word.isdigit() and int(word) >= 1:
            return Request("block", int(word))
    return f"/copy takes a code block's number or list, not {rest!r}: {USAGE}."


def code_blocks(markdown: str) -> list[Block]:
    """The code blocks of one Markdown text, in document order (nested in lists and quotes
    too), as the screen's parser finds them. Never raises: [] for text it cannot parse
    (the screen shows that as plain text, without blocks)."""
    from dashfloat.mdparse import parser

    try:
        tokens = parser().parse(markdown)
    except Exception:  # noqa: BLE001 - model output; the screen falls back the same way
        return []
    blocks = []
    for tok in tokens:
        if tok.type == "fence":
            info = tok.info.strip()
            blocks.append(Block(info.split()[0] if info else "", tok.content.removesuffix("\n")))
        elif tok.type == "code_block":
            blocks.append(Block("", tok.content.removesuffix("\n")))
    return blocks


def answer_blocks(texts: list[str]) -> list[Block]:
    """The code blocks of an answer made of several messages (each parsed on its own, as
    the screen renders each), numbered on across them."""
    return [block for text in texts for block in code_blocks(text)]


def answer_text(texts: list[str]) -> str:
    """The whole answer: its messages, a blank line between them, no trailing blank."""
    return "\n\n".join(t.strip("\n") for t in texts if t.strip()).rstrip()


def list_text(blocks: list[Block]) -> str:
    """The /copy list entry."""
    if not blocks:
        return "The last answer has no code block: /copy copies the whole answer."
    lines = [f"Code blocks of the last answer ({len(blocks)}; /copy N copies one):"]
    for i, block in enumerate(blocks, 1):
        first = next((line.strip() for line in block.text.splitlines() if line.strip()), "(empty)")
        if len(first) > FIRST_LINE:
            first = first[: FIRST_LINE - 3] + "..."
        count = len(block.text.splitlines())
        kind = f"{block.lang}, " if block.lang else ""
        lines.append(f"  {i}. {kind}{count} line{'s' if count != 1 else ''}: {first}")
    return "\n".join(lines)


def out_of_range(n: int, blocks: list[Block]) -> str:
    if not blocks:
        return f"The last answer has no code block {n}: it has none (/copy copies the whole answer)."
    choices = "/copy 1" if len(blocks) == 1 else f"/copy 1 to /copy {len(blocks)}"
    return (f"The last answer has {len(blocks)} code block{'s' if len(blocks) != 1 else ''}, "
            f"not {n}: {choices} (/copy list shows them).")


def b64_len(text: str) -> int:
    n = len(text.encode("utf-8", "surrogatepass"))
    return 4 * ((n + 2) // 3)


def fits(text: str) -> bool:
    """Whether `text` goes out as one OSC 52 sequence (OSC52_MAX)."""
    return b64_len(text) <= OSC52_MAX


def osc52(text: str, environ: Mapping[str, str]) -> str:
    """The bytes that put `text` on the terminal's clipboard ("c"), for the multiplexer
    `environ` says this runs in; "" when it is too long (fits)."""
    if not fits(text):
        return ""
    data = base64.b64encode(text.encode("utf-8", "surrogatepass")).decode("ascii")
    plain = f"\x1b]52;c;{data}\x07"
    if environ.get("TMUX"):
        # `set-clipboard on` takes the plain form; `allow-passthrough on` the wrapped one
        # (every ESC inside doubled). Both on: the same text is set twice, no harm.
        return plain + "\x1bPtmux;" + plain.replace("\x1b", "\x1b\x1b") + "\x1b\\"
    if environ.get("STY"):
        return "".join(f"\x1bP{plain[i : i + SCREEN_PIECE]}\x1b\\" for i in range(0, len(plain), SCREEN_PIECE))
    return plain


def size_text(text: str) -> str:
    lines = len(text.splitlines()) or 1
    return f"{len(text):,} character{'s' if len(text) != 1 else ''}, {lines:,} line{'s' if lines != 1 else ''}"


def report(what: str, text: str, *, clipboard: str, path: str, file_error: str | None,
           streaming: bool = False, lang: str = "") -> tuple[str, str]:
    """The entry after a copy: (level, text). clipboard: "osc52" (sent), "tmux" (tmux
    load-buffer -w took it), "too_big" (not sent) or "none" (no terminal: headless mode).
    Level error only when the text went nowhere."""
    where = []
    if clipboard == "tmux":
        where.append("to tmux's paste buffer and the terminal's clipboard (tmux load-buffer -w)")
    elif clipboard == "osc52":
        where.append("to the terminal's clipboard (OSC 52)")
    if file_error is None:
        where.append(f"to {path}" + (" (for a terminal that ignores OSC 52)" if clipboard == "osc52" else ""))
    size = (f"{lang}, " if lang else "") + size_text(text)
    head = f"Copied {what} ({size}) " + " and ".join(where) + "." if where else ""
    notes = []
    if clipboard == "too_big":
        size_kib = len(text.encode("utf-8", "surrogatepass")) / 1024
        notes.append(f"It is too long for the terminal's clipboard ({size_kib:,.0f} KiB; OSC 52 carries at most "
                     f"{OSC52_MAX * 3 // 4 // 1024} KiB)" + (": the file has it whole." if file_error is None else "."))
    if file_error is not None:
        notes.append(f"{path} could not be written ({file_error}).")
    if streaming:
        notes.append("The answer being written now is not in it: /copy again when it ends.")
    if not where:
        return "error", f"Nothing copied of {what} ({size}). " + " ".join(notes)
    return "info", " ".join([head, *notes])


def write_file(path: str | os.PathLike, text: str) -> None:
    """Replace the copy file with `text`, whole or not at all, private (0600 in a 0700
    directory, like the journal). Raises OSError."""
    from dashfloat import private

    path = os.fspath(path)
    private.ensure_dir(os.path.dirname(path))
    tmp = f"{path}.{os.getpid()}.tmp"
    fd, _notes = private.open_private(tmp, os.O_WRONLY | os.O_TRUNC)
    try:
        view = memoryview(text.encode("utf-8", "surrogatepass"))
        while view:
            view = view[os.write(fd, view):]
    except BaseException:
        os.close(fd)
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    os.close(fd)
    os.replace(tmp, path)


def tmux_load(text: str, environ: Mapping[str, str], timeout: float = 3.0) -> str | None:
    """Inside tmux ($TMUX): hand `text` to `tmux load-buffer -w -`, which makes a paste
    buffer and sets the outer terminal's clipboard with tmux's defaults. None when it
    took it, else why not (not in tmux, no tmux program, an old tmux without -w...)."""
    if not environ.get("TMUX"):
        return "not in tmux"
    import subprocess

    try:
        done = subprocess.run(["tmux", "load-buffer", "-w", "-"], input=text.encode("utf-8", "surrogatepass"),
                              capture_output=True, timeout=timeout, env=dict(environ), check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return str(exc)
    if done.returncode != 0:
        return done.stderr.decode("utf-8", "replace").strip() or f"exit status {done.returncode}"
    return None
