"""Permission rules: syntax, matching, shell-command analysis and the layered evaluation.

Pure: no file system, no processes, no configuration loading (the config loader and the CLI turn
their lists into `Rule`s with `parse_rule`, and the pipeline calls `evaluate`).

Rule syntax
-----------
``Tool(pattern)`` or a bare ``Tool`` (any argument). ``Tool`` is one of the six tool names,
exactly (``Bash(...)`` is an error that suggests ``execute_command``). There is no tool wildcard
(``*`` alone is an error: use a permission mode for "everything"). The pattern is everything
between the first ``(`` and the last ``)``; text after the last ``)`` is an error, as are
unbalanced parentheses, an empty pattern, NUL / control / invisible characters.

A rule applies to its tool's *main argument*: ``path`` for read_file, write_file, edit_file,
list_directory and search_workspace (the directory or file searched), ``command`` for
execute_command. search_workspace also leaves out every file that read_file may not read
without asking (tools/search.py), so a deny rule on read_file holds for searches too.

Path patterns (gitignore-like, always anchored at the working directory)
-----------------------------------------------------------------------
- ``*`` matches within one path segment, ``?`` one character, ``[abc]`` a class (never ``/``);
  ``**`` as a whole segment matches any number of segments: ``**/.env`` is ``.env`` at any
  depth, ``a/**/b`` is ``a/b``, ``a/x/b``...; a trailing ``/**`` matches the directory itself
  and everything under it (``docs/**`` matches ``docs``, ``docs/a.md``, ``docs/a/b.md``, not
  ``docsx/a``). A trailing ``/`` means the same as ``/**``. ``*`` also matches dot-files.
- A pattern is always relative to the root: ``.env`` is the file ``.env`` at the root only (write
  ``**/.env`` for any depth). A leading ``./`` is ignored. A leading ``/``, a leading ``~`` and
  ``..`` segments are errors (they could never match, and a deny rule that never matches is a
  hole). ``\\`` escapes the next character.
- The call's path is normalised lexically against the root first: ``./``, duplicate slashes and
  ``..`` are collapsed, an absolute path inside the root is made relative; a path that leaves the
  root matches no path pattern (the path policy refuses it anyway). ``~`` is never expanded.
- allow rules match case-sensitively and every name of the file must match (see ``aliases`` in
  `evaluate`); deny and ask rules (and the built-in protection) match if any name matches, after
  folding both sides: Unicode NFC, invisible format characters removed, case folded, trailing
  dots and spaces of each segment removed. So ``read_file(.env)`` also denies ``.ENV`` (one file
  on a case-insensitive file system) and ``.e<ZWJ>nv``.

Command patterns
----------------
The pattern is split into words with the same POSIX-sh tokenizer as commands (quotes work as in
the shell, like shlex). An unquoted ``*`` as a whole word is a wildcard: as the last word it
matches any number of remaining words, including none (``git log *`` matches ``git log`` and
``git log -p``: by design); elsewhere it matches exactly one word. ``*`` inside a word is an
error (quote it, ``'*'``, for a literal star). Every other word must equal the command's word
after unquoting: ``git  status``, ``'git' status``, ``g''it status`` and ``git st"atus"`` all match
``git status``; ``git status --porcelain`` does not; ``git\\ status`` (one word) does not. The
command word is compared literally: ``/usr/bin/git status`` and ``./git status`` do NOT match an
allow rule ``git status`` (a path may be a different program); for deny and ask rules the
command word's basename is tried too and compared case-insensitively, so ``/bin/rm``, ``RM`` and
``\\rm`` are caught by ``rm *``. A pattern must itself be one simple command (no operators,
redirections, substitutions, expansions, env prefixes).

Shell command analysis (`analyze_command`)
------------------------------------------
The command line (run with ``/bin/sh -c``) is tokenized like a POSIX shell: quotes, backslashes,
``$'...'``, ``$(...)``, backticks, ``${...}``, arithmetic, process substitution, here-documents,
comments, line continuations, reserved words (``case``, ``in`` and ``esac`` only where the shells
read them, so a pattern's ``)`` never ends a ``$(``). It yields the argv of every simple command
(including those inside substitutions and subshells) and a set of flags; see the constants
below. A command is *simple* when it is exactly one simple command and no flag is set.
Leading and trailing blanks and newlines are nothing; a newline between two commands is a list.
Non-ASCII characters outside quotes, look-alike operator characters (fullwidth ``；｜＆``,
non-ASCII spaces, smart quotes...) anywhere, and invisible characters (zero-width, bidi) anywhere
are flags too. Where dash (Debian's /bin/sh) and bash end a construct at different places (quotes
inside ``$(( ))``, bash's ``$[ ]``, a single quote inside a double-quoted ``${...}``, ``case``
after bash's ``time``, ``function`` or ``coproc``), the line does not parse; nor where bash reads
later lines differently once the line changes its reading: history expansion turned on
(``set -H``, ``set -o histexpand``: ``!$``, ``^a^b`` become commands), extended patterns
(``shopt -s extglob``, always inside ``[[ ]]``) with a ``@(`` ``!(`` ``*(`` ``+(`` ``?(``.

- An allow rule matches only a simple command (so any flag => at least ask).
- A deny or ask rule matches if it matches ANY of the command's *candidates*: each simple
  command's argv (also inside substitutions, subshells, loops, functions, expanding
  here-documents); the same with the command word's basename; for wrappers (`WRAPPERS`: sudo,
  env, timeout, xargs, nohup, bash's ``jobs -x``, ``perf stat``, ``gdb --args``, ...; not
  ``command -v``) every suffix of the argv; the words after
  a reserved word inside a command (``function f { rm …; }``); bash's ``time`` read as dash
  reads it, the program ``/usr/bin/time`` (``time -v rm …``: its options are not bash's
  ``-p``); bash brace expansions
  (``{rm,-rf,/}``); the command strings given to shells and string runners (``sh -c '…'``,
  ``eval``, ``trap``, ``alias x='…'``, ``su -c``, ``watch``, ``ssh host …``, ``mapfile -C``,
  ``flock -c``, ``sg``, ``compgen -C/-W``, ``tmux``, ``env -S``, GNU sed's ``e CMD``, gdb's
  ``-ex 'shell …'``, ``fc -e …``); the values of dangerous options (``man -P …``,
  ``tar --to-command=…``, ``history -s …``) and of declarations (``export PS4='…'``);
  substitutions bash runs inside quoted text (``$(( '$(…)' ))``, ``(( ))``, array subscripts
  ``test -v 'a[$(…)]'``, compound assignments ``declare -a 'a=($(…))'``, a substring's offset
  and length ``${x:'$(…)'}``);
  the values of environment prefixes (``X='rm -rf /' cmd``); ``find -exec/-execdir/-ok/-okdir …
  ;``; ``git -c key=!cmd``, ``git … '!cmd'``, ``--upload-pack=…``, ``--receive-pack=…``,
  ``--exec=…``; when a shell or ``.``/``source`` may read its script from a pipe or a
  redirection (or a process substitution), or a program that starts a shell when given no
  command does (`_SHELL_STARTERS`: ``su``, ``sg root``, ``newgrp``, ``chroot /``, ``unshare``,
  ``nsenter``, ``fakeroot``, ``script``, ``sudo -s``...; their options read as getopt does:
  ``su -wc`` has no command, ``c`` is -w's value), every word and here-text of the
  line; and the
  candidates of the same line read as other steps or shells read it (NFKC-normalised when
  look-alike, invisible or non-ASCII characters are present; with backslash-newlines
  removed; as dash reads ``$'…'``). If the command
  does not parse, a deny/ask rule whose command word appears anywhere in it as a word matches
  (fail closed; ``$'…'`` pieces decoded: ``to$'u'ch``). Limits: rules judge the command line, not what programs do with it
  (``python -c``, ``make``, ``./script.sh``, a PATH change).
- A command is *opaque* when its words cannot be known statically (expansions, substitutions,
  globs, braces, ``$'…'``, a shell reading its script from stdin, or it does not parse). A
  deny/ask rule *might match* an opaque command when: it does not parse or hides a script
  (stdin shells, opaque ``sh -c`` strings, bash's ``fc`` running lines of its history, gdb's
  ``-ex``/``-x``, sed's ``e`` without a command or ``s///e``, a value the line builds at run
  time (``printf -v``, ``read``, ``command -p read``, ``x=$(…)``, ``${x:=$(…)}``...) that bash
  may evaluate (arithmetic, ``${!x}``, a substring's offset ``${PWD:x}``, ``test -v``,
  ``declare -i/-n``, xtrace's PS4), a variable named at run time (``printf -v
  "$n"``, ``declare "$n=…"``: BASH_CMDS)); or a command word is dynamic; or a wrapper, shell,
  string runner, find or git gets a dynamic argument; or the rule's words can be lined up with
  the command's words when each dynamic word may stand for any number of words
  (``rm $X`` vs ``rm *`` yes; ``cat $(ls)`` vs ``rm *`` no).

Evaluation (`evaluate`)
-----------------------
1. Built-in defaults form the lowest layer ("built-in", `default_rules`): read_file,
   list_directory and search_workspace allow; write_file, edit_file and execute_command ask. Built-in *protection*
   rules: write_file/edit_file of a file that makes a program run code later (the table of
   `alwaysask`: ``.git/**``, ``.dashfloat/**``, ``.envrc``, ``.vscode/**``, shell start-up
   files, CI workflows...; any depth, folded as above) always at least ask, and the decision
   carries the table's reason (`Decision.always_asks`); so does an execute_command that
   names a ``.git`` or ``.dashfloat`` path in any word (or runs in one) or runs ``git
   config`` to set something. Only an explicit deny makes them stricter; no rule (a session
   rule included) and no mode (``unrestricted`` included) relaxes them.
2. Explicit rules of all layers (user config, project config, command line, session; in that
   order for naming the decider) that match: the strictest decision wins (deny > ask > allow), so a
   project allow never beats a user deny. Deny holds in every mode.
3. Mode ``read-only``: every mutating call (write_file, edit_file, execute_command) is denied.
4. No explicit rule matched: the built-in default applies, then the mode: ``ask`` no change;
   ``accept-edits`` write_file/edit_file of a path inside the root allow (commands unchanged);
   ``unrestricted`` everything allow. A mode never relaxes an explicit ask rule.
5. execute_command: an allow *rule* additionally needs a simple command (else ask, "command
   shape") and, outside ``unrestricted`` mode, no dangerous argument (`DANGEROUS_ARGS`, else
   ask). In ``unrestricted`` mode complex commands are allowed. An `exact_rule` (the session's
   "always allow this exact command") skips these checks: the user approved that very string. Whatever allowed it, an opaque command that an explicit deny or
   ask rule for execute_command *might match* asks (it cannot be proven not to match).
6. The protection of step 1 turns a remaining allow into ask.

A call whose main argument is missing, not a string or holds a NUL matches every deny and ask
rule and no allow rule (argument validation rejects it earlier anyway).
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache

from dashfloat.sha import sha256
from dashfloat.tools import alwaysask
from dashfloat.tools.catalogue import MUTATING, NAMES
from dashfloat.tools.guard import ALLOW, ASK, DENY, STRICTNESS, check_decision

__all__ = [
    "ALLOW",
    "ASK",
    "DENY",
    "MODES",
    "BUILTIN_LAYER",
    "MAIN_ARG",
    "WRAPPERS",
    "SHELLS",
    "DANGEROUS_ARGS",
    "RuleError",
    "Rule",
    "Decision",
    "Analysis",
    "parse_rule",
    "exact_rule",
    "default_rules",
    "normalize_path",
    "analyze_command",
    "rule_matches",
    "evaluate",
    "check_examples",
    "format_call",
    "parse_call",
    "args_hash",
    "dangerous_argument",
    "dangerous_script",
]

# -- vocabulary ------------------------------------------------------------------------

MODE_ASK = "ask"
MODE_ACCEPT_EDITS = "accept-edits"
MODE_READ_ONLY = "read-only"
MODE_UNRESTRICTED = "unrestricted"
MODES: tuple[str, ...] = (MODE_ASK, MODE_ACCEPT_EDITS, MODE_READ_ONLY, MODE_UNRESTRICTED)

BUILTIN_LAYER = "built-in"

MAIN_ARG: dict[str, str] = {
    "read_file": "path",
    "write_file": "path",
    "edit_file": "path",
    "list_directory": "path",
    "execute_command": "command",
    "search_workspace": "path",
}
_PATH_TOOLS = frozenset(("read_file", "write_file", "edit_file", "list_directory", "search_workspace"))
_EDIT_TOOLS = frozenset(("write_file", "edit_file"))
_COMMAND = "execute_command"

# Analysis flags (`Analysis.flags`), in the order they are described.
LIST = "list"  # ; && || & ;; newline between commands
PIPE = "pipe"  # | |&
SUBSTITUTION = "substitution"  # $( ) ` ` <( ) >( )
REDIRECTION = "redirection"  # > >> < <> >| >& <& &> &>> 2> << <<- <<<
ENV_PREFIX = "env-prefix"  # FOO=bar cmd (or a bare assignment)
SUBSHELL = "subshell"  # ( ... )
COMPOUND = "compound"  # { ...; }, if/while/for/case/!, time, functions: reserved words
EXPANSION = "expansion"  # $VAR ${...} $(( )) $"..."
GLOB = "glob"  # unquoted * ? [..]
BRACE = "brace-expansion"  # unquoted {a,b} {1..3}
TILDE = "tilde"  # unquoted ~ at the start of a word (or after = :)
ANSI_C = "ansi-c-quoting"  # $'...' (bash decodes it, dash does not)
LINE_CONTINUATION = "line-continuation"  # backslash-newline
COMMENT = "comment"  # # ...
NON_ASCII = "non-ascii"  # a non-ASCII character outside quotes
LOOKALIKE = "look-alike"  # a character that looks like an operator, quote or space, anywhere
INVISIBLE = "invisible-character"  # zero-width, bidi controls, other format chars, anywhere
UNPARSABLE = "unparsable"  # unbalanced quotes/parentheses, control characters, too long...
EMPTY = "empty"  # nothing to run

FLAG_ORDER: tuple[str, ...] = (
    LIST, PIPE, SUBSTITUTION, REDIRECTION, ENV_PREFIX, SUBSHELL, COMPOUND, EXPANSION, GLOB,
    BRACE, TILDE, ANSI_C, LINE_CONTINUATION, COMMENT, NON_ASCII, LOOKALIKE, INVISIBLE,
    UNPARSABLE, EMPTY,
)

# Commands that run another command given as their arguments: for deny/ask rules every suffix
# of their argv is judged too (`sudo -u x rm -rf /` is judged as `rm -rf /` as well).
WRAPPERS = frozenset((
    "sudo", "doas", "env", "nice", "nohup", "timeout", "time", "command", "builtin", "exec",
    "xargs", "stdbuf", "ionice", "chrt", "taskset", "setsid", "unbuffer", "flock", "strace",
    "ltrace", "chroot", "fakeroot", "proxychains", "proxychains4", "torsocks", "firejail",
    "nsenter", "unshare", "busybox", "parallel", "watch", "caffeinate", "ssh", "su", "runuser",
    "script", "catchsegv", "valgrind", "systemd-run", "sg", "pkexec", "entr", "rlwrap", "ltrace",
    "setarch", "prlimit", "setpriv", "choom", "ssh-agent", "dbus-run-session", "linux32", "linux64",
    "numactl", "cgexec", "ip", "sudoedit", "tsp", "daemonize", "start-stop-daemon", "screen",
    "jobs", "perf", "gdb",  # bash's `jobs -x cmd`, `perf stat/record/trace cmd`, `gdb --args cmd`
))
# Shells: every non-option argument is also analysed as a command string (`sh -c '...'`); a
# shell with no such argument reads its script from stdin (the command becomes opaque).
SHELLS = frozenset(("sh", "bash", "dash", "zsh", "ksh", "mksh", "pdksh", "ash", "yash",
                    "posh", "fish", "csh", "tcsh", "rbash", "capsh"))  # capsh -- ARGS: bash ARGS
_SCRIPT_READERS = SHELLS | {".", "source"}
# Programs that start a shell (the user's login shell, $SHELL) when given no command: that
# shell reads its script from stdin (`echo 'rm -rf /' | su`, `newgrp root <<< ...`); value:
# how many operands they take before a command (`chroot /`, `sg root`: 1), None: they never
# take a command (newgrp), "c": a shell unless -c/--command gives one (su, runuser, script),
# "s": a shell with -s/-i and no command (sudo, doas).
_SHELL_STARTERS: dict[str, int | str | None] = {
    "su": "c", "runuser": "c", "script": "c", "newgrp": None, "sg": 1, "chroot": 1,
    "unshare": 0, "nsenter": 0, "fakeroot": 0, "firejail": 0, "screen": 0, "pkexec": 0,
    "sudo": "s", "doas": "s",  # -s or -i and no command
}
# Commands whose arguments are command strings (besides shells).
_STRING_RUNNERS = frozenset(("eval", "trap", "alias", "su", "runuser", "watch", "ssh",
                             "script", "env", "busybox", "mapfile", "readarray", "flock", "sg",
                             "compgen", "complete", "tmux"))  # flock -c, sg GROUP CMD, compgen -C
_FIND_EXEC = frozenset(("-exec", "-execdir", "-ok", "-okdir"))
_GDB_COMMANDS = frozenset(("ex", "eval-command", "iex", "init-eval-command", "x", "command", "ix",
                           "init-command"))  # -ex CMD, --eval-command=CMD, -x FILE...
_DECLARES = frozenset(("export", "declare", "typeset", "local", "readonly"))
AWKS = ("awk", "gawk", "mawk", "nawk", "busybox-awk", "original-awk")  # (scripts.awk_danger reads them)
_GIT_CMD_OPTIONS = ("--upload-pack", "--receive-pack", "--exec", "-u")

# Arguments that make an otherwise harmless-looking command run other programs or write files.
# An allow rule that matches a command containing one of them (after the basename of the
# command word) is downgraded to ask. "--long" entries also match "--long=value" and any
# abbreviation ("--out" for "--output": getopt and git accept unique prefixes); "-x" short
# entries also match "-x" inside a cluster or with an attached value ("-ni", "-i.bak"), and
# tar's first argument is such a cluster even without its dash ("tar tIf prog a.tar");
# single-dash long entries ("-exec") match exactly.
DANGEROUS_ARGS: dict[str, tuple[str, ...]] = {
    "find": ("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0",
             "-fprintf", "-fls"),
    "git": ("-c", "--config-env", "--exec-path", "--git-dir", "--work-tree", "--upload-pack",
            "--receive-pack", "--exec", "--output", "-O", "--open-files-in-pager", "--shallow-file",
            "--ext-diff", "--textconv",
            "-x", "--extcmd"),  # rebase -x CMD (= --exec), difftool -x/--extcmd CMD
    # make -n is no dry run: the Makefile's $(shell ...) runs when it is read, and so do the
    # lines that name $(MAKE); -q, -p and -t read it too (and -t writes files)
    "make": ("-n", "--just-print", "--dry-run", "--recon", "-q", "--question", "-p",
             "--print-data-base", "-t", "--touch",
             # code given on the command line (`--eval='x:=$(shell CMD)'`), a makefile of the
             # call's choosing (`-f -` reads stdin); a variable assignment: _make_assignment
             "--eval", "-E", "-f", "--file", "--makefile"),
    "rg": ("--pre", "--hostname-bin"),
    "tree": ("-o",),  # writes its listing to a file
    "sed": ("-i", "--in-place"),
    "tar": ("--to-command", "--checkpoint-action", "--use-compress-program", "-I",
            "--rsh-command", "--info-script", "-F", "--new-volume-script", "--index-file"),
    "rsync": ("-e", "--rsh", "--rsync-path"),
    "sort": ("-o", "--output", "--compress-program"),
    # runs the pager or browser it names; a config file's DEFINEs name programs it runs
    "man": ("-P", "--pager", "-H", "--html", "-C", "--config-file"),
    "less": ("-k", "--lesskey-file", "--lesskey-src", "--lesskey-content"),  # #env LESSOPEN=|cmd
    "zip": ("-TT", "--unzip-command"),
    "scp": ("-o", "-S", "-F"),  # ProxyCommand=, the ssh program, a config file
    "sftp": ("-o", "-S", "-F", "-D"),
    "wget": ("--use-askpass", "-e", "--execute", "--config", "-o", "--output-file", "-O", "--output-document", "-a",
             "--append-output", "-P", "--directory-prefix"),
    "curl": ("-o", "--output", "-O", "--remote-name", "--remote-name-all", "-D", "--dump-header",
             "-c", "--cookie-jar", "--trace", "--trace-ascii", "--stderr", "-K", "--config",
             "--libcurl", "--output-dir",
             # -T to a file:// URL writes any file; caches written to the file named
             "-T", "--upload-file", "--alt-svc", "--hsts", "--etag-save"),
    "diff3": ("--diff-program",),
    "sdiff": ("--diff-program", "-o", "--output"),
    "shuf": ("-o", "--output"),
    # pip install --dry-run is no dry run: it builds a local or downloaded sdist (setup.py runs)
    "pip": ("--python", "--log", "--log-file", "--cache-dir", "--target", "-t", "--dry-run"),
    "pip3": ("--python", "--log", "--log-file", "--cache-dir", "--target", "-t", "--dry-run"),
    # bash's compgen/complete run -C's command and -F's function and expand -W's word list
    "compgen": ("-C", "-F", "-W"),
    "complete": ("-C", "-F", "-W"),
    "flock": ("-c", "--command"),  # runs its string with sh -c
    "env": ("-S", "--split-string"),  # splits its string into a command
    "jobs": ("-x",),  # bash: runs its arguments as a command
    # bash: adds a line that `fc` runs later; writes or reads a history file
    "history": ("-s", "-w", "-a", "-r", "-n"),
    "perf": ("-o", "--output"),  # writes its report to a file
    "iconv": ("-o", "--output"),
    "fd": ("-x", "--exec", "-X", "--exec-batch"),  # runs a command for the files found
    "fdfind": ("-x", "--exec", "-X", "--exec-batch"),  # (fd, as Debian names it)
    "date": ("-s", "--set"),  # sets the clock
    "hostname": ("-F", "--file", "-b", "--boot"),  # sets the name (so does an operand)
    # cargo --config 'target.<triple>.runner=[...]' or 'build.rustc-wrapper=...' runs a program
    "cargo": ("--config", "-Z"),
    # --node-options=--import=data:... runs code given on the command line
    # (npm pack/publish --dry-run still runs the package's prepack and prepare scripts)
    "npm": ("--node-options", "--script-shell", "--logs-dir", "--userconfig", "--globalconfig", "--dry-run"),
    # --basetemp is emptied first (rm -rf), reports and logs go to the file named, -p loads a
    # module, -o/-c change the configuration, --pastebin uploads
    "pytest": ("--basetemp", "--junitxml", "--junit-xml", "--log-file", "--report-log", "--result-log",
               "-p", "-o", "--override-ini", "-c", "--config-file", "--pastebin"),
    "patch": ("-o", "--output"),  # writes the result there, even with --dry-run
    "yq": ("-i", "--in-place"),
    "file": ("-C", "--compile"),  # writes a compiled magic file
}
_MAKES = ("make", "gmake")
DANGEROUS_ARGS["gmake"] = DANGEROUS_ARGS["make"]
DANGEROUS_ARGS["py.test"] = DANGEROUS_ARGS["pytest"]
DANGEROUS_ARGS["tar"] += ("--volno-file",)  # writes the volume number there

_MAX_COMMAND = 65536  # characters analysed; a longer command is unparsable
_MAX_NEST = 32  # nesting of $( ( ${ ` and nested command strings
_MAX_CANDIDATES = 2048
_MAX_WORDS = 64  # words of a wrapper command expanded into suffixes (more: unparsable)


class RuleError(ValueError):
    """A rule (or a `policy check` call) that cannot be parsed; str() is a complete message."""


@dataclass(frozen=True)
class Rule:
    """One permission rule.

    tool:     one of the tool names
    pattern:  the text between the parentheses, or None for a bare tool name (any argument)
    text:     the rule as written (surrounding blanks removed), for messages
    decision: "allow", "ask" or "deny"
    layer:    where it came from, for messages (the config loader's layer name)
    examples_match / examples_not_match: main arguments the rule must / must not match
              (`check_examples`)
    sticky:   built-in protection: never relaxed by a mode or an allow rule
    exact:    the pattern is one exact main argument (a session "always allow this"); for
              commands no shape check and no dangerous-argument check applies (the user
              approved this exact string); for paths the normalised path must be equal
    """

    tool: str
    pattern: str | None
    text: str
    decision: str = ASK
    layer: str = ""
    examples_match: tuple[str, ...] = ()
    examples_not_match: tuple[str, ...] = ()
    sticky: bool = False
    exact: bool = False


@dataclass(frozen=True)
class Decision:
    """The outcome of `evaluate`: the decision, who decided (rule and layer, mode, shape...),
    a one-line reason, and the deciding rule if a rule decided."""

    decision: str
    who: str
    reason: str
    rule: Rule | None = field(default=None, compare=False)
    # the built-in protection matched (an ask that nothing relaxes): why, for the question
    always_asks: str = field(default="", compare=False)


# -- text helpers ------------------------------------------------------------------------

_INVISIBLE_EXTRA = frozenset("\u034f\u115f\u1160\u180e\u3164\uffa0\u2800")
_LOOKALIKE_EXTRA = frozenset("‘’‚‛“”„‟′″‵‶«»‹›∣ǀ│￨‖⁏꞉∶")
_SHELL_SIGNIFICANT = frozenset(" \t\n;&|<>()$`\"'\\{}*?[]#~=!")


def _is_invisible(ch: str) -> bool:
    if ch in _INVISIBLE_EXTRA:
        return True
    return unicodedata.category(ch) in ("Cf", "Zl", "Zp", "Co", "Cn", "Cs")


def _is_control(ch: str) -> bool:
    code = ord(ch)
    return (code < 0x20 and ch not in "\t\n") or 0x7F <= code <= 0x9F


def _is_lookalike(ch: str) -> bool:
    """Whether a non-ASCII character (the caller's) looks like a shell operator, quote or
    blank."""
    if ch in _LOOKALIKE_EXTRA or unicodedata.category(ch) == "Zs":
        return True
    norm = unicodedata.normalize("NFKC", ch)
    return norm != ch and any(c in _SHELL_SIGNIFICANT for c in norm)


_SMART = str.maketrans({"‘": "'", "’": "'", "‚": "'", "‛": "'", "“": '"', "”": '"',
                        "„": '"', "‟": '"', "∣": "|", "ǀ": "|", "│": "|", "￨": "|"})


def _fold_text(text: str) -> str:
    """NFKC, invisible characters dropped, non-ASCII blanks and smart quotes made ASCII."""
    out = []
    for ch in unicodedata.normalize("NFKC", text.translate(_SMART)):
        if _is_invisible(ch):
            continue
        if ord(ch) >= 0x80 and unicodedata.category(ch) == "Zs":
            ch = " "
        out.append(ch)
    return "".join(out).translate(_SMART)


@lru_cache(maxsize=256)  # a call's path is folded once, not once per protection rule
def _fold_name(text: str) -> str:
    """The folded form of a path (or pattern) for deny/ask matching (module docstring)."""
    text = "".join(ch for ch in unicodedata.normalize("NFC", text) if not _is_invisible(ch))
    segs = []
    for seg in text.casefold().split("/"):
        if seg not in (".", ".."):
            seg = seg.rstrip(". ") or seg
        segs.append(seg)
    return "/".join(segs)


def _basename(word: str) -> str:
    base = word.rstrip("/").rpartition("/")[2]
    return base or word


def _check_rule_chars(text: str, where: str) -> None:
    for ch in text:
        if ch == "\x00":
            raise RuleError(f"{where}: contains a NUL character")
        if _is_control(ch) or ch in "\t\n":
            raise RuleError(f"{where}: contains a control character U+{ord(ch):04X}")
        if _is_invisible(ch):
            raise RuleError(f"{where}: contains an invisible character U+{ord(ch):04X}")


# -- rule parsing ----------------------------------------------------------------------

_TOOL_HINTS = {
    "bash": "execute_command", "shell": "execute_command", "sh": "execute_command",
    "run": "execute_command", "exec": "execute_command", "command": "execute_command",
    "execute": "execute_command", "read": "read_file", "view": "read_file", "cat": "read_file",
    "write": "write_file", "create": "write_file", "edit": "edit_file", "patch": "edit_file",
    "multiedit": "edit_file", "ls": "list_directory", "list": "list_directory",
    "glob": "list_directory", "grep": "search_workspace", "search": "search_workspace",
    "rg": "search_workspace", "find": "search_workspace",
}


def _unknown_tool(name: str, text: str) -> RuleError:
    hint = _TOOL_HINTS.get(name.casefold().replace("_", ""))
    if hint is None and name.casefold() in NAMES:
        hint = name.casefold()
    msg = f"rule {text!r}: unknown tool {name!r}; the tools are: {', '.join(NAMES)}"
    if name == "*":
        msg = (f"rule {text!r}: there is no tool wildcard; name one of: {', '.join(NAMES)} "
               "(use a permission mode for all tools)")
    elif hint:
        msg += f" (did you mean {hint}?)"
    return RuleError(msg)


def _split_rule(text: str) -> tuple[str, str | None]:
    """(tool name, pattern or None); RuleError for bad parentheses."""
    open_at = text.find("(")
    if open_at < 0:
        if ")" in text:
            raise RuleError(f"rule {text!r}: unbalanced parentheses: ')' without '('")
        return text.strip(), None
    close_at = text.rfind(")")
    if close_at < open_at:
        raise RuleError(f"rule {text!r}: unbalanced parentheses: '(' is never closed")
    junk = text[close_at + 1:]
    if junk.strip():
        raise RuleError(f"rule {text!r}: unexpected text after the closing ')': {junk.strip()!r}")
    pattern = text[open_at + 1:close_at]
    depth = 0
    for ch in pattern:
        depth += (ch == "(") - (ch == ")")
        if depth < 0:
            break
    if depth != 0:
        raise RuleError(f"rule {text!r}: unbalanced parentheses in the pattern")
    return text[:open_at].strip(), pattern


def parse_rule(
    text: str,
    decision: str = ASK,
    layer: str = "",
    *,
    match: Iterable[str] = (),
    not_match: Iterable[str] = (),
    trusted: bool = False,
) -> Rule:
    """Parse ``Tool(pattern)`` or ``Tool``; RuleError with a clear message if it is not valid.

    The pattern is compiled (and so validated) here, unless the rule is `trusted`: the
    built-in rules, which a test validates as any other (their characters and 344 regexes
    cost ~15 ms of every start-up; the regexes are compiled at first match instead).
    `match` / `not_match` are stored, not checked: call `check_examples`.
    """
    check_decision(decision)
    if not isinstance(text, str):
        raise RuleError(f"a rule must be a string, got {type(text).__name__}")
    shown = text.strip()
    if not shown.strip():
        raise RuleError("empty rule")
    if not trusted:
        _check_rule_chars(shown, f"rule {shown!r}")
    name, pattern = _split_rule(shown)
    if not name:
        raise RuleError(f"rule {shown!r}: no tool name before '('")
    if name not in MAIN_ARG:
        raise _unknown_tool(name, shown)
    if pattern is not None:
        if not pattern.strip():
            raise RuleError(
                f"rule {shown!r}: empty pattern; write {name} alone to mean any argument"
            )
        if name != _COMMAND:
            pattern = pattern.strip()
        if trusted:
            pass
        elif name == _COMMAND:
            _command_pattern(pattern, shown)
        else:
            _path_pattern(pattern, shown)
    examples: list[tuple[str, ...]] = []
    for what, items in (("match", match), ("not_match", not_match)):
        if isinstance(items, str):
            items = (items,)
        items = tuple(items)
        for item in items:
            if not isinstance(item, str):
                raise RuleError(f"rule {shown!r}: {what} examples must be strings")
        examples.append(items)
    return Rule(name, pattern, shown, decision, layer, examples[0], examples[1])


def exact_rule(name: str, args: dict, decision: str = ALLOW, layer: str = "session") -> Rule:
    """A rule for exactly this call's main argument (the confirmation's "always allow this").

    For a command the exact string is compared (no shape or dangerous-argument check: the user
    approved this very string); for a path the normalised path. Deny rules and the built-in
    protection still win over it.
    """
    if name not in MAIN_ARG:
        raise RuleError(f"unknown tool {name!r}; the tools are: {', '.join(NAMES)}")
    main = _main_value(name, args)
    if not isinstance(main, str) or "\x00" in main:
        raise RuleError(f"{name}: no valid {MAIN_ARG[name]} to make a rule from")
    check_decision(decision)
    return Rule(name, main, format_call(name, args), decision, layer, exact=True)


def default_rules() -> list[Rule]:
    """The built-in layer: per-tool defaults, then the sticky protection rules."""
    return list(_DEFAULTS)


def _builtin(text: str, decision: str, sticky: bool = False) -> Rule:
    rule = parse_rule(text, decision, BUILTIN_LAYER, trusted=True)
    return Rule(rule.tool, rule.pattern, rule.text, decision, BUILTIN_LAYER, sticky=sticky)



# -- paths -------------------------------------------------------------------------------


def normalize_path(path: object, root: str | None = None) -> str | None:
    """The call's path relative to the root, lexically normalised ("." for the root itself);
    None if it is not a usable string or lies outside the root.

    `root` is an absolute directory (the working directory); None: relative paths are taken
    as relative to the root and absolute paths are outside. Purely lexical: no symlinks.
    """
    if not isinstance(path, str) or "\x00" in path:
        return None
    if root is None:
        base = "/\x00root"  # no real path contains NUL: nothing absolute is inside
    else:
        base = posixpath.normpath("/" + os.fspath(root).lstrip("/"))
    full = path if path.startswith("/") else base + "/" + path
    full = posixpath.normpath("/" + full.lstrip("/"))
    if full == base:
        return "."
    prefix = base if base.endswith("/") else base + "/"
    if not full.startswith(prefix):
        return None
    return full[len(prefix):]


def _segment_regex(seg: str) -> str:
    out = []
    i, n = 0, len(seg)
    while i < n:
        c = seg[i]
        if c == "\\" and i + 1 < n:
            out.append(re.escape(seg[i + 1]))
            i += 2
            continue
        if c == "*":
            while i < n and seg[i] == "*":
                i += 1
            out.append("[^/]*")
            continue
        if c == "?":
            out.append("[^/]")
        elif c == "[":
            j = i + 1
            if j < n and seg[j] in "!^":
                j += 1
            if j < n and seg[j] == "]":
                j += 1
            while j < n and seg[j] != "]":
                j += 1
            if j >= n:
                out.append(re.escape(c))
            else:
                body = seg[i + 1:j]
                neg = body[:1] in ("!", "^")
                if neg:
                    body = body[1:]
                body = re.sub(r"([\\^\[\]&~|])", r"\\\1", body)
                out.append(f"[^/{body}]" if neg else f"(?!/)[{body}]")
                i = j + 1
                continue
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def _glob_regex(pattern: str) -> str:
    segs = pattern.split("/")
    rx = ""
    for idx, seg in enumerate(segs):
        last = idx == len(segs) - 1
        if seg == "**":
            if last:
                rx = ".*" if idx == 0 else rx[:-1] + "(?:/.*)?"
            else:
                rx += "(?:[^/]+/)*"
        else:
            rx += _segment_regex(seg) + ("" if last else "/")
    return rx


@lru_cache(maxsize=1024)
def _path_pattern(pattern: str, text: str = "") -> tuple[re.Pattern, re.Pattern]:
    """(exact regex, folded regex) for a path pattern; RuleError if it can never match."""
    where = f"rule {text or pattern!r}"
    if pattern.startswith("/"):
        raise RuleError(
            f"{where}: path patterns are relative to the working directory and always "
            f"anchored there; write {pattern.lstrip('/') or '**'!r} without the leading '/'"
        )
    if pattern.startswith("~"):
        raise RuleError(f"{where}: '~' is not expanded; paths are relative to the working "
                        "directory")
    pat = pattern
    while pat.startswith("./"):
        pat = pat[2:]
    if pat.endswith("/"):
        pat = pat.rstrip("/") + "/**"
    pat = re.sub("/+", "/", pat)
    segs = pat.split("/")
    if any(seg == ".." for seg in segs):
        raise RuleError(f"{where}: '..' cannot appear in a path pattern")
    segs = [seg for seg in segs if seg != "."] or ["."]
    segs = [seg for k, seg in enumerate(segs) if not (seg == "**" and k and segs[k - 1] == "**")]
    pat = "/".join(segs)
    exact = re.compile(_glob_regex(pat), re.DOTALL)
    folded = re.compile(_glob_regex(_fold_name(pat)), re.DOTALL)
    return exact, folded


# -- shell command analysis --------------------------------------------------------------


@dataclass
class Analysis:
    """What `analyze_command` found (module docstring)."""

    command: str
    simple: list[list[str]]  # argv of each simple command, assignments removed, in order
    flags: frozenset[str]
    words: list[str]  # every word, incl. assignments and redirection targets
    candidates: list[list[str]]  # argvs judged against deny/ask rules
    loose_words: list[str]  # for an unparsable command: every word-ish piece (fail closed)
    opaque: bool  # some word cannot be known statically
    problems: list[str]  # why it is unparsable
    dynamic_words: list[list[bool]] = field(default_factory=list)  # parallel to `simple`
    deeply_opaque: bool = False  # opaque beyond single words: unparsable, script in data...

    @property
    def is_simple(self) -> bool:
        return len(self.simple) == 1 and not self.flags

    @property
    def shape(self) -> str:
        """The flags in a fixed order, e.g. "list, pipe" ("" for a simple command)."""
        return ", ".join(f for f in FLAG_ORDER if f in self.flags)

    unparsable = property(lambda self: UNPARSABLE in self.flags)


class _Abort(Exception):
    pass


@dataclass
class _Word:
    value: str
    raw: str
    quoted: bool
    dynamic: bool
    globbed: bool


@dataclass
class _Collector:
    flags: set = field(default_factory=set)
    simple: list = field(default_factory=list)
    commands: list = field(default_factory=list)  # the _Word lists of `simple`
    words: list = field(default_factory=list)
    dynamic: bool = False
    problems: list = field(default_factory=list)
    stdin_texts: list = field(default_factory=list)  # here-doc bodies, here-strings
    extra: list = field(default_factory=list)  # more deny/ask candidates ($(( )), `{ ...`)
    assign_values: list = field(default_factory=list)  # values of FOO=... prefixes
    runtime_values: bool = False  # a variable gets a value known at run time (printf -v...)
    runtime_names: bool = False  # printf -v, read, declare... a variable named at run time


_BLANKS = " \t"
_META = frozenset(" \t\n|&;<>()")
_NAME_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_NAME_CHARS = _NAME_START | frozenset("0123456789")
_SPECIAL_PARAMS = frozenset("@*#?-$!0123456789")
_LIST_OPS = (";;&", "&>>", ";;", ";&", "&&", "||", "|&", "&>", "|", "&", ";")
_REDIR_OPS = ("<<<", "<<-", "&>>", "<<", "<&", "<>", ">>", ">&", ">|", "<", ">")
_RESERVED = frozenset(("!", "{", "}", "if", "then", "else", "elif", "fi", "do", "done", "while",
                       "until", "for", "case", "esac", "select", "function", "time", "coproc",
                       "[[", "in"))
_ASSIGN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_LOADER = re.compile(r"ld(-[-\w.]*)?\.so(\.\d+)*")  # the dynamic loader runs a program
_MAX_CLUSTER = 24  # letters of an option cluster whose tails are read as attached values
# `name[` (a name ends so; linear, unlike a regex of the whole name), `=(` (a compound
# assignment, `declare -a 'a=(...)'`) or `[key]=` starting a word (an element of one)
_SUBSCRIPT = re.compile(r"[A-Za-z0-9_]\[|=\(|^\[[^\]]*\]=")
# reserved words after which a word is in command position (`! case`, `then case`...), and
# those that end a compound command before an `esac` (`fi esac`, `} esac`)
_LEADING = frozenset(("!", "{", "if", "then", "else", "elif", "do", "while", "until"))
_BASH_LEADING = frozenset(("time", "function", "coproc"))  # dash: commands like others
_CLOSING = frozenset(("}", "fi", "done", "esac"))
_FD_VAR = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")
_ANSI_SIMPLE = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n",
                "r": "\r", "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}


# A `case` command's states: "subject" (its word), "in", "pat0" (a pattern list or `esac`
# may start: `(`, a word), "pat1" (after `(` or `|`: a pattern), "pat2" (after a pattern:
# `|` or `)`), "body" (commands, up to `;;`, `;&`, `;;&` or `esac` in command position).
# The shells read a pattern's `)` so, not as the end of a `$(`.
_CASE_STEPS = {("pat0", "("): "pat1", ("pat2", "|"): "pat1", ("pat2", ")"): "body"}


def _reserved(word: _Word) -> bool:
    """An unquoted reserved word (`case`, not `'case'` or `\\case`)."""
    return not word.quoted and word.raw == word.value and word.raw in _RESERVED


def _command_position(cur: list[_Word], closing: bool) -> bool:
    """Whether a word after `cur` (the words of the command so far) starts a command, where
    the shells read a reserved word: first, or after reserved words such as `!` and `then`
    (and, inside a case, after one that ends a compound command: `fi esac`)."""
    allowed = _LEADING | _CLOSING if closing else _LEADING
    return all(_reserved(w) and w.raw in allowed for w in cur)


class _Lexer:
    """A POSIX-sh tokenizer (plus the bash extensions that matter) feeding a _Collector."""

    def __init__(self, text: str, col: _Collector, depth: int, probe: str = "") -> None:
        self.s = text
        self.n = len(text)
        self.i = 0
        self.col = col
        self.depth = depth
        self.nest = 0
        self.heredocs: list[tuple[str, bool, bool]] = []
        self.probe = probe  # "bash" or "dash": a probe finding where "$((" ends (_arithmetic)
        self.probed: dict[int, int] = {}  # a probe's "$((" already read: start -> end

    # helpers
    def flag(self, name: str) -> None:
        self.col.flags.add(name)

    def problem(self, msg: str) -> None:
        self.col.flags.add(UNPARSABLE)
        self.col.problems.append(msg)

    def _op(self, ops: tuple[str, ...]) -> str:
        for op in ops:
            if self.s.startswith(op, self.i):
                return op
        return self.s[self.i]

    def _enter(self) -> None:
        self.nest += 1
        if self.nest + self.depth > _MAX_NEST:
            self.problem("nested too deeply")
            raise _Abort

    def run(self) -> None:
        self.parse_list(None)
        if self.heredocs:
            self.problem("a here-document has no body")

    # lists and commands
    def parse_list(self, closer: str | None) -> None:
        self._enter()
        s, n = self.s, self.n
        cur: list[_Word] = []
        started = False
        newline_sep = False
        cases: list[str] = []  # the open `case` commands of this list, innermost last

        def begin() -> None:
            nonlocal started
            if not started:
                started = True
                if newline_sep:
                    self.flag(LIST)

        def end() -> None:
            nonlocal cur, started
            if started:
                self._finish(cur)
            cur = []
            started = False

        while True:
            while self.i < n and s[self.i] in _BLANKS:
                self.i += 1
            if self.i >= n:
                if closer:
                    self.problem("'(' is never closed")
                end()
                break
            c = s[self.i]
            if c == "\\" and s.startswith("\n", self.i + 1):
                self.flag(LINE_CONTINUATION)
                self.i += 2
                continue
            if c == "\n":
                had = started
                end()
                self.i += 1
                if had:
                    newline_sep = True
                if self.heredocs:
                    self._read_heredocs()
                continue
            if c == "#":
                self.flag(COMMENT)
                j = s.find("\n", self.i)
                self.i = n if j < 0 else j
                continue
            if cases and cases[-1] != "body":  # `case` words, `(`, `|` and `)` of patterns
                if c in "(|)" and (cases[-1], c) in _CASE_STEPS:
                    cases[-1] = _CASE_STEPS[cases[-1], c]
                    self.i += 1
                elif c in _META:
                    self.problem(f"{c!r} inside a 'case' pattern or before its 'in'")
                    cases.clear()
                else:
                    self._case_word(self.read_word(), cases, cur)
                continue
            if c == ")":
                self.i += 1
                if closer == ")":
                    end()
                    break
                self.problem("')' without '('")
                end()
                continue
            if c == "(":
                if not self.probe and s.startswith("((", self.i):
                    self._arithmetic_command()  # bash: `(( ))`, `if (( ))`, `for (( ;; ))`...
                self.flag(SUBSHELL)
                if cur:
                    self.flag(COMPOUND)  # `name()`: a function definition
                    end()
                begin()
                self.i += 1
                self.parse_list(")")
                continue
            if c in ";&|":
                op = self._op(_LIST_OPS)
                if op in ("&>", "&>>"):  # bash: redirect both; dash: background, then redirect
                    begin()
                    self.flag(LIST)
                    self._redirect(op)
                    continue
                self.i += len(op)
                end()
                if cases and op in (";;", ";&", ";;&"):  # the end of a case item
                    cases[-1] = "pat0"
                newline_sep = False
                self.flag(PIPE if op in ("|", "|&") else LIST)
                continue
            if c in "<>":
                begin()
                if s.startswith("(", self.i + 1):
                    cur.append(self._process_substitution())
                    continue
                self._redirect(self._op(_REDIR_OPS))
                continue
            begin()
            word = self.read_word()
            if not word.raw:  # cannot happen; never loop
                self.i += 1
                continue
            if (word.raw.isdigit() or _FD_VAR.fullmatch(word.raw)) and s[self.i:self.i + 1] in (
                "<",
                ">",
            ):
                continue  # an IO number: part of the redirection that follows
            if word.raw == "case" and cur and _reserved(word) and _reserved(cur[0]) \
                    and cur[0].raw in _BASH_LEADING:
                # `time case`, `function f case`, `coproc case`: dash reads words, bash a case
                self.problem(f"'case' after {cur[0].raw!r} (sh and bash read it differently)")
            elif _reserved(word) and _command_position(cur, closing=bool(cases)):
                if word.raw == "case":
                    self.flag(COMPOUND)
                    cases.append("subject")
                    end()
                    continue
                if word.raw == "esac" and cases:
                    cases.pop()
            cur.append(word)
        if cases:
            self.problem("a 'case' without its 'esac'")
        self.nest -= 1

    def _case_word(self, word: _Word, cases: list[str], cur: list[_Word]) -> None:
        """A word of a `case` header or pattern list (state cases[-1], see _CASE_STEPS):
        the subject, `in`, a pattern, or the `esac` that ends the case (kept in `cur`, as a
        reserved word, for the redirections after it)."""
        self.col.words.append(word.value)
        state = cases[-1]
        if state == "pat0" and _reserved(word) and word.raw == "esac":
            cases.pop()
            cur.append(word)
        elif state == "subject":
            cases[-1] = "in"
        elif state == "in" and _reserved(word) and word.raw == "in":
            cases[-1] = "pat0"
        elif state in ("pat0", "pat1"):
            cases[-1] = "pat2"
        else:
            self.problem(f"{word.raw!r} where a 'case' needs 'in', '|' or ')'")
            cases.clear()

    def _finish(self, words: list[_Word]) -> None:
        k = 0
        assigned = False
        while k < len(words):
            w = words[k]
            if _ASSIGN.match(w.raw):
                self.flag(ENV_PREFIX)
                assigned = True
            elif _reserved(w) and not assigned:  # `x=1 time -v rm`: a word, the program runs
                self.flag(COMPOUND)
                if w.raw == "time":
                    # dash (Debian's /bin/sh) has no `time` keyword: it runs the program,
                    # whose options differ (`time -v rm -rf /` runs rm): judge that too
                    self.col.extra.append([x.value for x in words[k:]])
                    # bash's `time -p -- cmd`: one unquoted -p, then one --
                    for option in ("-p", "--"):
                        if k + 1 < len(words) and words[k + 1].raw == option:
                            k += 1
            else:
                break
            k += 1
        self.col.words.extend(w.value for w in words)
        for w in words[:k]:
            if _ASSIGN.match(w.raw):  # FOO='rm -rf /' cmd, GIT_CONFIG_VALUE_0='!sh ...'
                self.col.assign_values.append(w.value.split("=", 1)[1])
        argv_words = words[k:]
        self._note_writes(words[:k], argv_words)
        if argv_words:
            values = [w.value for w in argv_words]
            self.col.simple.append(values)
            self.col.commands.append(argv_words)
            for j, w in enumerate(argv_words):
                if not w.quoted and w.raw in _RESERVED:  # (an empty argv is no candidate)
                    # `function f { rm -rf /; }`: a reserved word mid-command may start one
                    # (and the first, after an assignment: `x=1 if rm -rf /` fails closed)
                    self.col.extra.append(values[j + 1:])

    def _note_writes(self, prefix: list[_Word], argv: list[_Word]) -> None:
        """Whether this command gives a variable a value known only at run time (`x=$(...)`,
        printf -v, read, mapfile, `declare x="$y"`, `for x in $(...)`), or writes a variable
        whose name is known only at run time (`printf -v "${x}CMDS[ls]"`, `declare "$n=..."`,
        `read "$n"`): bash may evaluate such a value later (arithmetic, `${!x}`, PS4)."""
        col = self.col
        if any(_ASSIGN.match(w.raw) and w.dynamic for w in prefix) or (
                any(_reserved(w) and w.raw in ("for", "select") for w in prefix)
                and any(w.dynamic for w in argv)):
            col.runtime_values = True
        j = 0
        while j < len(argv) and argv[j].value in ("builtin", "command"):  # `builtin printf -v`
            j += 1  # and their options: `command -p read`, `builtin -- read`
            while j < len(argv) and argv[j].value.startswith("-") and argv[j].value != "-":
                j += 1
        base = _basename(argv[j].value) if j < len(argv) else ""
        rest = argv[j + 1:]
        names: list[_Word] = []
        if base == "printf":
            for w in rest:
                if w.value.startswith("-v"):
                    col.runtime_values = True
                    names = [w] if w.value != "-v" else []  # `-v NAME`: NAME is read below
                if w.dynamic or w.value == "--" or not w.value.startswith("-"):
                    names += [w] if w.dynamic and not names else []  # `printf "$o"`: -v?
                    break
        elif base in ("read", "mapfile", "readarray", "getopts"):
            col.runtime_values = True
            names = rest  # names, a prompt, a delimiter...: any dynamic word
        elif base in _DECLARES:
            col.runtime_values |= any(w.dynamic for w in rest)
            names = [w for w in rest if not _ASSIGN.match(w.raw)]  # `x=$y`: a known name
        if any(w.dynamic for w in names):
            col.runtime_names = True

    def _process_substitution(self) -> _Word:
        self.flag(SUBSTITUTION)
        start = self.i
        self.i += 2
        self.parse_list(")")
        raw = self.s[start:self.i]
        self.col.dynamic = True
        return _Word(raw, raw, False, True, False)

    def _redirect(self, op: str) -> None:
        self.flag(REDIRECTION)
        self.i += len(op)
        while True:  # blanks and line continuations before the target (`> \<newline> x`)
            if self.i < self.n and self.s[self.i] in _BLANKS:
                self.i += 1
            elif self.s.startswith("\\\n", self.i):
                self.flag(LINE_CONTINUATION)
                self.i += 2
            else:
                break
        if self.s.startswith(("<(", ">("), self.i):
            target = self._process_substitution()
        elif self.i >= self.n or self.s[self.i] in _META:
            self.problem(f"redirection {op!r} without a target")
            return
        else:
            target = self.read_word()
        self.col.words.append(target.value)
        if op in ("<<", "<<-"):
            self.heredocs.append((target.value, op == "<<-", not target.quoted))
        elif op == "<<<":
            self.col.stdin_texts.append(target.value)

    def _read_heredocs(self) -> None:
        pending, self.heredocs = self.heredocs, []
        for delim, strip_tabs, expands in pending:
            lines: list[str] = []
            while True:
                if self.i >= self.n:
                    self.problem(f"here-document {delim!r} never ends")
                    return
                j = self.s.find("\n", self.i)
                line = self.s[self.i:] if j < 0 else self.s[self.i:j]
                self.i = self.n if j < 0 else j + 1
                if (line.lstrip("\t") if strip_tabs else line) == delim:
                    break
                lines.append(line)
            body = "\n".join(lines)
            self.col.stdin_texts.append(body)
            if expands:
                sub = _Lexer(body, self.col, self.depth + 1, self.probe)
                sub._enter()
                sub._scan_text(None)

    # words
    def _subscript_check(self) -> None:
        """At the "[" of `name[`: bash reads an assignment's subscript to its matching "]",
        blanks, `<<`, `;` and newlines included (`a[1<<2]=x`: no here-document), where sh
        ends the word; a subscript with any of them is read two ways."""
        s, level, j = self.s, 0, self.i
        while j < self.n:
            if s[j] == "\\":
                j += 1
            elif s[j] == "[":
                level += 1
            elif s[j] == "]":
                level -= 1
                if not level:
                    return
            elif s[j] in " \t\n;|&<>":
                self.problem("an array subscript that bash and sh read differently")
                return
            j += 1

    def read_word(self) -> _Word:
        s, n = self.s, self.n
        start = self.i
        val: list[str] = []
        quoted = dynamic = globbed = False
        brace_at = bracket_at = -1  # first unquoted { and [ (offsets in the raw word)
        while self.i < n:
            c = s[self.i]
            if c in _META:
                break
            if c == "\\":
                if self.i + 1 >= n:  # sh passes it on as a backslash
                    self.problem("a backslash at the very end")
                    val.append(c)
                    self.i = n
                    break
                nxt = s[self.i + 1]
                self.i += 2
                if nxt == "\n":
                    self.flag(LINE_CONTINUATION)
                else:
                    val.append(nxt)
                    quoted = True
                continue
            if c == "'":
                j = s.find("'", self.i + 1)
                quoted = True
                if j < 0:
                    self.problem("unterminated single quote")
                    val.append(s[self.i + 1:])
                    self.i = n
                    break
                val.append(s[self.i + 1:j])
                self.i = j + 1
                continue
            if c == '"':
                self.i += 1
                text, dyn = self._scan_text('"')
                val.append(text)
                quoted = True
                dynamic |= dyn
                continue
            if c == "`":
                val.append(self._backtick())
                dynamic = True
                continue
            if c == "$":
                text, dyn, q = self._dollar(in_dq=False)
                val.append(text)
                dynamic |= dyn
                quoted |= q
                continue
            if c in "*?":
                self.flag(GLOB)
                globbed = dynamic = True
            elif c == "[" and bracket_at < 0:
                bracket_at = self.i - start
                if _NAME.fullmatch(s[start:self.i]):
                    self._subscript_check()
            elif c == "{" and brace_at < 0:
                brace_at = self.i - start
            elif c == "~" and (self.i == start or s[self.i - 1] in "=:"):
                self.flag(TILDE)
                dynamic = True
            if ord(c) >= 0x80:
                self.flag(NON_ASCII)
            val.append(c)
            self.i += 1
        raw = s[start:self.i]
        if bracket_at >= 0 and "]" in raw[bracket_at + 1:]:
            self.flag(GLOB)
            globbed = dynamic = True
        if brace_at >= 0 and raw != "{}":
            # bash brace expansion, also across quoted parts: {rm,-rf,"/x y"}; over-approximated
            tail = raw[brace_at:]
            if "}" in tail and ("," in tail or ".." in tail):
                self.flag(BRACE)
                dynamic = True
        value = "".join(val)
        if quoted and _runs_in_a_subscript(value):
            # bash evaluates `name[...]` as an array subscript in test -v, [ -eq ], [[ ]],
            # printf -v, read, let, declare, export, mapfile...: quoted, its `$(...)` runs too
            self._substitutions_in(value)
            dynamic = True
        if dynamic:
            self.col.dynamic = True
        return _Word(value, raw, quoted, dynamic, globbed)

    def _scan_text(self, terminator: str | None) -> tuple[str, bool]:
        """Double-quoted text (terminator '"') or an expanding here-doc body (None)."""
        s, n = self.s, self.n
        val: list[str] = []
        dyn = False
        while self.i < n:
            c = s[self.i]
            if terminator and c == terminator:
                self.i += 1
                return "".join(val), dyn
            if c == "\\" and self.i + 1 < n:
                nxt = s[self.i + 1]
                if nxt == "\n":
                    self.flag(LINE_CONTINUATION)
                    self.i += 2
                    continue
                if nxt in '$`"\\':
                    val.append(nxt)
                    self.i += 2
                    continue
            if c == "`":
                val.append(self._backtick('"' if terminator else "heredoc"))
                dyn = True
                continue
            if c == "$":
                text, d, _ = self._dollar(in_dq=True)
                val.append(text)
                dyn |= d
                continue
            val.append(c)
            self.i += 1
        if terminator:
            self.problem("unterminated double quote")
        return "".join(val), dyn

    def _dollar(self, in_dq: bool) -> tuple[str, bool, bool]:
        """At a '$': (text, dynamic, quoted)."""
        s, i = self.s, self.i
        nxt = s[i + 1] if i + 1 < self.n else ""
        if s.startswith("$((", i):
            self.flag(EXPANSION)
            self.i += 3
            self._arithmetic()
            self.col.dynamic = True
            return s[i:self.i], True, False
        if nxt == "(":
            self.flag(SUBSTITUTION)
            self.i += 2
            # the here-documents of the line read after the whole line, `$(...)` lines included
            outer, self.heredocs = self.heredocs, []
            self.parse_list(")")
            if self.heredocs:  # bash reads the body after the line, dash ends it at the ")"
                self.problem("a here-document inside '$(' ends after it (sh and bash differ)")
            self.heredocs = outer + self.heredocs
            self.col.dynamic = True
            return s[i:self.i], True, False
        if nxt == "{":
            self.flag(EXPANSION)
            self.i += 2
            self._param_expansion(in_dq)
            self.col.dynamic = True
            return s[i:self.i], True, False
        if nxt == "[":
            self.flag(EXPANSION)
            self.i += 2
            self._old_arithmetic()
            self.col.dynamic = True
            return s[i:self.i], True, False
        if nxt == "'" and not in_dq:
            self.flag(ANSI_C)
            self.i += 2
            self.col.dynamic = True
            return self._ansi_c(), True, True
        if nxt == '"' and not in_dq:
            self.flag(EXPANSION)
            self.i += 2
            text, _ = self._scan_text('"')
            self.col.dynamic = True
            return text, True, True
        if nxt in _NAME_START:
            j = i + 1
            while j < self.n and s[j] in _NAME_CHARS:
                j += 1
            self.i = j
            self.flag(EXPANSION)
            self.col.dynamic = True
            return s[i:j], True, False
        if nxt and nxt in _SPECIAL_PARAMS:
            self.i += 2
            self.flag(EXPANSION)
            self.col.dynamic = True
            return s[i:self.i], True, False
        self.i += 1
        return "$", False, False

    def _arithmetic(self) -> None:
        """After "$((": an arithmetic expansion, or bash's command substitution `$((cmd) )`.

        bash and dash end it at different places. bash skips quoted parentheses; when the ")"
        that balances the second "(" is not followed by ")", bash reads the whole as `$( (cmd)
        )`, a command substitution. dash reads quotes as text and a ")" that no "(" opened as
        text, ending only at "))". Where the two ends differ the line does not parse (what one
        shell runs as commands the other reads as arithmetic). Both expand the arithmetic text
        as double-quoted text, so a `$(...)` inside single quotes there runs: the text is read
        that way for its commands. Each "$((" is scanned by two probes that record nothing,
        then read once: linear in its length, whatever the nesting."""
        self._enter()
        s, n = self.s, self.n
        start = self.i
        if self.probe:  # each "$((" once: bash's reading scans a substitution twice
            if start not in self.probed:
                end = self._probe_read()[1]
                self.probed[start] = n if end is None else end
            self.i = self.probed[start]
            self.nest -= 1
            return
        kind, end = self._probe_arithmetic("bash")
        dash_end = self._probe_arithmetic("dash")[1]
        if kind == "substitution":  # bash: `$( (cmd) )`
            self.flag(SUBSTITUTION)
            self.i = start - 1
            self.parse_list(")")
            end = self.i
        else:
            if end is None:
                self.problem("'$((' is never closed")
            self._substitutions_in(s[start:n if end is None else end - 2])
            self.i = n if end is None else end
        if end != dash_end:
            self.problem("sh and bash end this '$((' at different places")
        self.nest -= 1

    def _arithmetic_command(self) -> None:
        """At "((" starting a command. dash reads two subshells, and so does the rest of this
        lexer; bash reads an arithmetic command (as "$((" reads, _arithmetic) and expands its
        text as double-quoted text: `(( '$(rm -rf /)' ))` runs rm. Its substitutions are
        read here."""
        at = self.i
        self.i += 2
        kind, end = self._probe_arithmetic("bash")
        if kind == "arithmetic":
            text = self.s[self.i:end - 2]
            if "<<" in text or "#" in text:  # dash: a here-document or a comment that hides
                self.problem("an arithmetic command with << or #, which sh reads otherwise")
            self._substitutions_in(text)  # lines bash runs (`(( 1 << 2 ))` + newline + cmd)
        self.i = at

    def _probe_arithmetic(self, shell: str) -> tuple[str, int | None]:
        """(kind, end) of the "$((" being read, as `shell` reads it; a probe records nothing."""
        probe = _Lexer(self.s, _Collector(), self.depth + self.nest, shell)
        probe.i = self.i
        try:
            return probe._probe_read()
        except _Abort:
            self.problem("nested too deeply")
            raise

    def _probe_read(self) -> tuple[str, int | None]:
        """This probe's shell's reading of "$((" from here: (kind, end), end None when never
        closed; a command substitution (bash) is read by the parser from the second "("."""
        start = self.i
        kind, end = self._dash_arithmetic() if self.probe == "dash" else self._bash_arithmetic()
        if kind == "substitution":
            self.i = start - 1  # at the second "(": `(cmd) )`
            self.parse_list(")")
            end = self.i
        return kind, end

    def _bash_arithmetic(self) -> tuple[str, int | None]:
        """bash's reading of "$((" from here: ("arithmetic", end after "))"),
        ("substitution", after the ")" balancing the second "(") or ("", None): never closed."""
        s, n = self.s, self.n
        depth = 2
        while self.i < n:
            c = s[self.i]
            if c == "(":
                depth += 1
                self.i += 1
            elif c == ")":
                depth -= 1
                self.i += 1
                if depth == 1:
                    if self.i < n and s[self.i] == ")":
                        return "arithmetic", self.i + 1
                    return "substitution", self.i
            elif c == "\\":
                self.i += 2
            elif c == "'":
                j = s.find("'", self.i + 1)
                self.i = n if j < 0 else j + 1
            elif c == '"':
                self.i += 1
                self._scan_text('"')
            elif c == "`":
                self._backtick()
            elif c == "$":
                self._dollar(in_dq=False)  # bash reads $'...' here with its escapes
            else:
                self.i += 1
        return "", None

    def _dash_arithmetic(self) -> tuple[str, int | None]:
        """dash's reading of "$((" from here: quotes are text; a ")" that no "(" opened is
        text unless "))" follows. ("arithmetic", end after "))") or ("", None)."""
        s, n = self.s, self.n
        level = 0
        while self.i < n:
            c = s[self.i]
            if c == "(":
                level += 1
            elif c == ")" and level:
                level -= 1
            elif c == ")" and s.startswith("))", self.i):
                return "arithmetic", self.i + 2
            elif c == "\\":
                self.i += 1
            elif c == "`":
                self._backtick()
                continue
            elif c == "$":
                self._dollar(in_dq=True)
                continue
            self.i += 1
        return "", None

    def _old_arithmetic(self) -> None:
        """After "$[": bash's old arithmetic, up to the "]" that balances it (spaces, quoted
        brackets included), its text expanded as double-quoted text, like "$((": `$[ '$(id)' ]`
        runs id. dash reads "$[" as text and splits the words at the spaces: the line does not
        parse, and the text is read for substitutions."""
        self._enter()
        s, n = self.s, self.n
        start = self.i
        depth = 1
        while self.i < n and depth:
            c = s[self.i]
            if c in "'\"":
                j = s.find(c, self.i + 1)
                self.i = n if j < 0 else j + 1
                continue
            if c == "\\":
                self.i += 1
            elif c == "[":
                depth += 1
            elif c == "]":
                depth -= 1
            self.i += 1
        self.problem("'$[' (bash's arithmetic; sh reads it as text)")
        self._substitutions_in(s[start:self.i - 1 if depth == 0 else n])
        self.nest -= 1

    def _substitutions_in(self, text: str) -> None:
        """The commands of text the shells expand as double-quoted text (quotes in it too)."""
        if "$" in text or "`" in text:
            _Lexer(text, self.col, self.depth + self.nest, self.probe)._scan_text(None)

    def _param_expansion(self, in_dq: bool) -> None:
        """After "${": up to its "}". Inside double quotes (or a here-document, or "$(("),
        shells disagree on a single quote (dash and bash --posix read it as text for
        `${x:-'...'}`, bash as a quote) and a `$(...)` inside it runs: such a quote makes the
        line unparsable, and its text is read for substitutions. So does a `$'` (bash decodes
        it here, dash does not). bash expands the offset and length of a substring,
        `${x:off:len}`, as double-quoted text (then arithmetic): a `$(...)` inside single
        quotes there runs too (`${PWD:'$(rm -rf /)'}`; dash: bad substitution)."""
        self._enter()
        s, n = self.s, self.n
        start = self.i
        substring = False  # past the `:` of `${name:offset:length}`
        if start < n and s[start] in " \t\n|":
            self.problem("'${' and a blank (bash 5.3 runs what follows as a command)")
        while self.i < n:
            c = s[self.i]
            if c == "}":
                self.i += 1
                self.nest -= 1
                m = _ASSIGNING_EXPANSION.match(s, start, self.i - 1)
                if m and ("$" in s[m.end():self.i] or "`" in s[m.end():self.i]):
                    self.col.runtime_values = True  # `${x:=$(...)}` gives x a run-time value
                return
            if c == "\\":
                self.i += 2
            elif c == "'":
                j = s.find("'", self.i + 1)
                if j < 0:
                    break
                if in_dq:
                    self.problem("a single quote inside a quoted '${' (shells read it differently)")
                if in_dq or substring or "[" in s[start:self.i]:  # bash evaluates `${a['$(...)']}`
                    self._substitutions_in(s[self.i + 1:j])
                self.i = j + 1
            elif c == ":" and not substring and _SUBSTRING_NAME.fullmatch(s, start, self.i):
                substring = self.i + 1 >= n or s[self.i + 1] not in "-=+?"  # not `${x:-…}`
                self.i += 1
            elif c == '"':
                self.i += 1
                self._scan_text('"')
            elif c == "`":
                self._backtick()
            elif c == "$":
                if s.startswith("$'", self.i):
                    self.problem("$'...' inside '${' (bash decodes it, sh does not)")
                self._dollar(in_dq=True)
            else:
                self.i += 1
        self.problem("'${' is never closed")
        self.i = n
        self.nest -= 1

    def _backtick(self, quoted: str = "") -> str:
        """A backquoted command. Inside double quotes ('"') the shells also turn `\\"` into
        `"` before reading it; in a here-document ("heredoc") dash does and bash does not:
        both readings are analysed."""
        self.flag(SUBSTITUTION)
        self.col.dynamic = True
        s, n = self.s, self.n
        start = self.i
        self.i += 1
        inner: list[str] = []  # `\"` read as `"` (inside double quotes; dash in a here-doc)
        kept: list[str] = []  # `\"` kept (bash in a here-document)
        escapes = '$`\\"' if quoted else "$`\\"
        closed = False
        while self.i < n:
            c = s[self.i]
            if c == "\\" and self.i + 1 < n and s[self.i + 1] in escapes:
                inner.append(s[self.i + 1])
                kept.append("\\" * (s[self.i + 1] == '"') + s[self.i + 1])
                self.i += 2
                continue
            if c == "`":
                self.i += 1
                closed = True
                break
            inner.append(c)
            kept.append(c)
            self.i += 1
        if not closed:
            self.problem("unterminated backquote")
        if self.depth + self.nest + 1 > _MAX_NEST:
            self.problem("nested too deeply")
            raise _Abort
        readings = [inner] if quoted != "heredoc" else [kept, inner]  # bash's, then dash's
        for reading in dict.fromkeys("".join(r) for r in readings):
            _Lexer(reading, self.col, self.depth + self.nest + 1, self.probe).run()
        return s[start:self.i]

    def _ansi_c(self) -> str:
        """The body of $'...' (after the opening quote), decoded as bash does."""
        s, n = self.s, self.n
        out: list[str] = []
        while self.i < n:
            c = s[self.i]
            if c == "'":
                self.i += 1
                return "".join(out)
            if c == "\\" and self.i + 1 < n:
                e = s[self.i + 1]
                self.i += 2
                if e in _ANSI_SIMPLE:
                    out.append(_ANSI_SIMPLE[e])
                elif e in "xuU":
                    width = {"x": 2, "u": 4, "U": 8}[e]
                    m = re.match(f"[0-9A-Fa-f]{{1,{width}}}", s[self.i:])
                    if m:
                        self.i += m.end()
                        try:
                            out.append(chr(int(m.group(0), 16)))
                        except (ValueError, OverflowError):
                            self.problem("bad \\u escape")
                    else:
                        out.append("\\" + e)
                elif e in "01234567":
                    m = re.match("[0-7]{0,2}", s[self.i:])
                    self.i += m.end()
                    out.append(chr(int(e + m.group(0), 8) & 0xFF))
                elif e == "c" and self.i < n and s[self.i] != "'":  # the parser pairs `\c`
                    out.append(chr(ord(s[self.i]) & 0x1F))  # and a quote after it ends $'
                    if s[self.i] == "\\" and self.i + 1 < n:  # `\c\X`: the parser pairs `\X`;
                        if s[self.i + 1] != "\\":  # bash's control character is the `\`, and
                            out.append(s[self.i + 1])  # X is text: `$'\c\'x'` is 034 ' x
                        self.i += 2
                    else:
                        self.i += 1
                else:
                    out.append("\\" + e)
                continue
            out.append(c)
            self.i += 1
        self.problem("unterminated $'")
        return "".join(out)


# `${name:=word}`, `${name=word}`: the expansion assigns word to name
_ASSIGNING_EXPANSION = re.compile(r"!?[A-Za-z_][A-Za-z0-9_]*(?:\[[^]]*\])?:?=")
# What may stand before the `:` of a substring `${name:offset}`: a name, a positional or
# special parameter, an indirection `!name`, a subscript `a[...]` (loosely: fail closed).
_SUBSTRING_NAME = re.compile(r"[!#]?(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!0-])(?:\[.*\])?", re.S)


def _runs_in_a_subscript(value: str) -> bool:
    """Whether bash, reading `value` as an array subscript `name[...]` or a compound
    assignment `a=(...)`, might run a `$(...)` or a backquote in it."""
    m = _SUBSCRIPT.search(value)
    return bool(m) and ("$(" in value[m.start():] or "`" in value[m.start():])


def _starts_a_shell(base: str, args: list[str]) -> bool:
    """Whether `base` (a `_SHELL_STARTERS` program) given `args` may start a shell that reads
    its commands from stdin. Its options are not known here: a word after an option may be
    that option's value (`chroot --userspec u /`), so it is not counted as an operand (fail
    closed: more lines count as shells)."""
    takes = _SHELL_STARTERS[base]
    if takes is None:
        return True
    if takes == "c":  # unless -c CMD, -lc CMD, --command=CMD, --session-command CMD
        return not _gives_a_command(base, args)
    if takes == "s" and not any(_has_option(w, "si", ("--shell", "--login")) for w in args):
        return False  # sudo, doas: a shell only with -s or -i
    operands = 0
    after_option = ended = False
    for w in args:
        if not ended and w == "--":
            ended = True
        elif not ended and w.startswith("-") and w != "-":
            after_option = "=" not in w
        elif after_option and not ended:
            after_option = False
        else:
            operands += 1
    return operands <= (0 if takes == "s" else takes)


# su, runuser and script (util-linux): the short options that take a value (the rest of the
# cluster or the next word: in `su -wc`, `c` is -w's list), and every long option (value:
# whether it takes one), to read an option cluster and an abbreviation as getopt_long does.
_SU_LONGS = {"--preserve-environment": False, "--whitelist-environment": True, "--group": True,
             "--supp-group": True, "--login": False, "--command": True, "--session-command": True,
             "--fast": False, "--shell": True, "--pty": False, "--help": False, "--version": False}
_COMMAND_OPTIONS: dict[str, tuple[str, dict[str, bool]]] = {
    "su": ("wgGsc", _SU_LONGS),
    "runuser": ("wgGscu", {**_SU_LONGS, "--user": True}),
    "script": ("IOBTtmcEo", {"--log-in": True, "--log-out": True, "--log-io": True,
                            "--log-timing": True, "--timing": False, "--logging-format": True,
                            "--append": False, "--command": True, "--return": False,
                            "--flush": False, "--force": False, "--echo": True,
                            "--output-limit": True, "--quiet": False, "--help": False,
                            "--version": False}),
}


def _gives_a_command(base: str, args: list[str]) -> bool:
    """Whether su, runuser or script get a command (-c CMD, --command=CMD, --session-command),
    read as getopt_long reads them: a letter after a value-taking option in a cluster is that
    value (`su -wc`, `script -Tc f`: no command), as is the word after it (`su -w -c`); an
    abbreviation counts only when it is unique. After `--` nothing counts (fail closed: a
    shell may read stdin)."""
    letters, longs = _COMMAND_OPTIONS[base]
    i = 0
    while i < len(args):
        w = args[i]
        i += 1
        if w == "--":
            return False
        if w.startswith("--"):
            name = w.split("=", 1)[0]
            full = [long for long in longs if long.startswith(name)]
            if name in longs:
                full = [name]
            if len(full) != 1:
                continue  # unknown or ambiguous: an error, or not a command
            if full[0] in ("--command", "--session-command") and ("=" in w or i < len(args)):
                return True
            if longs[full[0]] and "=" not in w:
                i += 1  # its value
        elif w.startswith("-") and w != "-":
            for k, ch in enumerate(w[1:], 2):
                if ch in letters:
                    if ch == "c" and (w[k:] or i < len(args)):
                        return True
                    if not w[k:] and ch != "t":  # -t[FILE]: only an attached value
                        i += 1
                    break
    return False


def _has_option(word: str, letters: str, longs: tuple[str, ...]) -> bool:
    """`word` is a short option cluster holding one of `letters`, or (an abbreviation of) one
    of the long options `longs`."""
    if word.startswith("--"):
        name = word.split("=", 1)[0]
        return len(name) > 3 and any(long.startswith(name) for long in longs)
    return word.startswith("-") and any(ch in word[1:] for ch in letters)


def _loose_words(text: str) -> list[str]:
    """Every word-ish piece of a text that did not parse (quotes dropped, split at operators);
    and the same once more with `$'...'` decoded and `$"` read as `"`, as bash reads them
    (`to$'u'ch` is touch)."""
    words = _loose_split(text)
    if "$'" in text or '$"' in text:
        known = set(words)
        words += [w for w in _loose_split(_decode_dollar_quotes(text)) if w not in known]
    return words + [_basename(w) for w in words if "/" in w]


def _loose_split(text: str) -> list[str]:
    t = re.sub(r"[\\'\"]", "", _fold_text(text))
    return [w for w in re.split(r"[\s;&|<>()`${},=]+", t) if w]


def _decode_dollar_quotes(text: str) -> str:
    """`text` with each `$'...'` decoded as bash decodes it and each `$"` made `"` (wherever
    they are, quoted or not: for loose words, more words is the safe side)."""
    out: list[str] = []
    i = 0
    lexer = _Lexer(text, _Collector(), 0)
    while True:
        j = text.find("$", i)
        if j < 0 or j + 1 >= len(text):
            out.append(text[i:])
            return "".join(out)
        out.append(text[i:j])
        if text[j + 1] == "'":
            lexer.i = j + 2
            out.append(lexer._ansi_c())
            i = lexer.i
        else:
            out.append("" if text[j + 1] == '"' else "$")
            i = j + 1


_BRACE_WORD = re.compile(r"(.*?)\{([^{}]*)\}(.*)", re.DOTALL)
_RANGE = re.compile(r"(-?\d{1,6}|[A-Za-z])\.\.(-?\d{1,6}|[A-Za-z])(?:\.\.-?\d{1,6})?")  # {a..b..step}


def _brace_expand(word: str) -> list[str] | None:
    """bash brace expansion of the first {a,b} / {1..3} in a word (64 items at most)."""
    m = _BRACE_WORD.fullmatch(word)
    if not m:
        return None
    pre, body, post = m.groups()
    if "," in body:
        alts = body.split(",")
    else:
        r = _RANGE.fullmatch(body)
        if not r:
            return None
        a, b = r.groups()
        if a.lstrip("-").isdigit() and b.lstrip("-").isdigit():
            lo, hi = int(a), int(b)
            step = 1 if hi >= lo else -1
            if abs(hi - lo) >= 64:
                return None
            alts = [str(x) for x in range(lo, hi + step, step)]  # every step: a superset
        elif a.isalpha() and b.isalpha():
            step = 1 if ord(b) >= ord(a) else -1
            alts = [chr(x) for x in range(ord(a), ord(b) + step, step)]
        else:
            return None
    if len(alts) > 64:
        return None
    return [pre + alt + post for alt in alts]


class _Expander:
    """Builds the deny/ask candidates of an analysis."""

    def __init__(self, depth: int) -> None:
        self.depth = depth
        self.out: list[list[str]] = []
        self.seen: set[tuple[str, ...]] = set()
        self.opaque = False
        self.unparsable = False
        self.loose: list[str] = []
        self.stdin_shell = False

    def add(self, argv: list[str], level: int = 0) -> None:
        key = tuple(argv)
        if not argv or key in self.seen:
            return
        if len(self.seen) >= _MAX_CANDIDATES or level + self.depth > _MAX_NEST:
            self.unparsable = True
            return
        self.seen.add(key)
        self.out.append(list(argv))
        cmd = argv[0]
        base = _basename(cmd)
        if base != cmd:
            self.add([base] + argv[1:], level + 1)
        key_base = base.casefold()
        args = argv[1:]
        for k, w in enumerate(argv):
            alts = _brace_expand(w) if "{" in w else None
            if alts:  # an empty word of a brace expansion is dropped: `{,rm} -rf /`
                self.add(argv[:k] + [a for a in alts if a] + argv[k + 1:], level + 1)
                break
        query = key_base == "command" and args[:1] in (["-v"], ["-V"])  # `command -v rm`
        if key_base == "xargs" and any(_basename(w).casefold() in WRAPPERS for w in args):
            # `echo rm x | xargs env`: a wrapper with no command of its own runs the words read
            # from stdin (where its command ends is not known here: any wrapper counts)
            self.stdin_shell = True
        if (key_base in WRAPPERS or _LOADER.fullmatch(key_base)) and not query:
            if len(argv) > _MAX_WORDS:
                self.unparsable = True
            else:
                for k in range(1, len(argv)):
                    self.add(argv[k:], level + 1)
        if key_base in _SHELL_STARTERS and _starts_a_shell(key_base, args):
            self.stdin_shell = True
        if key_base in SHELLS:
            scripts = [w for w in args if not w.startswith(("-", "+"))]
            if not scripts:
                self.stdin_shell = True
            for w in scripts:
                self.nested(w)
        elif key_base in _STRING_RUNNERS:
            for w in args:
                if not w.startswith("-"):
                    self.nested(w)
                elif not w.startswith("--") and len(w) > 2:  # an attached value: `env -S'rm x'`
                    self._attached_values(w)
                if "=" in w:
                    self.nested(w.split("=", 1)[1])
            if key_base == "eval" and args:  # eval runs all its words, options or not
                self.nested(" ".join(args[1:] if args[0] == "--" else args))
            elif key_base == "ssh" and len(argv) <= _MAX_WORDS:  # more: unparsable (a wrapper)
                # the remote shell runs the words after the destination (args[0] or later),
                # joined; where the options end is not known here: every tail
                for k in range(1, len(args)):
                    self.nested(" ".join(args[k:]))
        entries = DANGEROUS_ARGS.get(base, ())
        if base == "git":  # `git ls-files -x '*.o'`: a pattern, not a command (_HARMLESS_AFTER)
            from dashfloat.tools.scripts import git_subcommand_at

            at = git_subcommand_at(argv)
            sub = argv[at] if at < len(argv) else None
            entries = tuple(e for e in entries if sub not in _HARMLESS_AFTER.get((base, e), ()))
        for j, w in enumerate(args):  # `man -P 'rm -rf /'`: a dangerous option's value
            if any(_dangerous_word(entry, w) for entry in entries):
                if "=" in w:
                    self.nested(w.split("=", 1)[1])
                elif not w.startswith("--") and len(w) > 2:
                    self._attached_values(w)
                if j + 1 < len(args):
                    self.nested(args[j + 1])
                    if "=" in args[j + 1]:  # `scp -o ProxyCommand='rm -rf /'`
                        self.nested(args[j + 1].split("=", 1)[1])
        if key_base in _DECLARES:  # `export PS4='$(cmd)'`: a value run later (set -x...)
            for w in args:
                if _ASSIGN.match(w):
                    self.nested(w.split("=", 1)[1])
        if key_base in ("sed", "gsed"):  # GNU sed's `e CMD` runs CMD with the shell
            from dashfloat.tools import scripts

            commands = scripts.sed_commands(argv)
            if commands is None:  # `e` alone, `s///e`: the pattern space, known at run time
                self.opaque = True
            for text in commands or ():
                self.nested(text)
        if key_base in AWKS:  # system("CMD"), print | "CMD", "CMD" | getline: the shell runs CMD
            from dashfloat.tools import scripts

            commands = scripts.awk_commands(argv)
            if commands is None:  # a command built at run time
                self.opaque = True
            for text in commands or ():
                self.nested(text)
        if key_base == "gdb":
            self._gdb(args)
        if key_base == "fc":  # bash runs lines of its history again, built at run time
            opts = "".join(w[1:] for w in args if w.startswith("-") and w[1:2].isalpha())
            if "l" not in opts or "s" in opts or "e" in opts:
                self.opaque = True
            for j, w in enumerate(args[:-1]):
                if w.startswith("-") and w.endswith("e") and w[1:2].isalpha():
                    self.nested(args[j + 1])  # `fc -e EDITOR`: a command run on the lines
        if key_base == "find":
            for j, w in enumerate(args):
                if w in _FIND_EXEC:
                    end = j + 1
                    while end < len(args) and args[end] not in (";", "+"):
                        end += 1
                    self.add(args[j + 1:end], level + 1)
        if key_base == "git":
            for j, w in enumerate(args):
                nxt = args[j + 1] if j + 1 < len(args) else None
                if w == "-c" and nxt and "=" in nxt:
                    self.nested(nxt.split("=", 1)[1].lstrip("!"))
                if w.startswith("!"):  # `git config alias.x '!rm -rf /'`
                    self.nested(w[1:])
                from dashfloat.tools.scripts import GIT_FILTERS

                for opt in _GIT_CMD_OPTIONS + GIT_FILTERS * ("filter-branch" in args[:j]):
                    if w == opt and nxt:
                        self.nested(nxt)
                    elif w.startswith(opt + "=") and opt.startswith("--"):
                        self.nested(w[len(opt) + 1:])
                if w == "run" and "bisect" in args[:j]:  # `git bisect run CMD ARGS`
                    self.add(args[j + 1:], level + 1)
                elif w == "foreach" and "submodule" in args[:j]:  # a shell runs the words
                    self.nested(" ".join(a for a in args[j + 1:] if a not in ("--recursive", "--quiet", "-q")))

    def _gdb(self, args: list[str]) -> None:
        """gdb runs debugger commands from -ex/-iex (and files from -x/-ix): opaque; a
        `shell CMD`, `!CMD` or `pipe ... | CMD` among them runs CMD with the shell."""
        for j, w in enumerate(args):
            name, eq, value = w.lstrip("-").partition("=")
            if not w.startswith("-") or name not in _GDB_COMMANDS:
                continue
            self.opaque = True
            if not eq:
                value = args[j + 1] if j + 1 < len(args) else ""
            text = value.strip()
            if text.startswith(("shell ", "!")):
                self.nested(text[1:] if text.startswith("!") else text[6:])
            elif text.startswith(("pipe ", "|")) and "|" in text[1:]:
                self.nested(text[1:].split("|", 1)[1])

    def _attached_values(self, word: str) -> None:
        """Each text an option cluster may carry as a value: after any of its letters
        (`env -iS'rm x'`, `tar -cvI'rm x'`: the value follows the letter that takes it)."""
        k = 2
        while k < len(word):
            if k > _MAX_CLUSTER:  # each tail is analysed: a long run of letters is not read
                self.unparsable = True
                break
            self.nested(word[k:])
            if not word[k].isalnum():
                break
            k += 1

    def nested(self, text: str) -> None:
        if not text.strip():
            return
        sub = _analyze(text, self.depth + 1)
        if sub.opaque:
            self.opaque = True
        self.loose.extend(sub.loose_words)
        for argv in sub.candidates:
            key = tuple(argv)
            if key in self.seen:
                continue
            if len(self.seen) >= _MAX_CANDIDATES:  # not judged: fail closed, as add() does
                self.unparsable = True
                return
            self.seen.add(key)
            self.out.append(argv)


def _prescan(text: str, col: _Collector) -> None:
    """Flags for characters anywhere (quoted or not): control, invisible, look-alike."""
    for ch in text:
        if ch == "\x00":
            col.flags.add(UNPARSABLE)
            col.problems.append("a NUL character")
        elif _is_control(ch):
            col.flags.add(UNPARSABLE)
            col.problems.append(f"a control character U+{ord(ch):04X}")
        elif ord(ch) >= 0x80:
            if _is_invisible(ch):
                col.flags.add(INVISIBLE)
            elif _is_lookalike(ch):
                col.flags.add(LOOKALIKE)


# The last command analysed and its Analysis: one call's command is read by the rules, the
# repository check and the cargo check in turn (tools/pipeline.py), and a 100 KB line costs
# tens of milliseconds each time. The result is a pure function of the text, so it is exact;
# one (text, Analysis) tuple, replaced whole, is safe between threads.
_last_analysis: tuple[str, Analysis] | None = None


def analyze_command(command: str) -> Analysis:
    """Tokenize a shell command line and describe it (module docstring). Never raises. The
    same text gives the same Analysis object: callers read it, never change it."""
    global _last_analysis
    last = _last_analysis
    if last is not None and type(command) is str and last[0] == command:
        return last[1]
    analysis = _analyze_uncached(command)
    if type(command) is str:
        _last_analysis = (command, analysis)
    return analysis


def _analyze_uncached(command: str) -> Analysis:
    try:
        return _analyze(command, 0)
    except RecursionError:  # the limits above should prevent it; fail closed regardless
        text = command if isinstance(command, str) else repr(command)
        return Analysis(text, [], frozenset((UNPARSABLE,)), [], [], _loose_words(text), True,
                        ["nested too deeply"], deeply_opaque=True)


_DOLLAR_QUOTE = re.compile(r"(?<!\\)((?:\\\\)*)\$(?=['\"])")  # an unescaped $' or $"


def _changes_the_reading(col: _Collector) -> None:
    """Commands after which the shell reads the line differently than this lexer does: an
    alias (dash and bash --posix expand them in `sh -c`; `alias x=eval` makes the next line's
    words a command), `hash -p` and BASH_CMDS (a name runs another program), `enable -f`
    (a builtin from a library), BASH_ALIASES; and bash's `[[ x =~ ... ]]`, whose regex may
    hold `|`, `(` and `#`. With more than one command, the line does not parse."""
    for argv in col.simple:
        base = _basename(argv[0]) if argv else ""
        if ((base == "alias" and any("=" in w for w in argv[1:]))
                or (base == "hash" and any(w.startswith("-") and "p" in w for w in argv[1:]))
                or (base == "enable" and any(w.startswith("-") and "f" in w for w in argv[1:]))) \
                and len(col.simple) > 1:
            col.flags.add(UNPARSABLE)
            col.problems.append(f"'{base}' changes how the commands after it are read")
            return
    if "[[" in col.words and "=~" in col.words:
        col.flags.add(UNPARSABLE)
        col.problems.append("a '[[ =~ ]]' regex (bash reads | ( # in it as text)")
        return
    if any("BASH_ALIASES" in w or "BASH_CMDS" in w for w in col.words) and len(col.simple) > 1:
        col.flags.add(UNPARSABLE)
        col.problems.append("BASH_ALIASES or BASH_CMDS changes how the commands after it are read")


_PROMPT_OCTAL = re.compile(r"\\([0-7]{1,3})")


def _xtrace(argvs: list[list[str]]) -> bool:
    """Whether a command turns on bash's xtrace (`set -x`, `set -o xtrace`, `shopt -os
    xtrace`), which expands PS4 before each command, as a prompt."""
    for argv in argvs:
        base = _basename(argv[0]) if argv else ""
        if base in ("set", "shopt") and "xtrace" in argv[1:]:
            return True
        if base == "set" and any(w.startswith("-") and "x" in w for w in argv[1:]):
            return True
    return False


_EXTGLOB_OPEN = re.compile(r"[@!*+?]\(")  # bash's extglob patterns: @(a|b), !(x), *(x)...


def _history_expansion(argvs: list[list[str]]) -> bool:
    """Whether a command may turn on bash's history expansion (`set -H`, `set -o histexpand`,
    `shopt -os histexpand`, in any cluster; `+H` too: fail closed). With history on as well
    (`set -o history`; off in `bash -c`), bash expands `!!`, `!$`, `^a^b` in the lines read
    after it into other commands (`echo touch`, then `!$ M` runs touch)."""
    for argv in argvs:
        base = _basename(argv[0]) if argv else ""
        if base in ("set", "shopt") or base.casefold() in SHELLS:
            if "histexpand" in argv[1:]:
                return True
            if base != "shopt" and any(w[:1] in "-+" and w[1:2] != "-" and "H" in w for w in argv[1:]):
                return True
    return False


# text where bash evaluates a variable's value as an arithmetic expression or a name:
# `((x))`, `$((x))`, `$[x]`, `${!x}`, `[[ x -eq 1 ]]`, a subscript naming one: `a[x]`,
# `${a[$i]}` (not `a[1]`), a substring's offset and length: `${x:off:len}`, `${@: -1}`
# (not `${x:-…}`, `${x:=…}`, `${x:+…}`, `${x:?…}`)
_EVALUATES = re.compile(r"\(\(|\$\[|\$\{!|\[\[|[A-Za-z0-9_]\[[^][]*?[A-Za-z_$`]"
                        r"|\$\{#?(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!0-])(?:\[[^]]*\])?:(?![-=+?])")
