"""Generates man/dashfloat.1 from the tables that drive the program.

KEYBINDINGS comes from the keymap table, COMMANDS from the slash-command table and
CONFIGURATION from the configuration key table, so the page cannot drift from the code: `python -m dashfloat.manpage --check FILE` (run by
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
.RB [ \-\-permission\-mode
.IR MODE ]
.RB [ \-\-allow
.IR RULE ]...
.RB [ \-\-ask
.IR RULE ]...
.RB [ \-\-deny
.IR RULE ]...
.RB [ \-\-max\-turns
.IR N ]
.RB [ \-\-max\-tokens
.IR N ]
.RB [ \-\-max\-cost
.IR AMOUNT ]
.RB [ \-\-continue " | " \-\-resume
.IR ID " | "
.BR \-\-no\-journal ]
.br
.B dashfloat
.RI [ options ]
.B \-p
.RI [ PROMPT ]
.RB [ \-\-output\-format " " text | json | stream\-json ]
.RB [ \-v ]
.RB [ \-\-approvals " " none | stdin | cmd:\fIPROGRAM\fP ]
.RB [ \-\-approval\-timeout
.IR S ]
.br
.B dashfloat
.RB [ \-C
.IR DIR ]
.B sessions
.RB [ \-\-all ]
.br
.B dashfloat
.RI [ options ]
.B policy check
.IR CALL ...
.br
.B dashfloat
.RI [ options ]
.B policy list
.br
.B dashfloat
.RB \-\-show\-config " | " \-\-reset\-terminal " | " \-\-man " | " \-\-version " | " \-\-help
.SH DESCRIPTION
.B dashfloat
is a full\-screen terminal program for working with a language model over ssh on small
servers.
You type a request at the prompt; the model's answer streams into the transcript above it,
rendered from Markdown (headings, emphasis, lists, quotes, links, tables and fenced code
with syntax highlighting).
A paragraph is wrapped at the width of the screen: its single line breaks read as spaces, as
Markdown means them; a line that ends in two spaces or a backslash still ends there.
A block of an answer larger than @big_block@ (a megabyte on one line, a log of thousands of
lines) is shown as its plain lines as they arrive, and code larger than @highlight_max@ is not
highlighted: the screen keeps up with an answer of any size and keys answer at once.
A table that is still streaming shows as one line that says
.B table
and comes whole when it is complete; if the answer pauses, or the table passes @table_held@
rows, its rows are shown as they came.
Reasoning that a model streams apart from its answer is shown dimmed and collapsed.
.PP
It speaks the OpenAI\-compatible chat\-completions protocol with server\-sent events, so it
works with OpenAI, Ollama, vLLM, llama.cpp, LM Studio, OpenRouter, Groq, DeepSeek, Mistral
and others.
With nothing configured it talks to a local Ollama at
.IR @default_base_url@ .
When no model is configured it asks the endpoint's
.B /models
list: the only model is used, otherwise the list is shown with how to choose.
.PP
A request that fails is an entry in the transcript that says what went wrong, in the
server's own words where it gave any, and what to do about it.
An error the server reports inside its answer stream, or a stream that stops before its end,
keeps the text that had arrived and marks it incomplete; a server that answers with an
empty stream is reported as a server failure, not as an empty answer.
When the server says the conversation no longer fits the model's context window, DashFloat
takes the window it names, compacts the conversation and sends the request once more (see
.BR CONTEXT );
when that cannot help, the entry says so:
.B /clear
starts a new conversation, or
.B /model
switches to a model with a larger window.
.PP
The screen is redrawn only where it changed, streamed text is copied to the screen at most
every @stream_ms@ ms (an answer's first words, and words after a pause, at once; the spinner
steps every @tick_ms@ ms), and an idle
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
.BR NO_COLOR :
a terminal whose terminfo entry has no colours, such as
.B vt100
or
.BR vt220 ,
gets none (bold, underline and reverse video only);
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
How long to wait for the connection to the endpoint (default @connect_timeout@).
.TP
.BI \-\-read\-timeout " SECONDS"
How long a stream may stay silent before it is abandoned (default @read_timeout@).
.TP
.BI \-\-permission\-mode " MODE"
How calls that no rule decides are handled:
.B ask
(the default),
.BR accept\-edits ,
.B read\-only
or
.BR unrestricted ;
see
.BR PERMISSIONS .
.TP
.BI \-\-allow " RULE"
Allow calls that match
.IR RULE ,
e.g.\&
.BR "\%'execute_command(git\ status)'" .
Repeatable.
An allow never beats a matching ask or deny rule of any layer.
.TP
.BI \-\-ask " RULE"
Ask before calls that match
.IR RULE .
Repeatable.
.TP
.BI \-\-deny " RULE"
Deny calls that match
.IR RULE ,
e.g.\&
.BR "\%'read_file(**/.env)'" .
Repeatable.
Deny always wins, in every mode.
.PP
A rule that does not parse is an error (exit status 2) that says what is wrong with it.
.TP
.B \-\-continue
Resume the session of this working directory (or of
.BR \-C 's)
with the most recent activity: its transcript is drawn again and the conversation goes on
where it stopped (see
.BR SESSIONS ).
.TP
.BI \-\-resume " ID"
Resume the session
.IR ID ,
of any directory; a prefix of the id that no other session has is enough.
It runs in the session's own working directory
.RB ( \-C ,
if given, must name that directory).
.TP
.B \-\-no\-journal
Keep no journal of this session: nothing to continue later, no
.BR /undo ,
and the permission decisions go to the log instead.
.TP
.BI \-\-max\-turns " N"
A budget: at most
.I N
requests to the model from now (one prompt may take several: each answer that asks for tools
is one).
See
.BR "USAGE AND BUDGETS" .
.TP
.BI \-\-max\-tokens " N"
A budget: at most
.I N
tokens from now, the input of every request counted as well as its output.
.TP
.BI \-\-max\-cost " AMOUNT"
A budget: at most
.I AMOUNT
spent from now, by the
.B prices
table of the configuration.
.TP
.BR \-p " [" \fIPROMPT\fP "], " \-\-print " [" \fIPROMPT\fP ]
Headless mode: run
.I PROMPT
to the end of its turn without the full\-screen interface, print the result, and exit
(see
.BR "HEADLESS MODE" ).
Without
.IR PROMPT ,
the prompt is all of standard input, which must not be a terminal.
Needs no terminal;
.BR \-\-continue " and " \-\-resume
work with it.
.TP
.BR \-\-output\-format " " text | json | stream\-json
With
.BR \-p :
the final answer as text (the default), one JSON result object, or every event as a JSON
line as it happens.
.TP
.BR \-v ", " \-\-verbose
With
.B \-p
and text output: tool calls, their output and results, notes and usage on standard error.
.TP
.BR \-\-approvals " " none | stdin | cmd:\fIPROGRAM\fP
With
.BR \-p :
who answers a call that needs approval.
.B none
(the default): nobody, so it is refused, and the exit status is 4;
.BR stdin :
JSON lines on standard input;
.BI cmd: PROGRAM\fR:\fP
a program asked about each one.
.TP
.BI \-\-approval\-timeout " SECONDS"
With
.BR \-p :
reject a question that has no answer after
.I SECONDS
(default @stdin_timeout@ for stdin, @program_timeout@ for a program).
.TP
.BR sessions " [" \-\-all ]
List the sessions of this working directory, newest activity first: the id, when it
started, its last activity, the number of turns, the conversation's size in tokens at its
last request (as the provider counted it; with a
.B ~
before it, DashFloat's estimate, when the provider sent no usage), and its first prompt; with
.BR \-\-all ,
the sessions of every directory, with their directory.
Only each journal's first line and its last few KiB are read.
.TP
.BI "policy check " CALL ...
Print the decision each
.I CALL
would get, which rule in which layer (or which default, mode or check) decided it, and
why, then exit; see
.BR PERMISSIONS .
Nothing is executed and no terminal is needed.
.TP
.B policy list
Print the permission mode and every rule by layer, the built\-in defaults included, then
exit.
.TP
.B \-\-show\-config
Print the effective configuration, with the place each value came from, and exit.
The API key is never printed, only whether it is set.
.TP
.B \-\-reset\-terminal
Print the escape sequence that leaves the alternate screen, turns off mouse tracking,
bracketed paste and focus reporting, resets the attributes, the scrolling margins and the
character set, and run
.BR "stty sane" .
It keeps the terminal's UTF\-8 mode: no full reset (which drops it on the Linux console),
UTF\-8 selected again
.RB ( "ESC % G" )
and the tty's
.B iutf8
flag kept (which
.B "stty sane"
alone clears) when the locale is UTF\-8 or the flag was set.
Use it after a
.B dashfloat
(or any full\-screen program) was killed with SIGKILL and left the terminal broken.
.TP
.B \-\-man
Show this page, and exit.
It is carried inside the program, so it works where no page is installed (from
.IR dashfloat.pyz ,
see
.BR FILES ):
through
.B "man \-l"
where
.BR man (1)
exists; else as plain text through
.B $PAGER
.RB ( less
or
.B more
when it is unset) on a terminal, or written as it is to a file or pipe.
.TP
.B \-\-version
Print the version and exit.
.TP
.BR \-h ", " \-\-help
Print a short usage summary and exit.
.SH TOOLS
Every request offers the model six tools.
Paths are relative to the working directory (see
.BR \-C );
a path that resolves outside it, also through a symbolic link, is refused, and so are
FIFOs, sockets and devices.
An absolute path may be spelled through a symbolic link to the working directory or through
its real path (a project entered through a link, macOS
.IR /tmp ):
both name the same place, shown relative to the working directory.
Every file and directory is opened beneath the working directory, one name at a time
.RB ( openat2 (2)
with RESOLVE_BENEATH where the kernel has it, else a walk of directory descriptors), and
written and renamed in the directory that was checked, so a directory swapped for a link
to the outside while a tool runs never leads there: the call fails with an error instead.
There is no shell:
.B ~
and
.B $VARIABLES
are never expanded, and a path that starts with either is refused (it would otherwise
create a directory named
.B ~
in the project, a trap for a later
.BR "rm \-rf ~" );
.B ./~
is the file named
.BR ~ ,
and a
.B ~
or
.B $
later in a path is an ordinary character.
A path that ends in
.B /
names a directory: on a file it is \(lqnot a directory\(rq, and
.B write_file
refuses it.
A name above @name_max@ bytes or a path above @path_max@ bytes is \(lqname too long\(rq,
refused before anything on disk is looked at.
.PP
File names are bytes; the model reads text.
A name that is valid UTF\-8 reaches the model as it is; in one that is not, each byte that is
not is written
.BI \ex NN
(and each backslash of that name
.BR \e\e ),
and the result says so.
Every tool reads such a name back to the same bytes, so a name from
.B list_directory
reaches the same file in
.BR read_file ,
.BR write_file ,
.B edit_file
and as the
.I cwd
of
.BR execute_command .
Whatever bytes file names, file contents, command output or the model itself carry
(invalid UTF\-8, lone surrogates, NUL), every request dashfloat sends is valid UTF\-8 JSON:
file content and command output that are not UTF\-8 reach the model with U+FFFD in place
of those bytes (a
.B read_file
result says so).
.TP
.B read_file \fIpath\fP [\fIoffset\fP] [\fIlimit\fP]
A window of lines (default the first @read_max_lines@; at most @read_max_lines@ lines and @read_max_bytes@ are returned, with
both totals reported).
Files above @stream_above@ are read only as far as the window; binary files are reported, not
dumped.
A file with more than one hard link is read as usual, and the result (and its row) says how
many names it has.
Runs without asking (by default).
.TP
.B list_directory \fR[\fIpath\fP]
The sorted entries of a directory, at most @list_max@ of them.
Runs without asking (by default).
.TP
.B search_workspace \fIpattern\fP \fR[\fIpath\fP] [\fIregex\fP] [\fIglob\fP] [\fImax_results\fP]
The lines that contain a text (or, with
.IR regex ,
match a regular expression) in the files under a directory (default the working directory)
or in one file, as
.I file:line: text
with the number of matching lines per file; case\-sensitive.
.I glob
keeps the files whose name matches
.RB ( *.py ),
or with a
.B /
whose path relative to
.I path
does
.RB ( src/**/*.ts ),
as a
.B .gitignore
line does, with
.B {a,b}
for alternatives
.RB ( *.{ts,tsx} ).
It uses
.BR rg (1)
when it is installed, else
.B "git grep"
in a git work tree, else a search of its own in Python; the regular expressions are those of
the program that runs (the common syntax works everywhere).
It skips binary files,
.BR .git ,
.BR node_modules ,
virtualenvs
.RB ( .venv ,
.BR venv ,
or a directory with a
.BR pyvenv.cfg )
and what
.B .gitignore
files ignore (a
.I path
given explicitly is searched even so), and every file a permission rule keeps
.B read_file
from reading without a question (the result counts them): a deny rule on reading a file
holds for searches too.
It never follows a symbolic link, and a file whose directory turned into a link to the outside
during the search is left out.
At most
.I max_results
lines are shown (default @search_results@, at most @search_results_max@), each cut to
@search_line_chars@ characters around its match, and the whole result is at most
@search_output@ and takes at most @search_timeout@ seconds; past a bound the result says so
and still counts every matching line and file (the program's own count), so the model can
narrow the search.
.B rg
and
.B git
run in their own process group, killed with it on Esc, quit or the time limit, with the
environment of
.I "Commands that run without a question"
(a repository's config cannot make git run a program or change its output) and no
.B rg
config file
.RB ( RIPGREP_CONFIG_PATH
is removed).
Runs without asking (by default).
.TP
.B write_file \fIpath content\fP
Creates or replaces a file (and missing parent directories).
Asks first (by default), showing a diff.
.TP
.B edit_file \fIpath search_block replace_block\fP
Replaces the one exact occurrence of
.I search_block
(none, or more than one, is an error the model sees; files above @edit_max@ are refused).
Asks first (by default), showing a diff.
.TP
.B execute_command \fIcommand\fP [\fIcwd\fP]
Runs
.I command
with
.BR "/bin/sh \-c" ,
in its own session and process group, with standard input from
.I /dev/null
and
.B DASHFLOAT_CALL
set to an id of the call.
Asks first (by default), showing the exact command and directory.
Output (standard output and error together) is shown live and kept up to @exec_output@.
Nothing the command starts outlives the call: dashfloat is a child subreaper (Linux), so a
process that detaches with
.BR setsid ,
.B nohup
or a double fork is handed to dashfloat instead of to init, and every process of the call
(descendants of its shell, and orphans in its session, with its
.B DASHFLOAT_CALL
in their environment or holding its output pipe) is killed with SIGKILL, which no program
can ignore.
That happens when the shell exits (background jobs and daemons it left are stopped; the
result tells the model how many), after
.B exec_timeout
seconds (default @exec_timeout@), on Esc, and when dashfloat quits, gets SIGTERM or its terminal hangs
up.
A command may have at most
.B exec_max_processes
processes and threads at once (default @exec_max_processes@): beyond that, forks fail (the kernel's
per\-user limit, which does not apply to root) and a command seen above it is stopped.
A process that leaves the session, clears its environment and closes the pipe before
dashfloat has seen it (it looks every @reaper_poll@ s) is not recognised.
.PP
Whether a call runs, asks or is refused is decided by the permission rules and mode (see
.BR PERMISSIONS ).
.PP
Every call goes through the same pipeline, in a fixed order: argument validation, the path
policy, the permission rules (see
.BR PERMISSIONS ),
the pre_tool_use hooks (see
.BR HOOKS ),
then the question if one is due, the tool itself, and post\-processing: the configured API
key (and the value of a configured header whose name looks secret) is replaced by
.B [redacted: API key]
(or
.BR "[redacted: \fIName\fB header]" )
in everything a tool returns (and in its live output) before the model or the screen sees
it, and post_tool_use hooks may add notes.
A decision can only be made stricter along the way (deny over ask over allow).
Consecutive read\-only calls that need no question run together (@read_pool@ at most) and their
results still reach the model in its own order; a call that asks or changes something runs
alone.
.PP
Files are written through a temporary file in the same directory that is renamed into
place, so a failed write leaves the original untouched; an existing file keeps its mode.
A file with several hard links is replaced under the name given only: the other names keep
the old content, and the preview and the result say that the link is broken.
If a file changes between the preview and the approval, nothing is written and the model
is told.
The transcript shows a row per call and its outcome with at most @excerpt_lines@ lines of output.
Control characters, escape sequences, bidi controls and zero\-width characters in
previews, tool output, file names and model text are shown escaped, never sent to the
terminal.
A turn ends after
.B max_episodes
model requests (default @max_episodes@).
One answer of the model may hold at most @max_calls@ tool calls and @episode_bytes@ of
content, reasoning and tool\-call arguments together (one stream event at most
@event_bytes@); beyond that the stream is closed with an error that names the bound.
.SH CONFIRMATIONS
A call that changes something waits for a key while its preview is in the transcript.
The preview starts with its totals: a new file's lines and size, or the lines added and
removed and the file's size now and before.
Runs of @blank_run@ or more blank lines show as one line that counts them
(\(lq+\&... 3,000 blank lines ...\(rq), and a line longer than @window_chars@ characters is
cut there, with a marker that says how many more it has.
A preview longer than @window_lines@ lines shows its first @window_lines@ and a marker with the totals, and
.B v
opens the whole preview in the transcript's place: every line, each cut at @full_chars@
characters, at most @full_lines@ lines or @full_mb@ MB of text in all.
PgUp, PgDn, Up, Down, Home and End scroll it; q, Esc or v go back to the transcript;
.BR y ,
.B n
and
.B a
decide there as well.
Reading it is never required: a y counts whenever the rules below let it.
.PP
A command's preview is the exact command, and nothing of it may sit out of sight while y is
offered.
A run of @blank_run_chars@ or more spaces and tabs (or of invisible characters), and any run of
characters that look blank but are not spaces (U+00A0, U+2000 to U+200A, U+3000, U+2800,
U+FFA0 and others), shows as a count in the marker style:
\(lqecho hi\(la4,000 spaces\(ra; touch x\(rq,
\(lq\(la2,000 \(mu U+3000\(ra\(rq; @blank_run@ or more blank lines show as
\(lq\(la2,999 blank lines\(ra\(rq.
A line still longer than @command_chars@ characters shows its head and its end around
\(lq\(laN more characters\(ra\(rq, and a command of more than @window_lines@ lines shows its first and
last @window_half@ around a marker that names the lines between, so the end of a command, where
\(lq; touch ...\(rq would hide, is always in the window; the totals line says what was
counted or left out, and
.B v
shows every line whole.
A \(la or \(ra in the command itself is shown escaped
.RB ( \eu27e8 ),
so a count cannot be faked.
The command runs exactly as sent: only its display changes.
The tool's row shows the command the same way, its head and its end.
.PP
.B y
approves that one call; the next call asks again.
.B n
rejects it; the model is told and may try another way.
.B a
pressed twice, with a pause between and within @always@ s, approves the call and allows
this exact command (or this file) for the rest of the session: the first
.B a
shows the rule the second would add, for example
.BR write_file(notes.md) ,
and y or n still decide for this call only.
.B Esc
(or Ctrl\-C) rejects it and every other call of the same answer, and ends the turn, so you
can say what to do instead.
.PP
These are single keys for a person who reads the preview and answers, but a person typing
a sentence when the preview appears cannot answer it by accident:
.IP 1. 4
No key decides before the preview has been drawn, nor in the first @grace@ s after it
(keys typed before it was drawn are thrown away).
.IP 2. 4
A key decides only if it came alone from the terminal: keys that arrive together (a
paste, a terminal's answer to a query sequence, keys typed faster than they are read)
never do.
.IP 3. 4
.BR y ,
.BR n ,
.B a
and
.B v
count only after @quiet@ s without typing.
Every key but scrolling and help is typing, the keys that decided nothing too, so after a
stray key the question takes keys again only after a pause.
.IP 4. 4
.BR y ,
.B n
and the second
.B a
act @hold@ s later, and only if no other key follows within that time: a letter followed
at once by another is the start of a word (\(lqyou ...\(rq).
.IP 5. 4
.B Esc
and Ctrl\-C need rules 1 and 2 only, and act at once: they never occur in typed text.
.PP
The question reads
.B Apply?
when a y or n pressed now would count and
.B Wait...
(dimmed) when it would not, and the status bar offers the keys that decide only when
they would (Esc alone meanwhile); a key that decides nothing says why in the status bar.
Keys typed on a question are not typed into the prompt, which keeps its text: the
question lists them as \(lqtyped here, not used\(rq, so what you typed stays in sight.
A paste while a question waits is dropped the same way.
.PP
Above the keys, a question that a rule, a hook or a check made ask says why:
.RB \(lq "asks: rule ""execute_command(awk *)"" in user config would allow it, but its awk script may write a file: a > redirection" \(rq,
.RB \(lq "asks: rule ""execute_command(make *)"" in user config matches" \(rq,
the hook that asked and its reason, or what the repository check found.
A question of the built\-in default (no rule matched) says nothing more.
.SH KEYBINDINGS
.\" Generated from dashfloat/ui/keymap.py by `make man`; do not edit by hand.
"""

