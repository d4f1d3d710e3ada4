"""Generates man/dashfloat.1 from the tables that drive the program.

KEYBINDINGS comes from the keymap table, CONFIGURATION from the configuration key table,
so the page cannot drift from the code: `python -m dashfloat.manpage --check FILE` (run by
`make lint` and by a test) fails when the committed page differs. `make man` rewrites it.
"""

from __future__ import annotations

import sys

from dashfloat import __version__

HEAD = r""".TH DASHFLOAT 1 "2026" "dashfloat {version}" "User Commands"
.SH NAME
dashfloat \- full\-screen terminal coding agent for OpenAI\-compatible endpoints
.SH SYNOPSIS
.B dashfloat
.RB [ \-C
.IR DIR ]
.RB [ \-\-base\-url
.IR URL ]
.RB [ \-\-model
.IR NAME ]
.RB [ \-\-colors
.IR auto | 1 | 16 | 256 ]
.RB [ \-\-ascii | \-\-unicode ]
.RB [ \-\-connect\-timeout
.IR S ]
.RB [ \-\-read\-timeout
.IR S ]
.br
.B dashfloat
.RB \-\-show\-config " | " \-\-reset\-terminal " | " \-\-version " | " \-\-help
.SH DESCRIPTION
.B dashfloat
is a full\-screen terminal program for working with a language model over ssh on small
servers.
You type a request at the prompt; the model's answer streams into the transcript above it,
rendered from Markdown (headings, emphasis, lists, quotes, links, tables and fenced code
with syntax highlighting).
Reasoning that a model streams apart from its answer is shown dimmed and collapsed.
.PP
It speaks the OpenAI\-compatible chat\-completions protocol with server\-sent events, so it
works with OpenAI, Ollama, vLLM, llama.cpp, LM Studio, OpenRouter, Groq, DeepSeek, Mistral
and others.
With nothing configured it talks to a local Ollama at
.IR http://localhost:11434/v1 .
When no model is configured it asks the endpoint's
.B /models
list: the only model is used, otherwise the list is shown with how to choose.
.PP
The screen is redrawn only where it changed, streamed text is copied to the screen at most
every 80 ms, and an idle
.B dashfloat
sets no timer and writes nothing.
The terminal is restored on every exit: normal quit, Ctrl\-C, SIGTERM, SIGHUP (a dropped
ssh connection) and internal errors.
The mouse is not captured, so the terminal's own text selection keeps working.
.SH OPTIONS
.TP
.BI \-C " DIR"
Start in
.IR DIR .
The working directory is the root that tools are confined to.
.TP
.BI \-\-base\-url " URL"
The endpoint's base URL, up to and including
.I /v1
(for example
.IR https://api.openai.com/v1 ).
Requests go to
.IR URL /chat/completions.
.TP
.BI \-\-model " NAME"
The model to ask.
Without it, the model comes from the environment or configuration, or from the
endpoint's model list.
Inside the program,
.B /model
.I NAME
switches model and
.B /model
lists the endpoint's models.
.TP
.BR \-\-colors " " auto | 1 | 16 | 256
Colour depth.
.B auto
follows the terminal (TERM, the terminfo colour count) and
.BR NO_COLOR ;
1 is monochrome.
.TP
.B \-\-ascii
Use ASCII glyphs, spinner and borders only.
The default picks ASCII when no locale variable mentions UTF\-8 and TERM is a plain
console (linux, vt100, vt220, ansi).
.TP
.B \-\-unicode
Use Unicode glyphs even where
.B \-\-ascii
would be chosen automatically.
.TP
.BI \-\-connect\-timeout " SECONDS"
How long to wait for the connection to the endpoint (default 10).
.TP
.BI \-\-read\-timeout " SECONDS"
How long a stream may stay silent before it is abandoned (default 120).
.TP
.B \-\-show\-config
Print the effective configuration, with the place each value came from, and exit.
The API key is never printed, only whether it is set.
.TP
.B \-\-reset\-terminal
Print the escape sequence that leaves the alternate screen and turns off mouse tracking,
bracketed paste and focus reporting, and run
.BR "stty sane" .
Use it after a
.B dashfloat
(or any full\-screen program) was killed with SIGKILL and left the terminal broken.
.TP
.B \-\-version
Print the version and exit.
.TP
.BR \-h ", " \-\-help
Print a short usage summary and exit.
.SH TOOLS
Every request offers the model five tools.
Paths are relative to the working directory (see
.BR \-C );
a path that resolves outside it, also through a symbolic link, is refused, and so are
FIFOs, sockets and devices.
.B ~
and
.B $VARIABLES
in paths are never expanded.
.TP
.B read_file \fIpath\fP [\fIoffset\fP] [\fIlimit\fP]
A window of lines (default the first 2000; at most 2000 lines and 64 KiB are returned, with
both totals reported).
Files above 256 KiB are read only as far as the window; binary files are reported, not
dumped.
Runs without asking.
.TP
.B list_directory \fR[\fIpath\fP]
The sorted entries of a directory, at most 501 of them.
Runs without asking.
.TP
.B write_file \fIpath content\fP
Creates or replaces a file (and missing parent directories).
Asks first, showing a diff.
.TP
.B edit_file \fIpath search_block replace_block\fP
Replaces the one exact occurrence of
.I search_block
(none, or more than one, is an error the model sees; files above 8 MiB are refused).
Asks first, showing a diff.
.TP
.B execute_command \fIcommand\fP [\fIcwd\fP]
Runs
.I command
with
.BR "/bin/sh \-c" ,
in its own process group, with standard input from
.IR /dev/null .
Asks first, showing the exact command and directory.
Output (standard output and error together) is shown live and kept up to 32 KiB.
After
.B exec_timeout
seconds (default 30), on Esc, and when dashfloat quits or its terminal hangs up, the whole
process group is killed, background jobs included.
.PP
Files are written through a temporary file in the same directory that is renamed into
place, so a failed write leaves the original untouched; an existing file keeps its mode.
If a file changes between the preview and the approval, nothing is written and the model
is told.
The transcript shows a row per call and its outcome with at most 30 lines of output.
Control characters, escape sequences, bidi controls and zero\-width characters in
previews, tool output, file names and model text are shown escaped, never sent to the
terminal.
A turn ends after
.B max_episodes
model requests (default 50).
.SH CONFIRMATIONS
A call that changes something waits for a key while its preview is in the transcript
(scroll it with PgUp and PgDn first if it is long).
.B y
approves that one call; the next call asks again.
.B n
rejects it; the model is told and may try another way.
.B Esc
rejects it and every other call of the same answer, and ends the turn, so you can say
what to do instead.
Keys typed before the preview was drawn are thrown away: typeahead never decides.
While a call waits, the prompt keeps its text and ignores other keys.
.SH KEYBINDINGS
.\" Generated from dashfloat/ui/keymap.py by `make man`; do not edit by hand.
"""