_EVALUATING_TESTS = frozenset(("-v", "-R", "-eq", "-ne", "-lt", "-le", "-gt", "-ge"))


def _evaluates_values(text: str, argvs: list[list[str]]) -> bool:
    """Whether the line may make bash evaluate a variable's value (recursively) as an
    arithmetic expression or a name, where a subscript's `$(...)` runs: the text above,
    `let`, `test -v` (or an arithmetic comparison), `declare -i` or `-n` (a nameref)."""
    if _EVALUATES.search(text):
        return True
    for argv in argvs:
        base = _basename(argv[0]) if argv else ""
        if base == "let":
            return True
        if base in ("test", "[") and _EVALUATING_TESTS.intersection(argv[1:]):
            return True
        if base in _DECLARES and any(w[:1] in "-+" and ("i" in w or "n" in w) for w in argv[1:]):
            return True
    return False


def _other_readings(text: str, flags: set) -> list[str]:
    """The same line as other shells or other steps read it, each analysed one level deeper
    for more deny/ask candidates: NFKC-folded (look-alike characters); with every
    backslash-newline removed (the shells join the lines first: a `$` at the end of a line and
    `((` on the next, a reserved word or a here-document's delimiter split so); as dash reads
    `$'..'` and `$".."` (a `$`, then a quote)."""
    out = []
    if flags & {NON_ASCII, LOOKALIKE, INVISIBLE}:
        out.append(_fold_text(text))
    if "\\\n" in text:
        out.append(text.replace("\\\n", ""))
    if "$'" in text or '$"' in text:
        out.append(_DOLLAR_QUOTE.sub(lambda m: m.group(1) + "\\$", text))
    return [other for other in out if other != text]