MIDDLE = r""".PP
A bracketed paste is inserted into the prompt as text and never submits it, however many
newlines it holds (while a confirmation waits it is dropped: see
.BR CONFIRMATIONS ).
A lone Esc is recognised after about @lone_esc@ s (the time the terminal needs to tell it from
the start of an escape sequence).
.SH COMMANDS
.\" Generated from dashfloat/commands.py by `make man`; do not edit by hand.
"""

CONFIGURATION_HEAD = r""".SH CONFIGURATION
The keys
.BR base_url ,
.B api_key_env
and
.B headers
decide where the API key is sent, so a project file (which comes with a cloned
repository) may not set them; an error says so.
Nor may it set
.B hooks
or
.BR hook_timeout :
hooks run commands without asking (see
.BR HOOKS ).
For the same reason a project file may not contain
.B allow
rules or set
.B permission_mode
to
.B accept\-edits
or
.B unrestricted
(see
.BR PERMISSIONS ).
An unknown key, a value of the wrong type or out of range, or a file that cannot be read
is an error that names the file, the key and what is allowed; dashfloat then exits with
status 2.
.PP
.\" Generated from dashfloat/config.py by `make man`; do not edit by hand.
"""

TAIL = r""".SH OVER SSH
.SS Copying out
Text cannot be selected with the mouse across pages of a full\-screen program, so
.B /copy
puts the last answer (the text the model wrote in the latest turn that wrote any, as
Markdown), or with
.B /copy
.I N
its
.IR N th
code block (numbered from 1 in the order the screen shows them;
.B /copy list
lists them with their language, length and first line), on the clipboard of the terminal
you sit at: DashFloat writes an OSC 52 escape sequence, which travels through ssh like
any output.
It also writes the text to
.IR $XDG_STATE_HOME/dashfloat/copy.txt
(0600, replaced by each copy; the entry shows the path), for a terminal that ignores
OSC 52 (\fBscp\fR or \fBcat\fR it from there).
While an answer streams,
.B /copy
is taken at once and copies what is finished, and says so.
.PP
Inside tmux (\fB$TMUX\fR) a program's own OSC 52 is dropped with tmux's default
.BR "set\-clipboard external" ,
so DashFloat hands the text to
.B "tmux load\-buffer \-w \-"
(tmux 3.2 or later): it becomes a tmux paste buffer and tmux sets the outer terminal's
clipboard itself.
If that fails, the sequence is written both plain (taken with
.BR "set\-clipboard on" )
and wrapped for
.B allow\-passthrough on
(tmux 3.3 or later).
Inside GNU screen (\fB$STY\fR) it goes out in pieces screen passes through.
Terminals cap the sequence (hterm at the bound below, others far lower): a text whose
base64 is longer than @clipboard_max@ characters (about @clipboard_kib@ KiB) is not sent at all,
never cut, and the entry says so; the file has it whole.
.SS A home that cannot be written
At start DashFloat creates and writes a file in its state directory
.RI ( $XDG_STATE_HOME/dashfloat ).
If it cannot (a read\-only or full file system, a path under a file, a directory it may not
create), one entry says which directory, why, and what this session goes without: no log,
no prompt history on disk (the prompts of this session still come back with Up, and an
existing history file is still read), no journal for a new session (so no
.BR \-\-continue ;
.B /undo
keeps the previous contents of files in memory instead, within
.BR undo_store_mb ).
Everything else works.
.B \-\-continue
and
.B \-\-resume
still resume a session from a journal that can be read but not written; what follows is
then not recorded, and an entry says so.
A write that fails later (the disk filled up) is said once for each file: the log, the
prompt history, the journal; each then stops trying, and what can be kept in memory is.
Headless mode says the same once on stderr (a
.B notice
event with
.BR \-\-output\-format " stream\-json)."
.SS A small terminal
Below @min_cols@ columns or @min_rows@ rows the layout cannot be read: the screen shows
.B "terminal too small:"
with the size and the size needed, centred, in the longest wording that fits (down to a
single cell), and the whole layout comes back when the terminal grows.
Nothing is lost meanwhile: an answer goes on streaming into the transcript.
Keys that would act unseen do nothing: text typed into the hidden prompt, and every key on
a confirmation, which starts over (its pause before a key counts, see
.BR CONFIRMATIONS )
once it is on screen again.
Without a confirmation, Esc, Ctrl\-C, Ctrl\-D on an empty prompt, Ctrl\-L and Ctrl\-Z
still work.
A terminal that reports no size at all (0x0) gets nothing drawn until it has one.
.SH PERMISSIONS
Every tool call gets one of three decisions:
.B allow
(it runs),
.B ask
(it waits for your key, see
.BR CONFIRMATIONS )
or
.B deny
(it does not run, and the model is told why).
Rules decide them in layers, and a permission mode decides what no rule does.
.SS Rules
A rule names a tool and, in parentheses, a pattern over the tool's main argument: the
.I path
of read_file, write_file, edit_file, list_directory and search_workspace (the directory or
file searched), or the
.I command
of execute_command.
A bare tool name matches any argument.
.PP
.RS
.nf
execute_command(git status)
execute_command(git log *)
write_file(docs/**)
read_file(**/.env)
edit_file
.fi
.RE
.PP
The tool is one of the six tool names, exactly
.RB ( Bash(...)
is an error that suggests execute_command); there is no wildcard for all tools (use a
permission mode).
The pattern is everything between the first
.B (
and the last
.BR ) .
Text after the last
.BR ) ,
unbalanced parentheses, an empty pattern, and control or invisible characters are errors.
.SS Path patterns
Path patterns work like
.I .gitignore
patterns and are always anchored at the working directory.
.TP
.BR * ", " ? ", " [abc]
.B *
matches within one path segment (dot files included),
.B ?
one character,
.B [abc]
one of a class; none of them matches
.BR / .
.TP
.B **
As a whole segment, any number of segments:
.B **/.env
is
.I .env
at any depth,
.B a/**/b
matches
.IR a/b ,
.I a/x/b
and deeper.
.TP
.BR docs/** ", " docs/
The directory
.I docs
itself and everything under it (not
.IR docsx/a ).
.TP
.B .env
Only the file
.I .env
at the root: patterns are relative to the working directory.
A leading
.B ./
is ignored; a leading
.BR / ,
a leading
.B ~
and
.B ..
segments are errors (such a rule could never match, and a deny rule that never matches is
a hole).
.B \e
escapes the next character.
.PP
The call's path is normalised first:
.BR ./ ,
doubled slashes and
.B ..
are collapsed and an absolute path inside the working directory (also one spelled through
its real path or through a link to it) is made relative;
.B ~
is never expanded.
An allow rule matches case\-sensitively and must match every name of the file, also its
name with symbolic links resolved.
A deny or ask rule matches if any name matches, compared after folding case, Unicode
normalisation (NFC), invisible characters and trailing dots and spaces of each segment:
.B read_file(.env)
also denies
.IR .ENV .
.SS Command patterns
A command pattern is split into words the way the shell splits a command (quotes work as
in the shell).
An unquoted
.B *
as a whole word is a wildcard: as the last word it matches any number of remaining words,
none included
.RB ( "git log *"
matches
.B "git log"
and
.BR "git log \-p" );
elsewhere it matches exactly one word.
A
.B *
inside a word is an error; quote it
.RB ( '*' )
for a literal star.
Every other word must equal the command's word after unquoting:
.B "'git' status"
matches
.BR "git status" ,
.B "git status \-\-porcelain"
does not.
For an allow rule the command word is compared literally, so
.B "/usr/bin/git status"
does not match
.BR "git status" ;
a deny or ask rule also tries the command word's base name, ignoring case, so
.B rm\ *
catches
.BR /bin/rm ,
.B RM
and
.BR \erm .
.PP
An allow rule allows a command only if the whole command is one simple command that the
rule names.
Lists and pipes
.RB ( ";" ", " "&&" ", " "||" ", " "|" ", " "&" ,
newlines), command substitution
.RB ( "$(...)" ,
backticks), redirections, variable prefixes
.RB ( "X=1 cmd" ),
subshells, compound commands, expansions
.RB ( $VAR ,
globs, braces,
.BR ~ ),
comments, non\-ASCII characters outside quotes, look\-alike and invisible characters, and
anything that does not parse make a command at least ask
.RB ( "command shape"
in
.BR "policy check" ).
A line that dash (Debian's
.BR /bin/sh )
and bash read differently does not parse: quotes inside
.BR "$(( ))" ,
bash's
.BR "$[ ]" ,
a single quote inside a double\-quoted
.BR "${...}" ,
.B case
after bash's
.BR time ,
.B function
or
.BR coproc .
A substitution that bash runs inside quoted text is a command like any other:
.BR "$(( '$(cmd)' ))" ,
.BR "(( '$(cmd)' ))" ,
an array subscript such as
.BR "test \-v 'a[$(cmd)]'" ,
a substring's offset
.BR "${x:'$(cmd)'}" .
A line that turns on what makes bash read its later lines differently does not parse
either: history expansion
.RB ( "set \-H" ", " "set \-o histexpand" ),
or extended patterns
.RB ( "shopt \-s extglob" ,
and always inside
.BR "[[ ]]" )
where one such as
.B !(x)
follows.
Arguments that let a harmless\-looking command run programs or write files
.RB ( "find \-exec" ,
.BR "find \-delete" ,
.BR "git \-c" ,
.BR "git \-\-output" ,
.BR "sed \-i" ,
.BR "sort \-o" ,
.BR "tar \-\-to\-command" ,
.BR "rsync \-e" ,
.BR "rg \-\-pre" ,
.BR "make \-\-eval"
and a variable assignment given to make,
.BR "cargo \-\-config" ,
.BR "npm \-\-node\-options" ,
.BR "pytest \-\-basetemp" ,
.BR "curl \-T"
and others) turn an allow into ask; so does any use of
.B gdb
or bash's
.BR fc ,
and a word that undoes an option the allow rule names
.RB ( "\-\-no\-dry\-run"
after the
.B \-n
of
.BR "git clean \-n *" ,
.B "\-\-verif"
after
.BR "git commit \-\-no\-verify *" :
an abbreviation counts,
.B "\-\-apply"
after
.BR "git apply \-\-stat" ).
.PP
A deny or ask rule judges every part of a command: each simple command of a list or pipe,
also inside substitutions, subshells, loops and functions; the command run by a wrapper
.RB ( sudo ,
.BR env ,
.BR timeout ,
.BR xargs ,
.B nohup
and others); the command strings given to shells and string runners
.RB ( "sh \-c" ,
.BR eval ,
.BR "ssh host ..." ,
.BR watch ,
sed's
.BR "e cmd" ,
awk's
.BR system("cmd") ,
.B "print | \(dqcmd\(dq"
and
.BR "\(dqcmd\(dq | getline" ;
one built at run time asks);
.BR "find \-exec" ;
.B "git \-c key=!cmd"
and
.BR "\-\-upload\-pack=" ;
the values of variable prefixes.
One denied part denies the whole command.
A command whose words cannot be known in advance (such as
.BR "rm $X" )
asks when a deny or ask rule might match it; so does a line whose commands are known only
when it runs: a shell that reads its commands from stdin
.RB ( "echo ... | sh" ,
or
.BR su ,
.BR sg ,
.BR newgrp ,
.BR chroot ,
.BR unshare ,
.BR fakeroot ,
.B script
given no command), bash's
.BR fc ,
gdb's
.BR \-ex ,
and a value the line builds that bash evaluates
.RB ( "printf \-v x ...; let x" ,
.BR "read x; echo ${PWD:x}" ).
Rules judge the command line, not what programs do with it:
.BR "python \-c" ,
.B make
and scripts are not looked into.
.SS Layers
The layers, lowest first: the built\-in defaults, the user file, the project file, the
command line, and the session.
The strictest decision of all matching rules of all layers wins (deny, then ask, then
allow), so a project file can never relax a deny in the user file, and a deny anywhere
beats an allow anywhere.
.B policy check
names the rule and the layer that decided.
.PP
The built\-in defaults: read_file, list_directory and search_workspace allow; write_file,
edit_file and execute_command ask.
.PP
Some files make a program run code later: when you next
.B cd
into the directory, open your editor, start a shell, commit, install packages or push.
A write or edit of one of them always asks, in every mode
.RB ( unrestricted
included) and whatever allow rule matches, a blanket one such as
.B "write_file(**)"
or a session rule from the
.B a
key (there,
.B a
approves the call once and adds no rule); only a deny rule makes it stricter.
The question says why, beside the keys
.RB ( "always asks: direnv runs it when you next cd here" ),
and so does
.BR "policy check" .
The paths are matched at any depth below the working directory, ignoring case (and through
symbolic links), like a deny rule:
@always_ask_list@
.PP
Not on the list, because they run only when you run the project's own code, which the
model writes anyway (a question for each would teach you to press y without reading):
.IR Makefile ,
.IR setup.py ,
.IR pyproject.toml ,
.IR conftest.py .
Nor files that hold values, not code:
.I .env
(read by the program you run; direnv loads it only with its
.BR load_dotenv ),
.IR .editorconfig ,
.IR .gitignore .
A command that writes one of these files (\(lqecho ... > .envrc\(rq) is judged as a command:
it asks unless a command rule or the mode allows it.
Commands that name a
.I .git
or
.I .dashfloat
directory, or run
.B "git config"
to set something, always ask too.
.PP
In the user or project file, the rules are the
.BR allow ,
.B ask
and
.B deny
arrays of a
.B [permissions]
table:
.PP
.RS
.nf
[permissions]
allow = ["execute_command(git status)", "execute_command(git diff *)"]
ask = ["read_file(secrets/**)"]
deny = [
  "read_file(**/.env)",
  { rule = "execute_command(rm *)", match = ["rm \-rf /", "ls; rm x"] },
  { rule = "read_file(*.pem)", not_match = ["keys/a.pem"] },
]
.fi
.RE
.PP
An entry is a rule, or an inline table with the rule and examples: each
.B match
example (a command, or a path relative to the working directory) must match the rule and
each
.B not_match
example must not, checked when the file is read.
A failing example, or a rule that does not parse, is an error that names the file, the
list and the rule.
(An inline table must stay on one line: TOML does not allow line breaks inside one.)
.B permission_mode
is a top\-level key: put it above the
.B [permissions]
header.
On the command line, the rules are given with
.BR \-\-allow ,
.B \-\-ask
and
.BR \-\-deny ,
each repeatable.
The session layer holds the exact commands and files allowed for the rest of the session
with the
.B a
key on a confirmation; they last until
.B dashfloat
exits.
.B /permissions
lists every rule by layer (session rules numbered), and
.B /permissions revoke
.I N
removes session rule
.IR N .
.B /mode
.I NAME
switches the permission mode for the session; every decision (the tool, a hash of the
exact arguments, the decision and who made it: a rule and its layer, the mode, or your key)
is written to the log.
.PP
A project file comes with a cloned repository, so it may only tighten the policy: it may
have
.B ask
and
.B deny
rules, but an
.B allow
rule there is an error that says to move it to the user file or to the command line, and
so is a
.B permission_mode
of
.B accept\-edits
or
.BR unrestricted .
A project file may set
.B ask
or
.BR read\-only ;
when the user file sets a stricter mode, the project file's is ignored.
.SS Modes
The permission mode comes from
.BR \-\-permission\-mode ,
.BR \%DASHFLOAT_PERMISSION_MODE ,
or the
.B permission_mode
key.
.TP
.B ask
The default: what no rule decides gets the built\-in default.
.TP
.B accept\-edits
Writes and edits inside the working directory that no rule decides are allowed; commands
still ask.
.TP
.B read\-only
Every write, edit and command is denied, whatever the rules.
.TP
.B unrestricted
Everything is allowed, commands that are not one simple command included, except what a
deny or ask rule matches (or might match, for a command that cannot be fully analysed)
and the built\-in protection.
.PP
Deny rules hold in every mode, and no mode relaxes an ask rule or the built\-in
protection of the files that run code later (see
.BR Layers ).
.SS Checking the policy
.B "dashfloat policy check"
.I CALL
prints the decision a call would get, what decided it (the path policy, a rule and its
layer, a built\-in default, the mode, the command's shape, a dangerous argument or the
repository check), the
reason and the mode.
It goes through the same checks as a real run, in the same order: a path that resolves
outside the working directory (also through a symbolic link) is refused by the path policy
.RB ( deny ,
decided by
.BR "path policy" )
before any rule is asked.
It reads the same configuration files, environment and options as a real run, executes
nothing (hooks are not run; for a command that runs git, git itself reads the repository, see
below) and needs no terminal.
A
.I CALL
is written like a rule with the exact argument:
.BR "'execute_command(git status; rm \-rf /)'" ,
.BR "'write_file(docs/a.md)'" .
The exit status is 0 whatever the decision, and 2 for a malformed
.I CALL
or a configuration error.
.PP
.RS
.nf
$ dashfloat \-\-deny 'execute_command(rm *)' \e
    policy check 'execute_command(git status; rm \-rf /)'
deny   execute_command(git status; rm \-rf /)
  decided by: rule "execute_command(rm *)" in command line
  reason: a deny rule matches
  mode: ask
.fi
.RE
.PP
.B "dashfloat policy list"
prints the mode and every rule by layer, lowest first, the built\-in defaults included.
.SS Commands that run without a question
No command runs without a question by default: execute_command asks unless an allow rule
(the user file, the command line, the
.B a
key) or the
.B unrestricted
mode allows it.
A rule judges the command line, but a repository can name programs that a harmless\-looking
command runs:
.B "git status"
runs
.BR core.fsmonitor ,
the
.I post\-index\-change
hook and the clean filter that
.I .gitattributes
names;
.B "git diff"
runs
.BR diff.external ,
textconv and filter drivers;
.B "git log"
runs
.B gpg.program
when
.B log.showSignature
is set; an alias runs anything; a
.I .git
file may point at another repository; a directory that looks like a bare repository is one.
A cloned repository (or an unpacked archive, or files the model wrote) is untrusted, so a
command that runs without a question (not in
.B unrestricted
mode) gets two more checks, after the rules and the hooks; they can only turn an allow into
ask.
.PP
It runs with git's program\-running settings neutralised: git configuration in the
environment
.RB ( GIT_CONFIG_COUNT ,
.BR GIT_CONFIG_KEY_ \fIn\fP,
.BR GIT_CONFIG_VALUE_ \fIn\fP),
which git reads after every configuration file and hands to every git the command starts,
submodules included, sets
.B core.fsmonitor
to false,
.B core.hooksPath
to
.I /dev/null
(no hook of the repository runs),
.B core.editor
and
.B sequence.editor
to
.B :
(no editor),
.BR core.sshCommand ,
.BR core.askPass ,
the gpg programs and
.B credential.helper
to git's defaults,
.B protocol.ext.allow
to never and
.B safe.bareRepository
to explicit.
Where your own configuration (the system and global files, outside the working directory,
and the environment) sets one of these, your value is used instead.
.B GIT_PAGER
and
.B PAGER
are
.B cat
and
.B LESSOPEN
and
.B LESSCLOSE
are removed, so
.B less
runs no input preprocessor on the repository's files.
.PP
A command that runs git asks instead when a repository it would use (the working
directory's, those of
.BR "git \-C" ,
.BR cd ,
.B "env \-C"
and
.B "sudo \-D"
targets, and their submodules) names, in its own configuration or in any configuration
file inside the working directory, a program that no single setting can switch off: a
filter driver
.RB ( filter. \fIx\fP .clean ,
.BR .smudge ,
.BR .process ),
.BR diff. \fIx\fP .textconv ,
.BR diff. \fIx\fP .command ,
.BR diff.external ,
.BR merge. \fIx\fP .driver ,
.BR remote. \fIx\fP .uploadpack ,
a credential helper for one URL, an alias (for a git command that is not built in), a value
that starts with
.BR ! ,
or any other key whose name ends like a program
.RI ( cmd ,
.IR command ,
.IR program ,
.IR helper ,
.IR driver ...);
when its
.I .git
points outside the working directory (other than to the repository that contains the
working directory, a linked worktree's or a submodule's own directory); when its work tree
is elsewhere
.RB ( core.worktree );
when the command sets
.B GIT_
variables or names
.B \-\-git\-dir
or
.BR \-\-work\-tree ;
when its words are known only when it runs; when a wrapper runs git where the check cannot
follow (a login's home:
.B "sudo \-i"
or
.BR "su \-" ;
another root or namespace:
.BR chroot ,
.BR systemd\-run ,
.BR "nsenter \-\-wd" ...);
when it names
.BR \-\-bare ,
or an option of git's own before the command that the check does not know (it might take
the next word as its value, and git's command would be another:
.B "git \-\-shallow\-file log ..."
runs what follows);
when the config includes a file
.RB ( include.path ,
.BR includeIf.*.path :
followed as deep as git follows them, ten files, whatever their conditions; deeper asks)
that names a program, or that the command may write before a git it starts reads it (one
in a git directory, this repository's or its superproject's, before any command that
writes; one in the work tree or the working directory, or one that does not exist yet,
before a command that writes the work tree);
when the git directory has symbolic links out of it (git reads and writes through them;
hooks aside, but for
.BR "git init" ,
which writes the sample hooks again into a repository that exists) or
.B objects/info/alternates
outside it; when a rebase or cherry-pick in progress would run an
.B exec
line or a merge strategy that is not built in; when
.B "git worktree"
(other than
.BR list )
would act on linked worktrees outside the working directory, or
.BR "git init" ,
.B clone
or
.B "worktree add"
would write a repository there; when a command that talks to
another repository
.RB ( push ,
.BR fetch ,
.BR pull ,
.BR ls\-remote ,
.BR "archive \-\-remote" ,
.BR clone ,
.BR remote ,
.BR subtree ,
.BR submodule ,
.BR maintenance ;
any command in a partial clone, which fetches missing objects from its promisor remote)
would talk to one on this machine (a path,
.BR file:// ,
a directory's name, a member of a remote group
.RB ( remotes. *),
or a URL rewritten to one by
.BR url. \fIbase\fB .insteadOf ):
git runs git there, with that repository's config and hooks; when the repository's own
config sets how git connects
.RB ( http. *,
.BR remote. *\fB.proxy\fR:
a proxy with TLS checks off would get the credentials your helper gives for the real host);
when the repository's config has an alias that git runs itself
.RB ( alias.remote\- *,
.BR alias.merge\- *,
.BR alias.credential\- *:
a URL's transport, a merge strategy, a credential helper);
when the work tree lies outside the working directory around a git directory inside it;
when the repository's config names files outside the working directory that git reads or
writes
.RB ( format.outputDirectory ,
.BR commit.template ,
.BR mailmap.file ...);
when
.B "git init"
or
.B "git clone"
would write outside the working directory (through a link, too);
when git is older than 2.38; and when git cannot read the repository (or a state file is
longer than DashFloat reads).
The question and
.B "policy check"
(decided by
.BR "repository check (git)" )
name the key, its value and its file.
What
.B "git lfs install \-\-local"
writes does not ask.
A command you approve at the question runs as git runs it, hooks and filters included.
.PP
Likewise for Rust: an allowed
.BR cargo ,
.BR rustc ,
.B rustfmt
or another of rustup's proxies asks, decided by
.BR "repository check (cargo)" ,
when a
.I .cargo/config.toml
(or
.IR .cargo/config )
in the working directory or a directory of it above where it runs names a program cargo
runs
.RB ( build.rustc\-wrapper ,
.BR build.rustc ,
.BR build.rustdoc ,
.BR target.*.runner ,
a linker, a credential provider,
.BR net.git\-fetch\-with\-cli ;
even
.B "cargo tree"
runs the wrapper), when a
.I rust\-toolchain.toml
there names a toolchain
.B path
(rustup runs the toolchain found there), or when such a file does not parse.
Files above the working directory, and
.IR ~/.cargo ,
are yours and are not read.
.PP
What the usual allow rules allow, and why:
.TP
.BR "git status" ", " "git diff" ", " "git log" ", " "git show" ", " "git branch" ", " "git blame"
Safe with the neutralisation and the checks above
.RB ( "git \-c" ,
.BR \-\-output ,
.BR \-\-ext\-diff ,
.B \-\-textconv
and
.B \-\-git\-dir
ask as dangerous arguments, and so do
.B "git grep \-O"
(a pager it names) and
.B "git rebase \-x"
(a command); the
.B \-O
of diff, log and show only orders the files, and does not ask when its file is a relative
path that stays in the working directory).
.TP
.BR ls ", " cat ", " head ", " tail ", " wc ", " pwd ", " which ", " stat ", " du ", " file
Read files and run nothing that a repository names.
.TP
.BR grep ", " rg ", " find
Read no project configuration
.RB ( rg
reads a configuration file only when
.B RIPGREP_CONFIG_PATH
in your environment names one);
.BR "rg \-\-pre" ,
.BR "find \-exec" ,
.BR \-ok ,
.B \-delete
and
.B \-fprint
ask.
.TP
.B less
Its output is not a terminal, so it copies the file; without
.B LESSOPEN
it runs nothing.
.TP
.BR make ", " npm ", " yarn ", " pnpm ", " cargo ", " "pip install" ", " "python \-m" ", " pytest ", " tox ", " pre\-commit
Run what the project names, whatever the arguments: a rule that allows them lets the
repository run any program.
.B "make \-n"
is no dry run (the Makefile's
.B $(shell ...)
runs when it is read, and so do the lines that use
.BR $(MAKE) ),
so
.BR "make \-n" ,
.BR \-q ,
.B \-p
and
.B \-t
ask as dangerous arguments;
.B yarn
runs the script that
.B yarnPath
in
.I .yarnrc.yml
names;
.B "cargo metadata"
and
.B "cargo tree"
run the
.B rustc
that
.I .cargo/config.toml
names.
.TP
.BR sed ", " awk
Their scripts can run programs and write files, so an allowed
.B sed
or
.B awk
asks when its script does more than filter text:
.BR sed 's
.B e
command and the
.B e
flag of
.BR s ,
its
.BR w " and " W
commands and the
.B w
flag,
.BR awk 's
.BR system() ,
pipes
.RB ( | ,
.BR |& ),
.BR getline ,
gawk's
.B \(at
(an indirect call, a function named at run time;
.BR \(atload ,
.BR \(atinclude ),
.B \-W
and short options DashFloat does not know, output redirections
.RB ( >
and
.B >>
in a print or printf statement, outside parentheses, as awk's grammar reads them, but to
.I /dev/stdout
or
.IR /dev/stderr :
a
.B >
in a pattern or in parentheses is a comparison and does not ask; where a script's
tokens are ambiguous, as a
.B /
that may be a division or a regex, any
.B >
or
.B |
asks), and a script read from a file
.RB ( \-f ,
also abbreviated:
.BR \-\-inc=f ).
.B sed
is read as GNU sed reads it: a label ends at a blank, so
.B ":x e cmd"
runs
.BR cmd ;
a bracket expression in a regex holds the delimiter as a plain character
.RB ( "/[/]/" );
its
.B \-e
scripts are one program, a line each.
.B "tree \-o"
(it writes its listing to a file) asks as a dangerous argument.
.TP
.BR git ", " env
Some of their arguments carry a command the rules do not read as one, so an allowed
.B git
asks for
.BR "bisect run" ,
.BR "submodule foreach" ,
the filters of
.B filter\-branch
and
.BR "send\-email \-\-sendmail\-cmd" " (and " \-\-smtp\-server ", " \-\-to\-cmd ", " \-\-cc\-cmd ", " \-\-header\-cmd ),
and
.B "instaweb \-\-httpd"
(besides the dangerous arguments
.BR \-c ", " \-\-exec ", " \-x ...),
and an allowed
.B env
asks for
.B \-S
.RB ( \-\-split\-string ),
whose words neither the deny rules nor the repository check see.
.TP
.RB "Wrappers (" nice ", " timeout ", " sudo ", " env ", " nohup "...)"
An allowed wrapper is judged by the command it runs as well: with
.B "nice *"
allowed,
.B "nice git \-c core.pager=CMD log"
and
.B "timeout 5 sed \-i ..."
ask, as the wrapped command would.
.SH HOOKS
Hooks are your own commands, run around every tool call.
They are set in the user file only, in a
.B [hooks]
table, with
.B hook_timeout
(seconds, default @hook_timeout@) at the top level:
.PP
.RS
.nf
hook_timeout = 5
[hooks]
pre_tool_use = ["~/bin/check\-call"]
post_tool_use = ["~/bin/lint\-after\-write"]
.fi
.RE
.PP
Hooks run without a confirmation, so a project file that sets
.B hooks
or
.B hook_timeout
is an error: a cloned repository cannot run anything through them.
Each entry is a command line for
.BR "/bin/sh \-c" ;
the hooks of an event run in order, in the working directory, for every call.
.PP
A hook gets the call as one line of JSON on its standard input (it need not read it):
.PP
.RS
.nf
{"event": "pre_tool_use", "tool": "execute_command",
 "arguments": {"command": "git push"}, "id": "call_1",
 "cwd": "/home/me/proj"}
.fi
.RE
.PP
A
.B post_tool_use
hook also gets
.BR "\(dqresult\(dq" ,
the result the model will read.
Standard output and standard error are read together (at most @hook_output@), so a hook that
answers in JSON should print nothing else.
.SS pre_tool_use
A pre hook runs before the call, after the permission rules, and answers with its exit
status:
.TP
.B 0
with no output: no opinion.
.TP
.B 0
with a JSON object
.BR "{\(dqdecision\(dq: \(dqdeny\(dq, \(dqreason\(dq: \(dq...\(dq}" :
that decision,
.BR deny ,
.B ask
or
.BR allow ;
.B reason
is optional.
.TP
.B 2
deny; what the hook printed is the reason, which the model is told.
.PP
Anything else fails closed: another exit status, death by a signal, a timeout, output that
is not a JSON object, a decision other than the three, or more than @hook_output@ of output make
the call
.B ask
(never run it without a question), and the failure is shown in the transcript with the
hook and what went wrong.
.PP
A hook can only tighten a decision: deny beats ask beats allow.
When a rule, the mode or a default already said deny or ask, an
.B allow
from a hook does not relax it: the attempt is recorded (in the log and as a note in the
transcript) and ignored.
An
.B allow
from a hook only stands where the call was allowed anyway, and a hook's deny holds in every
permission mode.
.SS post_tool_use
A post hook runs after the call, with its result.
Exit status 0 with output adds that output to the result as a note for the model; a JSON
object
.B "{\(dqnote\(dq: \(dq...\(dq}"
gives the note instead.
A note is kept to @hook_note@.
Any other outcome is shown as a failed hook in the transcript.
A post hook never changes the result itself.
.SS Timeouts and processes
Hooks run like
.BR execute_command :
in their own session, with the same environment (TERM=dumb, no pager, no credential
prompt,
.BR DASHFLOAT_CALL ),
and nothing they start outlives them (see
.BR TOOLS ).
When the hook exits, after
.B hook_timeout
seconds, on Esc, and when dashfloat quits, every process it started is killed, background
jobs and daemons included; a hook that has not read its input does not hold anything up.
.SH CONTEXT
.SS The system message
Every request starts with one system message, built when a conversation starts (at start, on
resume and on
.BR /clear ):
a short built\-in prompt (the working directory, the operating system and what
.I /bin/sh
is, today's date, the tools offered and how to use them well, that a write, an edit or a
command waits for approval and may be rejected, how to report the result), then the
instructions of these files, in this order:
.IP 1. 4
.IR $XDG_CONFIG_HOME/dashfloat/AGENTS.md ,
yours;
.IP 2. 4
one file per directory from the git root (the nearest directory above the working directory
that has a
.IR .git ;
the working directory itself outside a git work tree) down to the working directory:
.I AGENTS.override.md
when the directory has one, else
.IR AGENTS.md .
.PP
A later file is more specific; the prompt tells the model so, and that your own requests
win over all of them. Empty files are skipped. A project file is opened beneath the git
root, so one that is a symbolic link leading out of the project (to
.IR ~/.aws/credentials ,
say) is refused and named, never sent; only regular files are read.
Together they are cut at @instructions_kib@ KiB, and a marker says where and how much was
left out, to the model and in the entry.
A dim entry at start names the files that were read and their sizes.
The system message is never compacted.
.SS Compaction
Before every request (after a prompt, and after every round of tool results within a turn,
never while calls are pending) DashFloat estimates the request's tokens: about
@chars_per_token@ ASCII characters a token, a token for each other character, the tool
schemas included, scaled by the ratio of what the provider reported
.RB ( usage.prompt_tokens )
to the estimate of the request before (between 0.5 and 2.5).
Above
.B compact_threshold
x
.B context_window
it compacts the conversation:
.IP 1. 4
Free: the outputs of older tool calls, oldest first, become short stubs that keep their small
fields (ok, path, lines, exit_code...) and say what was removed and how to get it again; the
outputs the model has not read yet never are.
Stubbing stops at
.B compact_threshold
\- 0.2 of the window (or half the threshold).
.IP 2. 4
If that is not enough: one request to the model, without tools, summarises the messages
between the conversation's first request and its latest turns (the most recent
@recent_pct@% of the window, whole turns where it can) under the headings
@summary_headings@.
The summary replaces them; the first request, the system message and the latest turns stay
as they were.
An assistant message with tool calls is never separated from its results.
.IP 3. 4
A summary that fails, is empty, is cut short or is not smaller than what it would replace is
refused; those messages are then dropped with a marker that says so (an earlier summary
among them is kept).
.IP 4. 4
Last, if the request still does not fit, its longest messages are cut, tool outputs first,
with a marker, until it does; a tool output stays valid JSON.
.PP
Each compaction is an entry,
.BR "context compacted: 31.2k \(-> 8.9k tokens" ,
with what was summarised, stubbed, dropped or cut, and a
.B compact
event in the journal with both figures (see
.BR SESSIONS ).
After @failures_to_stop@ failed compactions in a row (a summary that could not be used, or a
request that still does not fit) the turn stops with an error entry.
.B /compact
.RI [ FOCUS ]
compacts at once: everything before the latest turn is summarised (FOCUS is handed to the
summariser);
.B /clear
starts a fresh conversation in the same session.
.PP
The window: the
.B context_window
key; else what the endpoint's model list states for the model (vLLM
.BR max_model_len ,
llama.cpp
.B meta.n_ctx_train
(the model's own: a server started with a smaller
.B \-c
refuses a longer request, and says its size),
OpenRouter and Together
.BR context_length ,
Groq
.BR context_window ,
Mistral
.BR max_context_length ,
LM Studio's own model list, asked when its OpenAI list says nothing); else @default_window@.
Ollama states none: set
.B context_window
to its
.BR num_ctx .
A server that refuses a request as too long for its window makes DashFloat take the window
it names (or a little less than what was sent), compact, and send the request once more.
.SH USAGE AND BUDGETS
Every request to the model is metered: its input (prompt) tokens, how many of them the
provider served from its cache, and its output (completion) tokens, as the provider reports
them in the usage of its stream (dashfloat asks for it with
.BR stream_options.include_usage ).
A provider that reports none (some servers ignore the option), and a request cancelled or
broken before its usage came, is counted from an estimate of its text, and the figures say so
with a
.BR ~ .
Every request of a turn counts, the ones that ended in tool calls too, and the summary request
of a compaction (see
.BR CONTEXT ;
the status bar's
.B ctx
figure is still the size of the last request of the last turn, with a
.B ~
when no usage came for it and it is an estimate).
The status bar shows the tokens used since dashfloat started, with their cost when the
.B prices
table of the user configuration has the model (per million input, output and cached input
tokens), and each budget as a limit
.RB ( "used 48.2k/100k tok $0.0310/$0.50 3/20 req" ),
highlighted from @warn_share@ of a budget on.
.B /usage
shows the totals, the last turn, the model's price and every budget; a resumed session also
shows what it used before (not counted by the budgets).
Each request is a
.B usage
event in the journal.
.PP
The budgets,
.B max_turns
(requests to the model),
.B max_tokens
(input and output tokens of every request: each request sends the whole conversation again,
so a long turn costs far more input than output) and
.BR max_cost ,
count from the start of dashfloat (a resumed session starts them afresh), and are set with
.BR \-\-max\-turns ,
.B \-\-max\-tokens
and
.BR \-\-max\-cost ,
or the configuration keys of the same names (a project file may lower one, never raise it).
Before each request they are checked: a budget already reached, or one that the input of the
request itself (estimated) would pass, keeps it from going; after each request, a budget
reached keeps the tool calls of that answer from running (their results say why).
Either way the turn ends with an error entry that names the budget, a
.B budget
event in the journal, and, for a program that drives dashfloat, a
.B stopped
message with the reason
.BR budget .
A budget reached by a final answer is said at once; the next prompt is then not sent.
At @warn_share@ of a budget a warning entry comes, once.
With
.B max_cost
set, a model the
.B prices
table has no price for cannot be used: its cost could not be counted.
.PP
The repeat guard: when the model makes the same call with the same arguments
@repeat_limit@ times in a row within one turn, the call asks first, whatever rule or mode
would have let it run (a deny stays a deny), and the question says why; the
.B a
key approves it once and adds no session rule.
.SH SESSIONS
Every session is recorded as it happens, in an append\-only journal (unless the
configuration key
.B journal
is false or
.B \-\-no\-journal
is given).
.B "dashfloat \-\-continue"
resumes the latest session of the working directory,
.BI "dashfloat \-\-resume " ID
a given one, and
.B "dashfloat sessions"
lists them.
.SS The journal
One file per session,
.IR $XDG_STATE_HOME/dashfloat/sessions/ NAME \- HASH / ID .jsonl ,
where
.I NAME
is the working directory's name and
.I HASH
part of the SHA\-256 of its real path, so a directory reached through a symbolic link
finds the same sessions.
It is created at the session's first prompt.
Each line is one JSON object whose first keys are
.B seq
(0, 1, 2 ... in the session),
.B time
(Unix seconds) and
.BR type .
The first line is the header
.RB ( type " " session :
.BR format ,
.BR id ,
.B cwd
(the real path),
.BR model ,
.BR host ,
.BR dashfloat ,
.BR title ,
the first prompt's first line); then one event per line:
.B prompt
(turn, text, and the note the model got with it),
.B reasoning
(what the model reasoned apart, before its answer),
.B answer
(status, content, calls with their arguments),
.B ui
(a message the screen showed that the other events do not imply: tool rows, notes,
previews, errors),
.B decision
(each permission decision on a call: the decision, who or which rule decided, the mode,
the SHA\-256 of the arguments; this is the audit trail),
.B audit
(a mode set with
.BR /mode ,
a session rule added or revoked),
.B run
(a call with a side effect starts),
.B result
(a call's result exactly as the model reads it),
.B change
(a file about to be written or edited: its path, the SHA\-256 of its content before and
after),
.B cancel
(the turn was cancelled: by a key, or
.B by
the signal that stopped a headless run),
.B undo
(what
.B /undo
did),
.B turn_end
(why the turn ended, as
.B stop_reason
in HEADLESS MODE says, the usage and the token count, with
.B tokens_estimated
when it is DashFloat's estimate),
.B compact
(a compaction: why, how, the tokens of the next request before and after, the window, and
what was done as data: the stubs, the summary or the marker, the cuts; see
.BR CONTEXT ),
.B clear
.RB ( /clear ),
.B resume
and
.BR end .
A resumed session applies each
.B compact
and
.B clear
to the conversation it rebuilds, so it gets the compacted conversation while the journal
holds the history once.
.PP
A string longer than @journal_big@ characters is stored once beside the journal, in
.IR ID .store/text/ SHA256 ,
and the line holds
.B {\(dq$blob\(dq: \fISHA256\fP, \(dqsize\(dq: \fIN\fP}
instead: a file the model reads ten times is stored once, and a typical turn adds a few
KiB.
Every string round\-trips exactly, a file name that is not UTF\-8 included.
The API key and the values of secret headers never reach the journal or its store: they
are written as
.BR "[redacted: API key]" .
.PP
Each event is one
.BR write (2)
to the file, opened for appending; the file is flushed to the disk
.RB ( fsync (2))
before a call with a side effect runs, at the end of every turn, and when DashFloat leaves
(quit, SIGTERM, SIGHUP).
A DashFloat killed at any moment loses at most the event it was writing: on the next
start a last line cut short, or filled with zero bytes by a crash of the machine, is
skipped and the transcript says so; nothing before it is lost.
While a DashFloat appends to a session it holds a lock
.RB ( flock (2))
on its journal: a second
.B \-\-continue
of the same session is refused until the first has quit.
A journal that cannot be written (a full disk) is reported once in the transcript; the
session goes on, unrecorded.
.SS Resuming
A resumed session draws its last @ui_tail_turns@ turns again as they were (older ones are
counted, not drawn) and gives the model the whole conversation, exactly as it was.
The model is the session's, unless
.B \-\-model
is given; the permission mode, rules and session rules are those of this run.
When DashFloat was stopped in the middle of a turn (killed, crashed, or its terminal
lost), that turn is closed: a call that had not run gets a
.B cancelled
result that says it did not run; a call that was running gets a
.B cancelled
result that says its outcome is unknown; a question left open is shown as not decided.
The model is told, with the next prompt, that its previous turn was interrupted, so that
it checks before it repeats a side effect.
An answer that was streaming when DashFloat left (a quit, SIGTERM, or the terminal lost:
a dropped ssh connection) is kept as far as it had come, marked partial, as
.B Esc
keeps it, and that turn is recorded as cancelled.
Every call of the conversation has its one result before the first request.
.SS Undo
Before
.B write_file
or
.B edit_file
changes a file, its previous content (the bytes the approved preview was made from and
that the write checks again) is kept in
.IR ID .store/files/ SHA256 ,
once per content, at most
.B undo_store_mb
MiB per session (default @undo_store_mb@; the least recently used go first).
.B /undo
puts back the files changed by the last turn that changed files,
.BI "/undo " N
those of the last
.I N
such turns; a file DashFloat created is removed.
Each file's current content is compared with what DashFloat wrote: a file that holds it is
put back; a file changed since (by you or by a command), or removed, is never overwritten
unasked: its diff, from what it holds now to what
.B /undo
would put back, is shown as a question
.RB ( y
puts it back,
.B n
leaves it).
A path that now leads elsewhere (a directory replaced by a link) is left alone.
.B /undo
never touches a file DashFloat's tools did not write, and the model is told what it did
with the next prompt.
.PP
Commands can change any file, and
.B /undo
does not cover them.
When the working directory is in a git work tree, a command's row says which files it
changed:
.B "git status \-\-porcelain"
before and after it runs (and each listed file's size and time), within @git_timeout@ s,
with git run as for a command that runs without a question (see
.BR "Commands that run without a question" );
a repository whose config names a program git would run for it is not read, and the row
says so.
.SH HEADLESS MODE
.B "dashfloat \-p"
.I PROMPT
runs one prompt for a script, a CI job or cron: the same agent, tools, permission rules,
hooks and session journal as the full\-screen interface, without it (urwid is never
loaded).
It needs no terminal: standard input may be closed,
.B TERM
may be
.B dumb
or unset.
The turn runs to its end (the model answers without asking for a tool, an error, the
episode limit) and
.B dashfloat
exits with a status that says how it went.
.B "\-p"
without
.I PROMPT
reads the prompt from standard input:
.BR "{ echo 'Review this diff:'; git diff; } | dashfloat \-p" .
With
.I PROMPT
given, standard input is not read (unless
.BR "\-\-approvals stdin" ).
A prompt that starts with
.B /
is a command
.RB ( "dashfloat \-\-continue \-p /undo" );
an unknown one is a usage error.
.PP
The session is journalled as usual: the
.B result
event names it, and
.B "dashfloat \-\-resume"
.I ID
continues it, headless or in the full\-screen interface, where its transcript is drawn
as it happened.
.B \-\-continue
and
.B \-\-resume
work headless too.
The log is
.IR $XDG_STATE_HOME/dashfloat/dashfloat.log ,
as for the interface.
.SS Output formats
.TP
.B text
(the default) The final answer (the last one the model completed without asking for a
tool) on standard output, nothing else; escaped as on the screen when standard output is a terminal, as the model
wrote it otherwise.
Errors, warnings and calls that were not approved go to standard error, one line each;
with
.B \-v
(or when standard error is a terminal) tool calls, their live output and results, notes,
files changed and token usage too.
.TP
.B json
One JSON object on one line when the run ends: the
.B result
event below.
.TP
.B stream\-json
Every event as one JSON object per line (JSON Lines), each written with one
.BR write (2)
the moment it happens, whatever standard output is (a pipe, a file).
.PP
A reader that closes standard output early ends the run as a signal would, quietly, with
status @exit_pipe@.
Usage and configuration errors found before the run starts (a bad option, a rule that does
not parse, an empty prompt) print one line on standard error, no events, and exit with 2.
.SS Events
Schema version @schema_version@, as a JSON Schema (draft 2020\-12) in the repository,
.IR schema/dashfloat\-events.schema.json ,
and installed as
.IR share/dashfloat/dashfloat\-events.schema.json .
Every event has
.B type
(below),
.B seq
(1, 2, 3 ... in the run, without gaps),
.B time
(Unix seconds, to the millisecond) and
.B session_id
(the journal's id).
The first event,
.BR session.start ,
and the last,
.BR result ,
carry
.B schema_version
.RI ( MAJOR . MINOR ).
A minor version adds event types or fields, which a reader must ignore when it does not
know them; a major one removes, renames or changes one.
Every run that starts ends with exactly one
.B result
event, after an error or a signal too.
The types:
@headless_events@.SS Approvals
A call that would ask a person (see
.BR CONFIRMATIONS " and " PERMISSIONS )
gets an
.B approval.requested
event with an
.B approval_id
and the exact preview a person would see, escaped.
What happens next depends on
.BR \-\-approvals :
.TP
.B none
(the default) Nobody can approve: the call is refused at once, the model is told that
approval was required and is not available (it is not run), the refusal is listed in the
result's
.BR permission_denials ,
standard error says so in text output, and the exit status is 4, never 0.
Rules and modes decide as in the interface:
.B "\-\-permission\-mode accept\-edits"
or
.B \-\-allow
rules let calls run without a question (a file that runs code later always asks).
.TP
.B stdin
Answer each request with one JSON line on standard input:
.BR "{\(dqid\(dq: \(dqap\-1\(dq, \(dqdecision\(dq: \(dqapprove\(dq}" ,
or
.B \(dqreject\(dq
(an optional string
.B reason
is passed on to the model).
A line that is not such an object, names no pending request, or has an unknown decision
or key is an error on standard error (and an
.B error
event): it never approves, and when it names a pending request that request is rejected.
A blank line is ignored; a line longer than @line_max@ is an error.
At the end of standard input every pending request, and every later one, is rejected.
The prompt must then be given as
.BR "\-p " \fIPROMPT\fP .
.TP
.BI cmd: PROGRAM
For each request,
.I PROGRAM
is run like a hook
.RB ( "/bin/sh \-c" ,
in the working directory, in its own session, every process it started killed when it
ends) with the
.B approval.requested
event as one JSON line on its standard input.
It must exit with 0 after printing one JSON object,
.BR "{\(dqdecision\(dq: \(dqapprove\(dq}" " or " "{\(dqdecision\(dq: \(dqreject\(dq, \(dqreason\(dq: \(dq...\(dq}"
(an
.BR id ,
if given, must be the request's).
Anything else rejects: another exit status, a signal, output that is not that object
(standard error is merged into it, so the program should write nothing else), more than
@program_output@ of output, or no answer within the timeout (then it is killed).
.PP
.BI \-\-approval\-timeout " SECONDS"
rejects a request that has had no answer for that long (default @stdin_timeout@ s on
standard input, @program_timeout@ s for a program); the
.B approval.decided
event says
.BR "by timeout" .
An approval is for that one call: no session rule is ever added.
The exit status is 4 when any request was not approved.
.SS Signals
SIGINT, SIGTERM and SIGHUP cancel the turn as Esc does in the interface: a pending
request is rejected, the stream is closed, a running command is killed with every
process it started, every call gets its result, and the journal records the cancel and
is flushed to the disk; then the
.B result
event is written (outcome
.BR interrupted ,
.B signal
set) and the exit status is 130.
A second signal, or a turn that has not ended @cancel_grace@ s after the first, ends the
run at once (stop reason
.BR abandoned ),
still with its
.B result
event; commands are killed in every case.
.SS A CI job
A GitHub Actions step that asks for a review and lets the model read files and run
.B "make test"
without a question; anything else that needs approval is refused, and the job fails (its
shell has
.BR pipefail )
when the run did not complete: status 1 to 4 or 130.
.PP
.RS 4
.nf
\- name: Review
  env:
    OPENAI_API_KEY: ${{ secrets.OPENAI_API_KEY }}
  run: |
    git diff origin/main... > /tmp/diff
    { echo 'Review this change; run make test if useful.'; cat /tmp/diff; } |
      dashfloat \-p \-\-model gpt\-4o\-mini \-\-base\-url https://api.openai.com/v1 \e
        \-\-allow 'execute_command(make test)' \e
        \-\-output\-format stream\-json > review.jsonl
    jq \-r 'select(.type == "result") | .answer' review.jsonl > review.md
.fi
.RE
.PP
To approve from a script instead:
.PP
.RS 4
.nf
dashfloat \-p 'fix the failing test' \-\-approvals 'cmd:./approve.py' \e
  \-\-output\-format json | jq .outcome
.fi
.RE
.PP
where
.I approve.py
reads the request and prints
.B {\(dqdecision\(dq: \(dqapprove\(dq}
for an
.B edit_file
under
.IR tests/ ,
and a rejection otherwise.
.SH SLOW LINKS
Over a slow or distant link (ssh at a few dozen kbit/s, a link with a long round trip)
the bytes of a frame reach the screen long after dashfloat has written them: the ssh
server and the network buffer them, so frames drawn faster than the link carries them
would queue up behind each other and the screen would trail the keys by seconds.
dashfloat clocks its frames by the terminal instead: each frame ends with a question for
the cursor position
.RB ( ESC[6n ),
which the terminal answers once it has shown everything before it, and the next frame
waits for that answer (at most @clock_min@\(en@clock_max@ s, from the round trips measured). Meanwhile the
screen keeps up with everything that happens; the frame that follows the answer shows
the newest state at once, whatever changed in between. So holding PgUp, a long paste or
a command printing without end never leaves the screen more than a frame or two behind.
The answers are taken out of the input: they are never keys, nor decide a question.
A terminal that does not answer changes nothing (it is asked @clock_never@ times).
.B DASHFLOAT_NO_FRAME_CLOCK
turns the clock off.
.SH FILES
.TP
.I .dashfloat/config.toml
Project configuration, in the working directory.
.TP
.IR $XDG_CONFIG_HOME/dashfloat/AGENTS.md ", " AGENTS.md ", " AGENTS.override.md
Instructions for the model, yours and the project's, from the git root down to the working
directory (see
.BR CONTEXT ).
.TP
.I $XDG_CONFIG_HOME/dashfloat/config.toml
User configuration (default
.IR ~/.config/dashfloat/config.toml ).
.TP
.I $XDG_STATE_HOME/dashfloat/history
Prompt history, the last @history_limit@ prompts, one JSON string per line (default
.IR ~/.local/state/dashfloat/history ).
The configured API key, if typed into a prompt, is saved as
.BR "[redacted: API key]" .
.TP
.IR $XDG_STATE_HOME/dashfloat/sessions/ NAME \- HASH / ID .jsonl
The journal of a session, with its audit trail; beside it
.IR ID .store/
holds its long texts and the previous contents of files for
.B /undo
(see
.BR SESSIONS ).
.TP
.IR share/dashfloat/dashfloat\-events.schema.json
The JSON Schema of the headless events (see
.BR "HEADLESS MODE" ),
installed beside the man page
.RI ( schema/ " in a checkout)."
.TP
.I $XDG_STATE_HOME/dashfloat/copy.txt
What the last
.B /copy
copied (see
.BR "OVER SSH" ).
.TP
.I $XDG_STATE_HOME/dashfloat/dashfloat.log
The log.
Errors and tracebacks go here, never onto the screen; so do the permission decisions of a
session that keeps no journal.
.TP
.IR ~/.local/bin/dashfloat ", " ~/.local/share/man/man1/dashfloat.1
Links into a checkout's
.I .venv
and
.IR man/ ,
made by
.B "make install\-user"
(removed by
.BR "make uninstall\-user" ;
.BI PREFIX= DIR
puts them under
.I DIR
instead), so that
.B dashfloat
and
.B "man dashfloat"
work from anywhere; in a checkout without them, the page is
.BR "man ./man/dashfloat.1" ,
and the F1 help names whichever works.
.B "pipx install ."
installs a copy with its page instead.
.TP
.I dashfloat.pyz
DashFloat and everything it needs in one file, for a server that has Python 3.11 or later and
nothing else (no pip, no venv, no network): built in a checkout by
.B "make pyz"
.RI ( dist/dashfloat.pyz ,
pure Python, so one file serves x86\-64 and arm64), copied with
.BR "scp dist/dashfloat.pyz host:" ,
run with
.B "ssh \-t host python3 dashfloat.pyz"
(or
.BR ./dashfloat.pyz ),
with the same options, configuration, state and keys as an installed
.BR dashfloat .
Copied as
.I dashfloat
into a directory on
.B $PATH
(such as
.IR ~/.local/bin ),
it is the
.B dashfloat
command.
.B "python3 dashfloat.pyz \-\-man"
shows this page.
An older Python says which version it is and which is needed, and exits 2.
.TP
.I dashfloat\-x86_64
(or
.IR dashfloat\-aarch64 :
the machine's architecture)
DashFloat and Python itself in one executable, for a Linux server without Python 3.11:
built in a checkout by
.B "make exe"
.RI ( dist/dashfloat\-x86_64 ,
with PyInstaller), copied with
.BR "scp dist/dashfloat\-x86_64 host:" ,
run with
.BR "ssh \-t host ./dashfloat\-x86_64" ,
with the same options, configuration, state and keys as an installed
.BR dashfloat .
It runs on servers of its architecture whose glibc is at least the one
.B "make exe"
names (2.35 when built on Debian 12).
Each start unpacks Python into a new private directory under
.B $TMPDIR
.RI ( /tmp )
that is removed at exit; where that file system does not allow running programs
(mounted noexec), set
.B TMPDIR
to a directory that does.
.B "./dashfloat\-x86_64 \-\-man"
shows this page.
.TP
.I $XDG_CACHE_HOME/dashfloat/pyc/
(default
.IR ~/.cache/dashfloat/pyc/ )
The compiled modules of a
.I dashfloat.pyz
(Python compiles nothing into a zip, so without them every start would compile them again),
one file per module and Python version, checked against the source in the pyz: a new pyz
replaces what changed.
Deleting the directory is safe; where it cannot be written, the pyz runs all the same, only
starts more slowly.
.PP
The files
.B dashfloat
writes for itself are private whatever the umask: mode @file_mode@, in directories of mode @dir_mode@
(missing parent directories are created @dir_mode@ too).
A file or directory of yours found with a wider mode is made private when it is opened,
and the log says so.
.SH ENVIRONMENT
.TP
.B OPENAI_API_KEY
The API key, sent as
.BR "Authorization: Bearer" .
Not needed for local servers.
Its value is never shown or written: wherever it would reach the screen, the log or a
file (a provider's error message that echoes it, an exception text, a URL,
.BR \-\-show\-config ,
.BR "policy list" )
it is replaced by
.BR "[redacted: API key]" ,
also when the text was cut short in the middle of it.
The same holds for the value of a configured header whose name looks secret (such as
.B Authorization
or
.BR x\-api\-key ).
On the screen and in the log, credentials need not be configured to be masked: the value
of a key\-like parameter of a URL's query
.RB ( ?key= ,
.BR api_key= ,
.BR access_token= ,
.BR token= ,
.BR sig= ...),
the password in a URL and a
.B Bearer
token are shown as
.BR [redacted] .
Values shorter than @mask_min@ characters are not masked (they would mangle ordinary text).
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
.B DASHFLOAT_PERMISSION_MODE
The permission mode (as
.BR \-\-permission\-mode ).
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
When set and not empty, scroll the transcript by repainting its rows instead of with
the terminal's scroll margins (DECSTBM).
Only for a terminal that mishandles scroll margins; it costs many more bytes per line.
.TP
.B DASHFLOAT_NO_FRAME_CLOCK
When set and not empty, write every frame at once instead of waiting for the terminal to
answer for the last one (see
.BR "SLOW LINKS" ).
Only for comparisons: over a slow link frames then queue up behind each other.
.TP
.B DASHFLOAT_CALL
Set by dashfloat for every command and hook it runs, to an id of that call
(\fIpid\fP\-\fIn\fP); it is how dashfloat recognises a detached process of the call.
.TP
.BR VISUAL ", " EDITOR
The editor Ctrl\-G opens the prompt in (default
.BR vi ).
.TP
.BR TMUX ", " STY
Set by tmux and GNU screen: how
.B /copy
reaches the terminal's clipboard from inside them (see
.BR "OVER SSH" ).
.TP
.BR XDG_CONFIG_HOME ", " XDG_STATE_HOME
Where the user configuration, the history, the sessions, the log and the
.B /copy
file live; a state directory that cannot be written is said once (see
.BR "OVER SSH" ).
.SH EXIT STATUS
.TP
.B 0
Normal exit; in the full\-screen interface also after SIGTERM, and after SIGHUP or the
terminal going away (a dropped ssh connection, a closed window): then nothing is printed
and the log gets the one line
.BR "terminal closed (hangup)" ;
running commands are killed as on any exit, and an editor open from Ctrl\-G gets the
SIGHUP passed on (with everything it started), as a shell passes it to its jobs.
With
.BR \-p :
the turn completed and every question was approved.
.TP
.B 1
A runtime error; a one\-line summary is printed after the screen is restored and the
traceback is in the log.
With
.BR \-p :
the provider failed (an HTTP error, a broken stream, no answer at all), or DashFloat
did.
.TP
.B 2
A usage or configuration error (a bad rule included), a malformed
.I CALL
for
.BR "policy check" ,
or no usable terminal for the full\-screen interface (stdin or stdout not a tty, or
TERM=dumb).
With
.BR \-p ,
also no model to use (the endpoint serves several and none was chosen).
.TP
.B 3
With
.BR \-p :
the loop limit
.RB ( max_episodes )
or a budget stopped the turn.
.TP
.B 4
With
.BR \-p :
a call needed approval and did not get it (see
.BR "HEADLESS MODE" ).
.TP
.B 130
Interrupted: with
.BR \-p ,
SIGINT, SIGTERM or SIGHUP cancelled the turn; also Ctrl\-C while DashFloat starts.
.TP
.B @exit_pipe@
The reader of the output went away before it was all written (as in
.BR "dashfloat \-\-show\-config | head \-1" ,
when head has left early); nothing is printed about it, as for a program that SIGPIPE
ended.
.PP
When several apply to a
.B \-p
run, the first in this order wins: 130, 2, 1, 3, 4.
.B "policy check"
and
.B "policy list"
exit with 0 whatever the decisions.
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
.TP
.B "dashfloat \-\-continue"
Go on with the last session of this directory, after a quit, a dropped ssh connection or a
reboot.
.TP
.B "dashfloat \-\-allow 'execute_command(make test)' \-\-permission\-mode accept\-edits"
Let the agent edit files in the working directory and run
.B "make test"
without asking; everything else still asks.
.TP
.B "dashfloat policy check 'read_file(.env)' 'execute_command(git push)'"
See what the configured rules would decide, without running anything.
.TP
.B "dashfloat \-p 'summarise README.md' \-\-permission\-mode read\-only"
Ask once, from a script, and print the answer.
.TP
.B "dashfloat \-p 'fix the lint errors' \-\-approvals stdin \-\-output\-format stream\-json"
Let a wrapper program follow every event and answer the questions (see
.BR "HEADLESS MODE" ).
.SH RECOVERING A BROKEN TERMINAL
A program killed with SIGKILL (or by the out\-of\-memory killer) cannot restore the terminal.
Run
.B "dashfloat \-\-reset\-terminal"
or
.BR reset ,
or type
.B "stty sane iutf8; printf '\ee[r\ee[?1049l\ee[?25h\ee[?2004l\ee[?1000l\ee[?1002l\ee[?1006l'"
blind (leave out
.B iutf8
on a terminal that is not UTF\-8).
.SH SEE ALSO
.BR ssh (1),
.BR tmux (1),
.BR stty (1)
"""