MIDDLE = r""".PP
A bracketed paste is inserted into the prompt as text and never submits it, however many
newlines it holds.
A lone Esc is recognised after about 0.125 s (the time the terminal needs to tell it from
the start of an escape sequence).
.SH CONFIGURATION
The keys
.BR base_url ,
.B api_key_env
and
.B headers
decide where the API key is sent, so a project file (which comes with a cloned
repository) may not set them; an error says so.
An unknown key, a value of the wrong type or out of range, or a file that cannot be read
is an error that names the file, the key and what is allowed; dashfloat then exits with
status 2.
.PP
.\" Generated from dashfloat/config.py by `make man`; do not edit by hand.
"""

TAIL = r""".SH FILES
.TP
.I .dashfloat/config.toml
Project configuration, in the working directory.
.TP
.I $XDG_CONFIG_HOME/dashfloat/config.toml
User configuration (default
.IR ~/.config/dashfloat/config.toml ).
.TP
.I $XDG_STATE_HOME/dashfloat/history
Prompt history, one JSON string per line (default
.IR ~/.local/state/dashfloat/history ).
.TP
.I $XDG_STATE_HOME/dashfloat/dashfloat.log
The log.
Errors and tracebacks go here, never onto the screen.
.SH ENVIRONMENT
.TP
.B OPENAI_API_KEY
The API key, sent as
.BR "Authorization: Bearer" .
Not needed for local servers.
.TP
.B OPENAI_BASE_URL
The endpoint's base URL (as
.BR \-\-base\-url ).
.TP
.B DASHFLOAT_MODEL
The model (as
.BR \-\-model ).
.TP
.B DASHFLOAT_API_KEY_ENV
The name of the variable that holds the key, instead of
.BR OPENAI_API_KEY .
.TP
.B NO_COLOR
When set and not empty, no colours (as
.BR "\-\-colors 1" ).
.TP
.B TERM
The terminal type.
.B dumb
and
.B unknown
cannot run the full\-screen interface.
.TP
.B DASHFLOAT_NO_SCROLL_REGIONS
When set and not empty, scroll the transcript by repainting it instead of with the
terminal's scroll margins (DECSTBM).
Only for a terminal that mishandles scroll margins; it costs many more bytes per line.
.TP
.BR VISUAL ", " EDITOR
The editor Ctrl\-G opens the prompt in (default
.BR vi ).
.TP
.BR XDG_CONFIG_HOME ", " XDG_STATE_HOME
Where the user configuration, the history and the log live.
.SH EXIT STATUS
.TP
.B 0
Normal exit, also after SIGTERM or SIGHUP.
.TP
.B 1
A runtime error; a one\-line summary is printed after the screen is restored and the
traceback is in the log.
.TP
.B 2
A usage or configuration error, or no usable terminal (stdin or stdout not a tty, or
TERM=dumb).
.SH EXAMPLES
.TP
.B dashfloat
Chat with the local Ollama, using its only model or listing them.
.TP
.B "OPENAI_API_KEY=sk\-... dashfloat \-\-base\-url https://api.openai.com/v1 \-\-model gpt\-4o\-mini"
Chat with OpenAI.
.TP
.B "dashfloat \-\-base\-url http://gpu\-box:8000/v1 \-\-ascii \-\-colors 16"
A vLLM server, from a plain console.
.TP
.B "dashfloat \-\-show\-config"
See which file or variable each setting comes from.
.SH RECOVERING A BROKEN TERMINAL
A program killed with SIGKILL (or by the out\-of\-memory killer) cannot restore the terminal.
Run
.B "dashfloat \-\-reset\-terminal"
or
.BR reset ,
or type
.B "stty sane; printf '\ee[?1049l\ee[?25h\ee[?2004l\ee[?1000l\ee[?1002l\ee[?1006l'"
blind.
.SH SEE ALSO
.BR ssh (1),
.BR tmux (1),
.BR stty (1)
"""


def generate() -> str:
    from dashfloat.config import man_configuration_section
    from dashfloat.ui.keymap import man_keybindings_section

    return (
        HEAD.replace("{version}", __version__)
        + man_keybindings_section()
        + MIDDLE
        + man_configuration_section()
        + TAIL
    )


def main(argv: list[str]) -> int:
    text = generate()
    if argv[:1] == ["--check"]:
        path = argv[1] if len(argv) > 1 else "man/dashfloat.1"
        try:
            with open(path, encoding="utf-8") as f:
                current = f.read()
        except OSError as exc:
            print(f"{path}: {exc.strerror}", file=sys.stderr)
            return 1
        if current != text:
            print(f"{path} is out of date with the keymap or configuration tables: run `make man`", file=sys.stderr)
            return 1
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