def _analyze(command: str, depth: int) -> Analysis:
    col = _Collector()
    if not isinstance(command, str):
        return Analysis(repr(command), [], frozenset((UNPARSABLE,)), [], [], [], True,
                        ["not a string"], deeply_opaque=True)
    text = command
    _prescan(text, col)
    if len(text) > _MAX_COMMAND:
        col.flags.add(UNPARSABLE)
        col.problems.append("too long to analyse")
    elif depth > _MAX_NEST:
        col.flags.add(UNPARSABLE)
        col.problems.append("nested too deeply")
    else:
        try:
            _Lexer(text, col, depth).run()
        except _Abort:
            pass
    if not col.simple and not text.strip(" \t\n") and not col.flags:
        col.flags.add(EMPTY)
    _changes_the_reading(col)
    exp = _Expander(depth)
    for argv in col.simple + col.extra:
        exp.add(argv)
    for value in col.assign_values:
        exp.nested(value.lstrip("!"))
    for other in _other_readings(text, col.flags) if depth <= _MAX_NEST else ():
        sub = _analyze(other, depth + 1)
        exp.loose.extend(sub.loose_words)
        for argv in sub.candidates:
            if tuple(argv) not in exp.seen:
                exp.seen.add(tuple(argv))
                exp.out.append(argv)
    prompts = _xtrace(exp.out) or any("@P" in w for w in col.words)
    if prompts:
        # `set -x` expands PS4, `${x@P}` a value, as prompts: text set by printf -v, read...
        for piece in col.words + col.stdin_texts:
            # a prompt's `\NNN` is decoded before its substitutions run: `\140` is a backquote
            decoded = _PROMPT_OCTAL.sub(lambda m: chr(int(m.group(1), 8) & 0xFF), piece)
            for text in dict.fromkeys((piece, decoded)):
                if "$(" in text or "`" in text:
                    exp.nested(text)
    if _history_expansion(exp.out):  # `set -o history -H`, then `!$`, `^a^b` on a later line
        col.flags.add(UNPARSABLE)
        col.problems.append("bash's history expansion (set -H) changes the lines after it")
    if _EXTGLOB_OPEN.search(text) and ("[[" in col.words or any(
            (_basename(argv[0]) == "shopt" or _basename(argv[0]).casefold() in SHELLS)
            and "extglob" in argv[1:] for argv in exp.out if argv)):
        # bash reads `@(#) ; rm -rf /` as one pattern (no comment) once extglob is on, as it
        # always is inside `[[ ]]`: its `)` ends the pattern where this lexer sees a subshell
        col.flags.add(UNPARSABLE)
        col.problems.append("bash's extended patterns (extglob, [[ ]]) are read differently")
    if col.runtime_names or (col.runtime_values and (prompts or _evaluates_values(text, exp.out))):
        # `printf -v x '%s[%s' a '$(rm -rf /)]'; let x`: bash evaluates the value it built
        exp.opaque = True
    shellish = any(_basename(argv[0]).casefold() in _SCRIPT_READERS for argv in exp.out)
    scripted = any(w.startswith("<(") for w in col.words)  # `. <(echo 'rm -rf /')`
    if exp.stdin_shell or (shellish and (col.flags & {PIPE, REDIRECTION} or scripted)):
        # `echo 'rm -rf /' | sh`, `sh <<EOF`, `. /dev/stdin <<< ...`: the script is data
        # somewhere in the command line; judge every word and here-text as a command too
        exp.opaque = True
        for piece in col.words + col.stdin_texts:
            if _basename(piece).casefold() not in SHELLS:
                exp.nested(piece)
    if exp.unparsable:
        col.flags.add(UNPARSABLE)
        col.problems.append("too many words or nested commands")
    loose = exp.loose
    if UNPARSABLE in col.flags:
        loose = _loose_words(text) + loose
    return Analysis(
        command=text,
        simple=col.simple,
        flags=frozenset(col.flags),
        words=col.words,
        candidates=exp.out,
        loose_words=loose,
        opaque=bool(UNPARSABLE in col.flags or col.dynamic or exp.opaque),
        problems=col.problems,
        dynamic_words=[[w.dynamic for w in words] for words in col.commands],
        deeply_opaque=bool(UNPARSABLE in col.flags or exp.opaque),
    )