def numbers() -> dict[str, str]:
    """Every bound and default the page states, as text, read from the code's own constants
    (so the page cannot drift from them). Imports what the program itself runs with."""
    import inspect

    from dashfloat import (
        agent,
        approvals,
        cli,
        context,
        copyout,
        headless,
        history,
        journal,
        masking,
        metering,
        private,
        prompt,
        sessions,
    )
    from dashfloat import events as headless_events
    from dashfloat.config import DEFAULT_BASE_URL, KEYS
    from dashfloat.llm import client
    from dashfloat.llm.errors import human_size
    from dashfloat.tools import (
        alwaysask,
        files,
        gitchanges,
        hooks,
        pathpolicy,
        pipeline,
        preview,
        runner,
        search,
    )
    from dashfloat.tools import exec as exec_tool
    from dashfloat.ui import app, confirmgate, frameclock, keymap, toosmall
    from dashfloat.ui import markdown as markdown_ui
    from dashfloat.ui import transcript as transcript_ui

    default = {spec.name: spec.default for spec in KEYS}
    stream = inspect.signature(client.stream_chat).parameters
    return {
        "tick_ms": f"{app.TICK * 1000:g}",
        "clipboard_max": f"{copyout.OSC52_MAX:,}",
        "min_cols": str(toosmall.MIN_COLS),
        "min_rows": str(toosmall.MIN_ROWS),
        "clipboard_kib": str(copyout.OSC52_MAX * 3 // 4 // 1024),
        "stream_ms": f"{app.STREAM_FRAME * 1000:g}",
        "clock_min": f"{frameclock.FrameClock.MIN_WAIT:g}",
        "clock_max": f"{frameclock.FrameClock.MAX_WAIT:g}",
        "clock_never": str(frameclock.FrameClock.NEVER_ANSWERED),
        "connect_timeout": f"{default['connect_timeout']:g}",
        "read_timeout": f"{default['read_timeout']:g}",
        "exec_timeout": f"{default['exec_timeout']:g}",
        "exec_max_processes": str(default["exec_max_processes"]),
        "reaper_poll": f"{exec_tool._CENSUS_INTERVAL:g}",
        "hook_timeout": f"{default['hook_timeout']:g}",
        "max_episodes": str(default["max_episodes"]),
        "instructions_kib": str(prompt.INSTRUCTIONS_MAX // 1024),
        "chars_per_token": f"{context.CHARS_PER_TOKEN:g}",
        "recent_pct": f"{context.RECENT_SHARE * 100:g}",
        "summary_headings": ", ".join(f"\\(lq{h}\\(rq" for h in context.SUMMARY_HEADINGS),
        "failures_to_stop": str(context.FAILURES_TO_STOP),
        "default_window": f"{context.DEFAULT_WINDOW:,}",
        "read_max_lines": str(files.READ_MAX_LINES),
        "read_max_bytes": human_size(files.READ_MAX_BYTES),
        "stream_above": human_size(files.STREAM_ABOVE),
        "list_max": str(files.LIST_MAX),
        "warn_share": f"{metering.WARN_AT:.0%}".replace("%", " %"),
        "repeat_limit": str(pipeline.REPEAT_LIMIT),
        "search_results": str(search.MAX_RESULTS),
        "search_results_max": str(search.MAX_RESULTS_MAX),
        "search_line_chars": str(search.LINE_CHARS),
        "search_output": human_size(search.OUTPUT_BYTES),
        "search_timeout": f"{search.TIMEOUT:g}",
        "name_max": str(pathpolicy.NAME_MAX),
        "path_max": str(pathpolicy.PATH_MAX - 1),
        "edit_max": human_size(files.EDIT_MAX_BYTES),
        "exec_output": human_size(exec_tool.MAX_OUTPUT),
        "read_pool": str(agent.READ_POOL),
        "excerpt_lines": str(runner.EXCERPT_LINES),
        "lone_esc": f"{keymap.lone_esc_wait():g}",
        "big_block": human_size(transcript_ui.BIG_BLOCK),
        "table_held": str(transcript_ui.TABLE_HELD_ROWS),
        "highlight_max": human_size(markdown_ui.HIGHLIGHT_MAX),
        "hook_output": human_size(hooks.MAX_OUTPUT),
        "hook_note": human_size(hooks.MAX_NOTE),
        "mask_min": str(masking.MIN_LENGTH),
        "history_limit": str(history.LIMIT),
        "journal_big": f"{journal.BIG:,}",
        "ui_tail_turns": str(sessions.UI_TAIL_TURNS),
        "undo_store_mb": str(default["undo_store_mb"]),
        "git_timeout": f"{gitchanges.TIMEOUT:g}",
        "max_calls": str(stream["max_calls"].default),
        "episode_bytes": human_size(stream["max_episode_bytes"].default),
        "event_bytes": human_size(stream["max_event_bytes"].default),
        "file_mode": f"{private.FILE_MODE:04o}",
        "dir_mode": f"{private.DIR_MODE:04o}",
        "exit_pipe": str(cli.EXIT_PIPE),
        # headless mode
        "schema_version": headless_events.SCHEMA_VERSION,
        "stdin_timeout": f"{headless.STDIN_TIMEOUT:g}",
        "program_timeout": f"{headless.PROGRAM_TIMEOUT:g}",
        "cancel_grace": f"{headless.CANCEL_GRACE:g}",
        "line_max": human_size(approvals.LINE_MAX),
        "program_output": human_size(approvals.PROGRAM_OUTPUT_MAX),
        "live_max": f"{headless.LIVE_MAX:,} characters",
        "default_base_url": DEFAULT_BASE_URL,
        # the confirmation rules, from the code that applies them
        "grace": f"{confirmgate.GRACE:g}",
        "quiet": f"{confirmgate.QUIET:g}",
        "hold": f"{confirmgate.HOLD:g}",
        "always": f"{confirmgate.ALWAYS_WINDOW:g}",
        "blank_run": str(preview.BLANK_RUN),
        "blank_run_chars": str(preview.BLANK_RUN_CHARS),
        "command_chars": str(preview.COMMAND_LINE_CHARS),
        "window_half": str(preview.PREVIEW_MAX_LINES // 2),
        # not a number: the always-ask list, from the table the rules are built from
        "always_ask_list": alwaysask.man_list(),
        "window_lines": str(preview.PREVIEW_MAX_LINES),
        "window_chars": str(preview.DIFF_LINE_CHARS),
        "full_chars": f"{preview.FULL_LINE_CHARS:,}",
        "full_lines": f"{preview.FULL_MAX_LINES:,}",
        "full_mb": str(preview.FULL_MAX_CHARS // 1_000_000),
    }


def _fill(text: str, values: dict[str, str]) -> str:
    """Replace each @name@ with its number; an unknown name is a bug in this file."""
    import re

    def one(match: re.Match) -> str:
        return values[match.group(1)]

    return re.sub(r"@([a-z_]+)@", one, text)


def generate() -> str:
    from dashfloat.commands import man_section as man_commands_section
    from dashfloat.config import man_configuration_section
    from dashfloat.events import man_events
    from dashfloat.ui.keymap import man_keybindings_section

    values = numbers()
    values["headless_events"] = man_events(values)
    return (
        _fill(HEAD, values).replace("{version}", __version__)
        + man_keybindings_section()
        + _fill(MIDDLE, values)
        + man_commands_section()
        + _fill(CONFIGURATION_HEAD, values)
        + man_configuration_section()
        + _fill(TAIL, values)
    )


def manpath(environ) -> list[str]:
    """The directories man(1) searches, as man-db derives them: $MANPATH when set (an empty
    element stands for the defaults), else share/man and man next to each $PATH directory,
    then the system's own."""
    import os

    system = ["/usr/local/share/man", "/usr/local/man", "/usr/share/man"]
    derived = []
    for entry in environ.get("PATH", "").split(os.pathsep):
        if entry:
            parent = os.path.dirname(entry.rstrip("/")) or "/"
            derived += [os.path.join(parent, "share", "man"), os.path.join(parent, "man")]
    value = environ.get("MANPATH")
    if not value:
        return derived + system
    out: list[str] = []
    for entry in value.split(os.pathsep):
        out += (derived + system) if entry == "" else [entry]
    return out


CHECKOUT_PAGE = "man/dashfloat.1"


def pyz_path() -> str | None:
    """The pyz file DashFloat runs from (`python3 dashfloat.pyz`), or None."""
    import os

    import dashfloat

    root = os.path.dirname(os.path.dirname(os.path.abspath(dashfloat.__file__)))
    return root if os.path.isfile(root) else None


def frozen_path() -> str | None:
    """The single executable DashFloat runs from (`make exe`: PyInstaller sets sys.frozen
    and sys.executable is that file), or None."""
    return sys.executable if getattr(sys, "frozen", False) else None


def self_command(argv0: str | None = None, pyz: str | None = None, environ=None, exe: str | None = None) -> str:
    """How the user runs DashFloat: `dashfloat`, or `python3 PATH` from a pyz, or PATH for
    the single executable (PATH as it was typed, when it names the same file); `dashfloat`
    again for either installed as `dashfloat` on $PATH."""
    import os
    import shlex
    import shutil

    exe = frozen_path() if exe is None else exe
    program = exe or (pyz_path() if pyz is None else pyz)
    if not program:
        return "dashfloat"
    environ = os.environ if environ is None else environ
    on_path = shutil.which("dashfloat", path=environ.get("PATH"))
    try:
        if on_path and os.path.samefile(on_path, program):
            return "dashfloat"
    except OSError:
        pass
    argv0 = sys.argv[0] if argv0 is None else argv0
    try:
        typed = argv0 if argv0 and os.path.samefile(argv0, program) else program
    except OSError:
        typed = program
    return shlex.quote(typed) if exe else f"python3 {shlex.quote(typed)}"


def man_command(environ=None, exists=None, command=None) -> str:
    """How to open this page from here (the F1 help and --help say it): `man dashfloat` when
    man would find an installed page, else `man /path/to/checkout/man/dashfloat.1` when
    running from a checkout, else `dashfloat --man` (which needs no man page installed, nor
    man: a pyz says `python3 dashfloat.pyz --man`, the executable `./dashfloat-x86_64 --man`)."""
    import os

    environ = os.environ if environ is None else environ
    exists = os.path.exists if exists is None else exists
    for directory in manpath(environ):
        for name in ("dashfloat.1", "dashfloat.1.gz"):
            if exists(os.path.join(directory, "man1", name)):
                return "man dashfloat"
    checkout = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), CHECKOUT_PAGE)
    if exists(checkout):
        return f"man {checkout}"
    return f"{self_command() if command is None else command} --man"


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
            print(f"{path} is out of date with the keymap, command or configuration tables: run `make man`", file=sys.stderr)
            return 1
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