# -- command patterns ----------------------------------------------------------------

_PATTERN_FORBIDDEN = {
    LIST: "a list (; && || & or a newline)",
    PIPE: "a pipe",
    SUBSTITUTION: "a command substitution",
    REDIRECTION: "a redirection",
    ENV_PREFIX: "an environment-variable prefix",
    SUBSHELL: "a subshell",
    COMPOUND: "a reserved word or group",
    EXPANSION: "a variable expansion",
    BRACE: "a brace expansion",
    ANSI_C: "$'...' quoting",
    LINE_CONTINUATION: "a line continuation",
    COMMENT: "a comment",
    LOOKALIKE: "a look-alike character",
    INVISIBLE: "an invisible character",
}


@lru_cache(maxsize=1024)
def _command_pattern(pattern: str, text: str = "") -> tuple[str | None, ...]:
    """The pattern's words (None = the `*` wildcard); RuleError if it is not one command."""
    where = f"rule {text or pattern!r}"
    col = _Collector()
    _prescan(pattern, col)
    try:
        _Lexer(pattern, col, 0).run()
    except _Abort:
        pass
    if UNPARSABLE in col.flags:
        raise RuleError(f"{where}: the pattern does not parse: {'; '.join(col.problems)}")
    bad = [desc for flag, desc in _PATTERN_FORBIDDEN.items() if flag in col.flags]
    if bad:
        raise RuleError(
            f"{where}: a command pattern must be one simple command; it contains "
            + ", ".join(bad)
        )
    if len(col.commands) != 1:
        raise RuleError(f"{where}: empty pattern; write execute_command alone for any command")
    out: list[str | None] = []
    for w in col.commands[0]:
        if w.globbed:
            if w.raw != "*":
                raise RuleError(
                    f"{where}: {w.raw!r}: '*' is a wildcard only as a whole word (quote glob "
                    "characters for a literal match)"
                )
            out.append(None)
        else:
            out.append(w.value)
    return tuple(out)


def _argv_match(pattern: tuple[str | None, ...], argv: Sequence[str], fold: bool) -> bool:
    if pattern and pattern[-1] is None:
        head = pattern[:-1]
        if len(argv) < len(head):
            return False
    else:
        head = pattern
        if len(argv) != len(head):
            return False
    for k, (p, w) in enumerate(zip(head, argv, strict=False)):
        if p is None:
            continue
        if p == w:
            continue
        if fold and k == 0 and p.casefold() == w.casefold():
            continue
        return False
    return True


def _dangerous_word(entry: str, word: str) -> bool:
    if entry.startswith("--"):
        if word == entry or word.startswith(entry + "="):
            return True
        if word.startswith("--") and len(word) > 2:
            name = word[2:].split("=", 1)[0]
            return bool(name) and entry[2:].startswith(name)
        return False
    if len(entry) == 2:  # "-x": alone, clustered, or with an attached value
        return word == entry or (
            word.startswith("-") and not word.startswith("--") and entry[1] in word[1:]
        )
    return word == entry


def dangerous_script(argv: Sequence[str]) -> str | None:
    """What the script of a sed or awk in `argv` does beyond filtering text (runs a command,
    writes a file, is read from a file), or None (tools/scripts.py)."""
    from dashfloat.tools import scripts

    check = scripts.CHECKS.get(_basename(argv[0])) if argv else None
    return check(argv) if check is not None else None


# Short options that take a value, which may be attached (`date -Iseconds`, `date -d@0`):
# in a cluster, what follows one is its value, not more options
_ATTACHED_VALUE = {"date": "dfrI", "git": "O"}  # (git: every subcommand with a -O takes its value)


# Commands whose Nth operand is a file they write (`uniq in out`): asked, whatever it is
# (an option's value may count as an operand here: asking is the safe side). After `--`
# every word is an operand (`uniq in -- -out`), and xxd reads options only before its first
# operand (`xxd in -out` writes `-out`).
_OUTPUT_OPERAND = {"uniq": 2, "xxd": 2, "hostname": 1}  # (`hostname NAME` sets the name)
_OPTIONS_FIRST = frozenset(("xxd",))


def _operands(base: str, words: Sequence[str]) -> list[str]:
    out: list[str] = []
    ended = False
    for w in words:
        if w == "--" and not ended:
            ended = True
        elif ended or w == "-" or not w.startswith("-") or (base in _OPTIONS_FIRST and out):
            out.append(w)
    return out


def _make_assignment(base: str, words: Sequence[str]) -> str | None:
    """make's command-line variable assignment (`CC=touch`, `X:=$(shell CMD)`, `X!=CMD`): it
    overrides what the makefile's recipes run, or runs a command as make reads it."""
    if base not in _MAKES:
        return None
    return next((w for w in _operands(base, words) if "=" in w), None)


def dangerous_argument(argv: Sequence[str]) -> str | None:
    """The first argument of `argv` listed in `DANGEROUS_ARGS` for its command (or the
    operand an `_OUTPUT_OPERAND` command writes to), or None."""
    if not argv:
        return None
    base = _basename(argv[0])
    if base.startswith("python") and list(argv[1:3]) == ["-m", "pytest"]:
        base, argv = "pytest", ["pytest", *argv[3:]]  # (`python -m pytest` is pytest)
    if base in _OUTPUT_OPERAND:
        operands = _operands(base, argv[1:])
        if len(operands) >= _OUTPUT_OPERAND[base]:
            return operands[_OUTPUT_OPERAND[base] - 1]
    assignment = _make_assignment(base, argv[1:])
    if assignment is not None:
        return assignment
    if base == "curl":  # -w's %output{FILE} (curl 8.3) writes; @FILE reads the format from a file
        for k, w in enumerate(argv[1:], 1):
            value = argv[k + 1] if w in ("-w", "--write-out") and k + 1 < len(argv) else w
            if "%output{" in w or (w in ("-w", "--write-out") and value.startswith("@")) \
                    or w.startswith("--write-out=@") or (w.startswith("-w") and w[2:3] == "@"):
                return w
    entries = DANGEROUS_ARGS.get(base)
    if not entries:
        return None
    takes = _ATTACHED_VALUE.get(base, "")
    own = _GLOBAL_ONLY.get(base, ())
    if own:
        from dashfloat.tools.scripts import git_subcommand_at
    sub_at = git_subcommand_at(argv) if own else len(argv)
    if base == "git":
        from dashfloat.tools.repocheck import unknown_git_option

        unknown = unknown_git_option(argv)  # (`--shallow-file log`: log is its value)
        if unknown is not None:
            return unknown
    for k, word in enumerate(argv[1:]):
        if word in _COMPLETE_OPTIONS.get(base, ()):
            continue  # a whole option of its own, not an abbreviation (`git diff --text`)
        # tar's first argument without a dash is a cluster of short options: `tar tIf prog x.tar`
        option = "-" + word if k == 0 and base == "tar" and not word.startswith("-") else word
        if takes and option.startswith("-") and not option.startswith("--"):
            # the rest of the cluster after an option that takes a value is that value
            cut = next((j for j, ch in enumerate(option[1:], 1) if ch in takes), None)
            option = option if cut is None else option[:cut + 1]
        after = argv[sub_at] if k + 1 > sub_at else None
        for entry in entries:
            if (_dangerous_word(entry, option) and not (entry in own and after is not None)
                    and not (after in _HARMLESS_AFTER.get((base, entry), ())
                             and (entry != "-O" or _order_file_here(argv, k + 1)))
                    and not (base in _MAKES and entry in _MAKEFILE_OPTIONS
                             and _makefile_here(argv, k + 1, entry))):
                return word
    return None


# an option of an allow rule that keeps the command harmless, and the words that undo it
# besides its --no- form (`git apply --stat` applies nothing, `--stat --apply` does)
_LONG_FORMS = {("git", "-n"): "--dry-run"}  # (git clean/rm/mv/add/commit/push/prune -n)
_UNDONE_BY = {("git", o): ("--apply",) for o in ("--stat", "--numstat", "--summary", "--check")}
_FALSE = ("false", "0", "no", "off")


def undoes_the_rule(rule: Rule | None, argv: Sequence[str]) -> tuple[str, str] | None:
    """(word, option) when a word of `argv` undoes an option the allow rule names: the
    option's negation (`--no-dry-run`, `--verify` after `--no-verify`, however abbreviated;
    `--dry-run=false`), a word that overrides it (`git apply --stat --apply`), unzip's
    negations (`--l`, `-l-`); else None.
    `git clean -n *` allows a dry run, not `git clean -n --no-dry-run -f`."""
    if rule is None or rule.pattern is None or rule.exact or not argv:
        return None
    base = _basename(argv[0])
    named = [w for w in _command_pattern(rule.pattern, rule.text)[1:] if w is not None and w.startswith("-")]
    for option in named:
        long = option if option.startswith("--") else _LONG_FORMS.get((base, option))
        name = long[2:].split("=", 1)[0] if long else ""
        negation = ("--" + name[3:]) if name.startswith("no-") else ("--no-" + name) if name else ""
        long_given, _, long_value = (long or "").partition("=")
        for w in argv[1:]:
            given, _eq, value = w.partition("=")
            # an abbreviation counts (git and getopt take unique ones): `--no-d`, `--verif`
            if negation and given.startswith("--") and negation.startswith(given) \
                    and len(given) > (5 if negation.startswith("--no-") else 2):
                return w, option
            if long and given == long_given and _eq and (value.lower() in _FALSE or (long_value and value != long_value)):
                return w, option  # `--dry-run=false`; `--dry-run=none` after `--dry-run=client`
            if any(_dangerous_word(u, w) for u in _UNDONE_BY.get((base, option), ())):
                return w, option
            if base == "unzip" and w != "--" and (w.startswith("--") or (len(w) > 2 and w.startswith("-")
                                                                          and w.endswith("-"))):
                return w, option
    return None


# options dangerous only among git's own, before the subcommand (`git -c k=v log`; `git log -c`
# is a combined diff, `git grep -c` counts), and whole options that are not abbreviations
_GLOBAL_ONLY = {"git": ("-c",)}
_COMPLETE_OPTIONS = {"git": ("--text",)}
_MAKEFILE_OPTIONS = ("-f", "--file", "--makefile")


def _makefile_here(argv: Sequence[str], k: int, entry: str) -> bool:
    """Whether make's -f at argv[k] names a makefile of the project (`make -f Makefile.ci`),
    a relative path that stays here; not `-` (stdin: a here-document's recipes), nor one
    outside or under /dev or /proc."""
    word = argv[k]
    if entry == "-f":
        cut = word.find("f")
        value = word[cut + 1:] if word.startswith("-") and not word.startswith("--") and cut < len(word) - 1 \
            else argv[k + 1] if k + 1 < len(argv) else ""
    else:
        value = word.partition("=")[2] if "=" in word else argv[k + 1] if k + 1 < len(argv) else ""
    return bool(value) and not value.startswith(("/", "~", "-")) and ".." not in value.split("/")


def _order_file_here(argv: Sequence[str], k: int) -> bool:
    """Whether the order file of git's `-O` at argv[k] (attached, or the next word) is a
    relative path that stays here: `git diff -O/dev/zero` reads without end, and one
    outside is a file outside read (as diff.orderFile outside asks)."""
    word = argv[k]
    cut = word.find("O")
    value = word[cut + 1:] if 0 <= cut < len(word) - 1 else argv[k + 1] if k + 1 < len(argv) else ""
    return not value.startswith(("/", "~")) and ".." not in value.split("/")


# options harmless after these git subcommands, and only these (`git grep -O` opens the files
# in a pager it names, `git rebase -x` and `git difftool -x` run a command; a user's alias may
# stand for any of them): `-O<orderfile>` orders a diff's files (one here: _order_file_here),
# `git cherry-pick -x` notes the commit picked, `git ls-files -x` excludes a pattern
_HARMLESS_AFTER = {
    ("git", "-O"): ("diff", "log", "show", "format-patch", "diff-tree", "diff-index", "diff-files",
                    "whatchanged", "range-diff"),
    ("git", "-x"): ("cherry-pick", "ls-files"),
}


# -- matching a call -----------------------------------------------------------------

_INVALID = object()


class _Call:
    """One call being judged, with its lazily computed views."""

    def __init__(self, name: str, args: object, root: str | None, aliases: Iterable[str]) -> None:
        self.name = name
        self.args = args if isinstance(args, dict) else {}
        self.root = root
        self.main = _main_value(name, self.args)
        self._aliases = tuple(aliases)
        self._rels: list | None = None
        self._analysis: Analysis | None = None

    @property
    def valid(self) -> bool:
        return isinstance(self.main, str) and "\x00" not in self.main

    @property
    def rels(self) -> list:
        """Normalised relative paths (main, then aliases): str, None (outside) or _INVALID."""
        if self._rels is None:
            rels: list = []
            for p in (self.main, *self._aliases):
                if not isinstance(p, str) or "\x00" in p:
                    rels.append(_INVALID)
                else:
                    rels.append(normalize_path(p, self.root))
            self._rels = rels
        return self._rels

    @property
    def analysis(self) -> Analysis:
        if self._analysis is None:
            self._analysis = analyze_command(self.main)
        return self._analysis


def _main_value(name: str, args: object) -> object:
    if not isinstance(args, dict):
        return None
    key = MAIN_ARG.get(name)
    if key is None:
        return None
    if key not in args and name in ("list_directory", "search_workspace"):
        return "."
    return args.get(key)


def _strict(rule: Rule) -> bool:
    return rule.decision != ALLOW


def _matches(rule: Rule, call: _Call) -> bool:
    if rule.tool != call.name:
        return False
    strict = _strict(rule)
    if call.name == _COMMAND:
        return _command_matches(rule, call, strict)
    rels = call.rels
    if rule.pattern is None:
        return True
    if rule.exact:
        want = normalize_path(rule.pattern, call.root)
        if strict:
            return any(r is _INVALID or r == want for r in rels)
        return want is not None and all(r == want for r in rels)
    exact_rx, folded_rx = _path_pattern(rule.pattern, rule.text)
    if strict:
        for r in rels:
            if r is _INVALID:
                return True
            if r is not None and folded_rx.fullmatch(_fold_name(r)):
                return True
        return False
    return all(isinstance(r, str) and exact_rx.fullmatch(r) for r in rels)


def _command_matches(rule: Rule, call: _Call, strict: bool) -> bool:
    if not call.valid:
        return strict
    if rule.exact:
        return call.main == rule.pattern
    a = call.analysis
    words = None if rule.pattern is None else _command_pattern(rule.pattern, rule.text)
    if not strict:
        if not a.is_simple:
            return False
        return words is None or _argv_match(words, a.simple[0], fold=False)
    if words is None:
        return True
    if any(_argv_match(words, argv, fold=True) for argv in a.candidates):
        return True
    if a.loose_words and words[0] is not None:
        first = words[0].casefold()
        if any(w.casefold() == first for w in a.loose_words):
            return True
    return False


def _matches_part(rule: Rule, call: _Call) -> bool:
    """An allow rule that names one part of a command that is not simple (for messages)."""
    if call.name != _COMMAND or not call.valid or rule.exact:
        return False
    a = call.analysis
    if rule.pattern is None:
        return bool(a.simple) or bool(a.flags - {EMPTY})
    words = _command_pattern(rule.pattern, rule.text)
    return any(_argv_match(words, argv, fold=False) for argv in a.simple)


_RISKY_DYNAMIC = WRAPPERS | _SCRIPT_READERS | _STRING_RUNNERS | {"find", "git", "xargs"}


def _may_match(rule: Rule, a: Analysis) -> bool:
    """Whether a deny/ask command rule might match an opaque command once its dynamic words
    ($VAR, globs, braces, substitutions...) are known. A dynamic word may become any number
    of words. Fail closed: True for anything deeper than single dynamic words, a dynamic
    command word, or a dynamic word given to a wrapper, shell, string runner, find or git."""
    if rule.pattern is None or a.deeply_opaque:
        return True
    pattern = _command_pattern(rule.pattern, rule.text)
    for argv, dyn in zip(a.simple, a.dynamic_words, strict=False):
        if not any(dyn):
            continue  # judged exactly by rule_matches already
        if dyn[0] or _basename(argv[0]).casefold() in _RISKY_DYNAMIC:
            return True
        if _may_match_words(pattern, argv, dyn):
            return True
    return False


def _may_match_words(pattern: tuple[str | None, ...], argv: list[str], dyn: list[bool]) -> bool:
    rest = bool(pattern) and pattern[-1] is None
    pat = pattern[:-1] if rest else pattern
    memo: dict[tuple[int, int], bool] = {}

    def go(i: int, j: int) -> bool:
        key = (i, j)
        if key in memo:
            return memo[key]
        if i == len(pat):
            out = rest or all(dyn[j:])
        elif j == len(argv):
            out = False
        elif dyn[j]:  # zero words, or one or more of the pattern's words
            out = go(i, j + 1) or go(i + 1, j)
        else:
            p, w = pat[i], argv[j]
            if p is None or p == w or (i == 0 and p.casefold() in (w.casefold(),
                                                                   _basename(w).casefold())):
                out = go(i + 1, j + 1)
            else:
                out = False
        memo[key] = out
        return out

    return go(0, 0)


def rule_matches(
    rule: Rule, name: str, args: dict, *, root: str | None = None, aliases: Iterable[str] = ()
) -> bool:
    """Whether `rule` matches the call, with its decision's semantics.

    allow: the whole call must match (a command: one simple command matching the pattern; a
    path: every name, case-sensitively). deny/ask: any part matches (any candidate of the
    command, or the command word anywhere in one that does not parse; any name of the path,
    folded); a call without a valid main argument matches every deny/ask rule (fail closed).
    """
    return _matches(rule, _Call(name, args, root, aliases))


BUILT_IN_DEFAULT = "built-in default"  # who decided when no rule matched
RULE_MATCHES = "an {decision} rule matches"  # the reason when a rule decided
_DEFAULTS: tuple[Rule, ...] = (
    _builtin("read_file", ALLOW),
    _builtin("list_directory", ALLOW),
    _builtin("search_workspace", ALLOW),
    _builtin("write_file", ASK),
    _builtin("edit_file", ASK),
    _builtin("execute_command", ASK),
    *(_builtin(f"{tool}(**/{pattern})", ASK, sticky=True)
      for pattern, _ in alwaysask.patterns() for tool in ("write_file", "edit_file")),
)
# the reason of each protection rule's pattern (alwaysask.TABLE), shown when it asks
_ALWAYS_ASK_REASONS: dict[str, str] = {f"**/{p}": reason for p, reason in alwaysask.patterns()}
_PROTECTED_NAMES = frozenset((".git", ".dashfloat"))


# -- evaluation ------------------------------------------------------------------------


def _rule_who(rule: Rule, layer: str) -> str:
    return f'rule "{rule.text}" in {layer}' if layer else f'rule "{rule.text}"'


def _command_protected(call: _Call) -> str | None:
    """Why this command touches DashFloat's config or .git internals, or None."""
    a = call.analysis
    cwd = call.args.get("cwd")
    pieces = [*a.words, *a.loose_words, *(w for argv in a.candidates for w in argv)]
    if isinstance(cwd, str):
        pieces.append(cwd)
    for piece in dict.fromkeys(pieces):  # each text once: a candidate's words are words too
        for part in re.split(r"[/=:]", _fold_name(_fold_text(piece))):
            if part in _PROTECTED_NAMES:
                return f"it names {part}"
    for argv in a.candidates:
        if _basename(argv[0]).casefold() != "git":
            continue
        rest = argv[1:]
        k = 0
        while k < len(rest) and rest[k].startswith("-"):
            k += 2 if rest[k] in _GIT_VALUED else 1
        if k < len(rest) and rest[k] == "config" and not _git_config_reads(rest[k + 1:]):
            return "it runs git config"
    return None


# git's options before the command that take the next word as their value
_GIT_VALUED = frozenset(("-c", "-C", "--git-dir", "--work-tree", "--namespace", "--config-env",
                         "--super-prefix", "--attr-source"))
# `git config` actions that only read, and its options that take the next word as their value
_GIT_CONFIG_READS = frozenset(("--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l",
                               "--get-color", "--get-colorbool"))
_GIT_CONFIG_VALUED = frozenset(("-f", "--file", "--blob", "-t", "--type", "--default", "--comment",
                                "--value", "--url"))


def _git_config_reads(args: list[str]) -> bool:
    """Whether `git config ARGS` only reads: a read action among the options before the first
    other word (git config takes none after it: `git config core.pager -l` sets core.pager to
    "-l"), or git 2.46's subcommand get or list as that word. --show-origin and --show-scope
    are no action, and a name followed by a value sets it (`git config core.hooksPath list`)."""
    k = 0
    while k < len(args) and args[k].startswith("-") and args[k] != "--":
        if args[k] in _GIT_CONFIG_READS:
            return True
        k += 2 if args[k] in _GIT_CONFIG_VALUED else 1
    return k < len(args) and args[k] in ("get", "list")


def evaluate(
    layers: Sequence[tuple[str, Sequence[Rule]]],
    name: str,
    args: dict,
    *,
    root: str | None,
    mode: str = MODE_ASK,
    aliases: Iterable[str] = (),
) -> Decision:
    """The permission decision for one call (module docstring, "Evaluation").

    `layers`: the explicit layers, lowest first, e.g. ``[("user config /h/u/.config/...",
    rules), ("project config ...", rules), ("command line", rules), ("session", rules)]``; the
    built-in layer is always added below them. `aliases`: other names of the same file (e.g.
    the symlink-resolved path relative to the resolved root): deny/ask rules and the protection
    match if any name matches, allow rules and accept-edits need all of them.
    """
    if mode not in MODES:
        raise ValueError(f"unknown permission mode {mode!r} (expected one of {', '.join(MODES)})")
    if name not in MAIN_ARG:
        return Decision(DENY, "unknown tool", f"{name!r} is not one of the tools")
    call = _Call(name, args, root, aliases)
    mutating = name in MUTATING

    best: tuple[str, Rule, str] | None = None
    partial: tuple[Rule, str] | None = None
    strict_command_rules: list[Rule] = []  # explicit deny/ask rules for execute_command
    for layer_name, rules in layers:
        for rule in rules:
            if rule.tool != name:
                continue
            if name == _COMMAND and rule.decision != ALLOW:
                strict_command_rules.append(rule)
            if _matches(rule, call):
                if best is None or STRICTNESS[rule.decision] > STRICTNESS[best[0]]:
                    best = (rule.decision, rule, layer_name)
            elif rule.decision == ALLOW and partial is None and _matches_part(rule, call):
                partial = (rule, layer_name)

    if best is not None and best[0] == DENY:
        return Decision(DENY, _rule_who(best[1], best[2]), "a deny rule matches", best[1])
    if mode == MODE_READ_ONLY and mutating:
        return Decision(DENY, f"mode {MODE_READ_ONLY}", f"{name} is denied in read-only mode")

    protection: Decision | None = None
    for rule in _DEFAULTS:
        if rule.sticky and rule.tool == name and _matches(rule, call):
            why = _ALWAYS_ASK_REASONS[rule.pattern]
            protection = Decision(
                ASK, f'built-in protection "{rule.text}"',
                f"{why} (writes here always ask)", rule, always_asks=why,
            )
            break
    if protection is None and name == _COMMAND and call.valid:
        why = _command_protected(call)
        if why:
            why = f"the command may change .git internals or DashFloat's config: {why}"
            protection = Decision(ASK, "built-in protection (.git / .dashfloat)", why,
                                  always_asks=why)

    if best is not None:
        decision = Decision(best[0], _rule_who(best[1], best[2]),
                            RULE_MATCHES.format(decision=best[0]), best[1])
        from_rule = True
    else:
        from_rule = False
        default = next(r for r in _DEFAULTS if r.tool == name and r.pattern is None)
        decision = Decision(default.decision, BUILT_IN_DEFAULT,
                            f"{name} {'is allowed' if default.decision == ALLOW else 'asks'} "
                            "by default", default)
        if decision.decision != ALLOW:
            inside = all(isinstance(r, str) for r in call.rels) if name in _EDIT_TOOLS else False
            if mode == MODE_ACCEPT_EDITS and name in _EDIT_TOOLS and inside:
                decision = Decision(ALLOW, f"mode {MODE_ACCEPT_EDITS}",
                                    "edits inside the working directory are allowed")
            elif mode == MODE_UNRESTRICTED:
                decision = Decision(ALLOW, f"mode {MODE_UNRESTRICTED}", "everything is allowed "
                                    "except deny rules")

    if name == _COMMAND and call.valid:
        a = call.analysis
        exact = decision.rule is not None and decision.rule.exact
        if decision.decision == ALLOW and not exact:
            bad = script = undone = None
            if from_rule and mode != MODE_UNRESTRICTED and a.simple:
                bad = dangerous_argument(a.simple[0])
                if bad is None:
                    script = dangerous_script(a.simple[0])
                if bad is None and script is None:
                    undone = undoes_the_rule(decision.rule, a.simple[0])
            if undone is not None:
                decision = Decision(
                    ASK, f'"{undone[0]}" undoes "{undone[1]}"',
                    f"{decision.who} would allow it, but {undone[0]} undoes its {undone[1]}",
                    decision.rule,
                )
            elif bad is not None:
                decision = Decision(
                    ASK, f'dangerous argument "{bad}" ({_basename(a.simple[0][0])})',
                    f"{decision.who} would allow it, but {bad} can run programs or write files",
                    decision.rule,
                )
            elif script is not None:
                program = _basename(a.simple[0][0])
                decision = Decision(
                    ASK, f"{program} script: {script}",
                    f"{decision.who} would allow it, but its {program} script {script}",
                    decision.rule,
                )
            elif a.opaque:
                maybe = next((r for r in strict_command_rules if _may_match(r, a)), None)
                if maybe is not None:
                    decision = Decision(
                        ASK, f"command shape: {a.shape or 'opaque'}",
                        f'the command cannot be fully analysed and rule "{maybe.text}" might '
                        "match it",
                        maybe,
                    )
        elif decision.decision == ASK and not from_rule and partial is not None:
            decision = Decision(
                ASK, f"command shape: {a.shape or 'not one simple command'}",
                f"{_rule_who(*partial)} names only part of the command; a command must be one "
                "simple command to be allowed",
                partial[0],
            )

    if protection is not None and (decision.decision == ALLOW or not from_rule):
        return protection  # (an explicit ask rule keeps its own name, and gets the reason)
    if protection is not None and decision.decision == ASK:
        return replace(decision, always_asks=protection.always_asks)
    return decision


# -- examples, calls, hashes ---------------------------------------------------------


def check_examples(rule: Rule) -> list[str]:
    """Error messages for the rule's `match` / `not_match` examples that fail (empty: fine).

    Each example is a main argument (a command, or a path relative to the root) and is judged
    with the rule's own decision semantics (an allow rule needs the whole command).
    """
    errors: list[str] = []
    key = MAIN_ARG[rule.tool]
    where = f'rule "{rule.text}"' + (f" in {rule.layer}" if rule.layer else "")
    for example in rule.examples_match:
        if not rule_matches(rule, rule.tool, {key: example}):
            errors.append(f"{where}: example {example!r} should match but does not")
    for example in rule.examples_not_match:
        if rule_matches(rule, rule.tool, {key: example}):
            errors.append(f"{where}: example {example!r} should not match but does")
    return errors


def format_call(name: str, args: dict) -> str:
    """``Tool(main argument)``, as `policy check` takes it and `/permissions` shows it (raw:
    make it terminal-safe before display)."""
    main = _main_value(name, args)
    if main is None:
        return f"{name}()"
    if not isinstance(main, str):
        main = json.dumps(main, ensure_ascii=False, default=repr)
    return f"{name}({main})"


def parse_call(text: str) -> tuple[str, dict]:
    """``Tool(argument)`` back into ``(name, args)``; the argument is everything between the
    first ``(`` and the last ``)``, kept exactly. RuleError if it is not of that form."""
    if not isinstance(text, str):
        raise RuleError("a call must be a string")
    if "\x00" in text:
        raise RuleError("the call contains a NUL character")
    body = text.strip(" \t\n")
    open_at = body.find("(")
    close_at = body.rfind(")")
    if open_at < 0 or close_at < open_at:
        raise RuleError(f"expected Tool(argument), e.g. 'execute_command(git status)'; got {body!r}")
    if body[close_at + 1:].strip():
        raise RuleError(f"unexpected text after the closing ')': {body[close_at + 1:]!r}")
    name = body[:open_at].strip()
    if name not in MAIN_ARG:
        raise _unknown_tool(name, body)
    return name, {MAIN_ARG[name]: body[open_at + 1:close_at]}


def args_hash(name: str, args: object) -> str:
    """sha256 hex of the canonical JSON (sorted keys, no blanks) of ``{"name", "args"}``."""
    blob = json.dumps({"name": name, "args": args}, sort_keys=True, ensure_ascii=False,
                      separators=(",", ":"), default=repr)
    return sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()
