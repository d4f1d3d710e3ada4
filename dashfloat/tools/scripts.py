"""Programs whose script argument can run commands or write files: sed and awk; and git
and env, whose arguments can carry a command that the rules do not read as one; gdb and
bash's fc, which run commands whatever their arguments (an allow rule for them asks).
For deny rules, `sed_commands` gives the commands a sed script's `e CMD` runs, and
`awk_commands` those of awk's `system("CMD")` and pipes.

An allow rule such as `execute_command(sed -n *)` or `execute_command(awk *)` reads like
"filter text", but sed's `e` command, the `e` and `w` flags of `s`, and its `w`/`W`
commands run programs or write files, and awk's `system()`, pipes, `getline` from a
command and `>` redirections do the same (a `>` that awk's grammar reads as a comparison
does not count: `_awk_tokens`). These checks read the script (pure functions,
no shell) and name what makes it more than a filter; `rules.dangerous_argument` then
turns such a call from allow into ask. They fail closed: a script read from a file
(`-f`), or one they cannot parse, counts as dangerous too. sed is read as GNU sed 4.9 reads
it: a label (`:x`, `bx`, `tx`, `Tx`) ends at a blank, `;`, newline, `}` or `#`, and another
command may follow it on the same line (`:x e cmd`). gawk's long options are read with their
abbreviations (`--inc=f` is --include; an ambiguous one counts as the riskiest), and its
indirect call `@f(...)` (a function named at run time: system) counts as running a command.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from dashfloat.tools.repocheck import git_command_at
from dashfloat.tools.rules import AWKS, WRAPPERS, _basename, dangerous_argument

_SED_SCRIPT_FILE = ("-f", "--file")
_SED_PLAIN = set("=dDFgGhHnNpPxz")  # commands that take no argument and run nothing
_SED_NUMBER = set("lLqQ")  # commands that take an optional number (`l 5`, `q5`)
_SED_LABEL = set("btT:v")  # commands followed by a label (`:x e cmd` is `:x`, then `e cmd`;
# `v 4.2` reads its version as a label)
_SED_LABEL_END = set(" \t\n;}#")  # what ends a label in GNU sed (`\v`, `\r`... do not)
_SED_TEXT = set("aic")  # commands followed by text to the end of the line
_SED_FILE_READ = set("rR")  # read a file into the output (as cat would): allowed
_SED_RUNS = {"e": "runs a command", "w": "writes a file", "W": "writes a file"}


def _long(word: str, name: str) -> bool:
    """`word` (`--name` or `--name=value`) names the long option `name` or an abbreviation
    of it, as getopt accepts (`--expr=` is `--expression=`)."""
    given = word.split("=", 1)[0]
    return len(given) > 2 and name.startswith(given)


def sed_danger(argv: Sequence[str]) -> str | None:
    """What makes this sed more than a filter ("runs a command: e", ...), or None. GNU sed
    reads options anywhere before `--` (`sed -n 1p f -e '1e cmd'`): the first operand is the
    script only when no -e/-f gave one."""
    scripts = _sed_scripts(argv)
    if isinstance(scripts, str):
        return scripts
    for script in scripts:
        for what, _command in _sed_findings(script):
            return what
    return None


def sed_commands(argv: Sequence[str]) -> list[str] | None:
    """The command strings this sed runs with the shell (`e CMD`), for deny rules; None when
    what it runs is not in the line: an `e` without a command or the `e` flag of `s` (they
    run the pattern space), a script it cannot read. (A script file is not read, as the
    rules read no script file.)"""
    scripts = _sed_scripts(argv)
    if isinstance(scripts, str):
        return []
    commands: list[str] = []
    for script in scripts:
        for what, command in _sed_findings(script):
            if what.startswith("runs") or what.startswith("a script it cannot read"):
                if not command:
                    return None
                commands.append(command)
    return commands


def _sed_scripts(argv: Sequence[str]) -> list[str] | str:
    """The scripts of a sed command line, or why they are not known (a message)."""
    scripts: list[str] = []
    operands: list[str] = []
    args = list(argv[1:])
    i = 0
    while i < len(args):
        word = args[i]
        nxt = args[i + 1] if i + 1 < len(args) else None
        if word == "--":
            operands += args[i + 1:]
            break
        if word.startswith("--"):
            value = word.split("=", 1)[1] if "=" in word else None
            if _long(word, "--expression"):
                if value is None and nxt is None:
                    return "a -e without its script"
                scripts.append(value if value is not None else nxt)
                i += value is None
            elif _long(word, "--file"):
                return f"its script is read from a file ({word})"
            elif _long(word, "--line-length") and value is None:
                i += 1  # its value
        elif word.startswith("-") and word != "-":
            for k, ch in enumerate(word[1:], 1):
                rest = word[k + 1:]
                if ch == "f":
                    return f"its script is read from a file ({word})"
                if ch == "e":
                    if not rest and nxt is None:
                        return "a -e without its script"
                    scripts.append(rest or nxt)
                    i += not rest
                    break
                if ch in "li":  # -l N, -i[SUFFIX]: the rest of the word is the value
                    i += ch == "l" and not rest
                    break
        else:
            operands.append(word)
        i += 1
    if not scripts and operands:
        scripts.append(operands[0])  # the first operand is the script when no -e gave one
    # sed reads its -e scripts as one program, a line each: a/i/c/e text that a backslash
    # continues at the end of one goes on in the next
    return ["\n".join(scripts)] if scripts else []


_UNREADABLE = "a script it cannot read (it may run commands)"


def _sed_findings(script: str) -> list[tuple[str, str]]:
    """Walk a sed script command by command: (what, command) for each command that runs or
    writes, in order; `command` is the text of an `e CMD` ("" when not known: `e` alone,
    the `e` flag of `s`). An unreadable rest ends the list with `_UNREADABLE`."""
    out: list[tuple[str, str]] = []
    s, n, i = script, len(script), 0
    while i < n:
        c = s[i]
        if c in " \t\n\v\f\r;{}!":  # (sed skips any blank before a command)
            i += 1
            continue
        if c == "#":
            i = _to_line_end(s, i)
            continue
        i = _skip_address(s, i)
        if i is None:
            return out + [(_UNREADABLE, "")]
        while i < n and s[i] in " \t!":
            i += 1
        if i >= n:
            return out
        c = s[i]
        if c == "{":  # `1{...}`: a block
            i += 1
        elif c in "s":
            end = _skip_delimited(s, i + 1, parts=2, regex=True)
            if end is None:
                return out + [(_UNREADABLE, "")]
            j = end
            while j < n and s[j] not in ";\n}#":  # its flags: `#` starts a comment
                if s[j] == "e":
                    out.append(("runs a command: the e flag of s", ""))
                elif s[j] in "wW":
                    out.append(("writes a file: the w flag of s", ""))
                    k = s.find("\n", j)  # the file name: to the end of the line
                    j = n if k < 0 else k
                    break
                j += 1
            i = j
        elif c == "y":
            end = _skip_delimited(s, i + 1, parts=2)
            if end is None:
                return out + [(_UNREADABLE, "")]
            i = end
        elif c == "e":  # `e CMD` runs CMD, read as a/i/c read their text (GNU sed: `e\` and a
            j = i + 1  # newline first, if at all; a line ending in an odd run of backslashes
            while j < n and s[j] in " \t":  # goes on)
                j += 1
            if s.startswith("\\\n", j):
                j += 2
            i = _to_text_end(s, j)
            command = s[j:i].rstrip("\n")
            # sed takes backslashes out of the text ("r\m" runs rm): one there, the command is
            # not known as written (deny rules cannot read it: it asks)
            out.append((f"{_SED_RUNS[c]}: the {c} command", "" if "\\" in command else command))
        elif c in _SED_RUNS:
            out.append((f"{_SED_RUNS[c]}: the {c} command", ""))
            i = _to_line_end(s, i)
        elif c in _SED_TEXT:
            i = _to_text_end(s, i)
        elif c in _SED_FILE_READ:
            i = _to_line_end(s, i)
        elif c in _SED_LABEL:  # GNU sed 4.9: blanks, then the label up to a blank, `;`,
            i += 1  # newline, `}` or `#`; the next command may follow on the same line
            while i < n and s[i] in " \t":
                i += 1
            while i < n and s[i] not in _SED_LABEL_END:
                i += 1
        elif c in _SED_PLAIN:
            i += 1
        elif c in _SED_NUMBER:  # GNU sed: blanks, then the number's digits, if any
            i += 1
            while i < n and s[i] in " \t":
                i += 1
            while i < n and s[i].isdigit():
                i += 1
        else:
            return out + [(f"a script it cannot read (command {c!r}; it may run commands)", "")]
    return out


def _to_line_end(s: str, i: int) -> int:
    j = s.find("\n", i)
    return len(s) if j < 0 else j + 1


def _to_text_end(s: str, i: int) -> int:
    """Past the text of `a`, `i` or `c` at s[i]: GNU sed goes on to the next line after a line
    that ends in an odd run of backslashes (`a foo\\` then a newline), so a command on the next
    line is text, and the line after text ending in `\\\\` is a command."""
    while True:
        j = s.find("\n", i)
        if j < 0:
            return len(s)
        k = j
        while k > i and s[k - 1] == "\\":
            k -= 1
        if (j - k) % 2 == 0:
            return j + 1
        i = j + 1


def _skip_address(s: str, i: int) -> int | None:
    """Past the addresses at s[i] (none, one, or two with `,`), as GNU sed's compile_address
    reads them: `/re/` or `\\cREc` and its I/M flags, `N`, `first~step`, `+N`, `~N`, `$`, with
    blanks around `,`, `~` and the flags; None if a regex does not end (or `,` has no
    second address: sed refuses it)."""
    n = len(s)

    def blanks(k: int) -> int:
        while k < n and s[k] in " \t":
            k += 1
        return k

    def digits(k: int) -> int:
        while k < n and s[k].isdigit():
            k += 1
        return k

    def one(k: int) -> int | None:
        """Past one address at s[k] (k itself when there is none); None: unterminated."""
        if k < n and s[k] in "/\\":
            if s[k] == "\\":
                k += 1
            end = _skip_delimited(s, k, parts=1, regex=True)
            if end is None:
                return None
            k = end
            while blanks(k) < n and s[blanks(k)] in "IM":
                k = blanks(k) + 1
            return k
        if k < n and s[k].isdigit():
            k = digits(k)
            return digits(blanks(blanks(k) + 1)) if blanks(k) < n and s[blanks(k)] == "~" else k
        if k < n and s[k] in "+~":
            return digits(blanks(k + 1))
        return k + 1 if k < n and s[k] == "$" else k

    end = one(i)
    if end is None or end == i:
        return end
    j = blanks(end)
    if j < n and s[j] == ",":
        second = one(blanks(j + 1))
        if second is None or second == blanks(j + 1):
            return None
        return second
    return end


def _skip_delimited(s: str, i: int, *, parts: int, regex: bool = False) -> int | None:
    """s[i] is a delimiter: past `parts` delimited texts (backslash escapes honoured, unless
    the delimiter is the backslash itself; in a regex, the first text, a bracket expression
    is read whole: `[/]` holds no delimiter); None at a newline no backslash escapes (GNU sed:
    an unterminated command)."""
    if i >= len(s):
        return None
    delim = s[i]
    if delim == "\n":
        return None
    i += 1
    for part in range(parts):
        while i < len(s) and s[i] != delim and s[i] != "\n":
            if s[i] == "\\":
                i += 2
            elif s[i] == "[" and regex and part == 0:
                end = _skip_bracket(s, i + 1)
                if end is None:
                    return None
                i = end
            else:
                i += 1
        if i >= len(s) or s[i] != delim:
            return None
        i += 1
    return i


def _skip_bracket(s: str, i: int) -> int | None:
    """Past the bracket expression whose `[` is before s[i], as GNU sed's snarf_char_class
    reads it: a `^`, then a `]` that is literal; `[:class:]`, `[.x.]`, `[=x=]` inside; the
    delimiter and the backslash are plain characters; None at a newline or the end."""
    n = len(s)
    if i < n and s[i] == "^":
        i += 1
    if i < n and s[i] == "]":
        i += 1
    state, closer = 0, ""  # 1: after "[", 2: inside "[:" (closer ":"), 3: after its closer
    while i < n:
        c = s[i]
        i += 1
        if c == "\n":
            return None
        if c in ".:=" and state == 1:
            state, closer = 2, c
            continue
        if c in ".:=" and state == 2 and c == closer:
            state = 3
            continue
        if c == "[":
            state = 1 if state == 0 else state
            continue
        if c == "]":
            if state in (0, 1):
                return i
            if state == 3:
                state = 0
        state &= ~1
    return None


# gawk's -D/--debug reads debugger commands (`eval`: any statement) from stdin or its file
_AWK_SCRIPT_FILE = ("-f", "--file", "-E", "--exec", "-i", "--include", "-l", "--load", "-D", "--debug")
_AWK_WRITES = ("--pretty-print", "--profile", "--dump-variables")  # gawk: to a file
_AWK_FLAGS = "bcCghIMNnOPrSstVY"  # gawk's short options that take no value (getopt's "...YZ:")
_AWK_RUNS = (("system", "runs a command: system()"), ("getline", "reads a command's output or a file: getline"),
             ("|", "runs a command: a pipe"), (">", "may write a file: a > redirection"))
_AWK_PIPE, _AWK_WRITE = _AWK_RUNS[2][1], _AWK_RUNS[3][1]
_AWK_AT = "gawk's @ (an indirect call, @load, @include, @namespace) may run or read what it names"
# after these words a "/" is a regex (an operand comes next); after length and getline, which
# are operands on their own, it may be either: such a script is read as text
# (gawk's BEGINFILE, ENDFILE, func, switch, case and default are names in mawk, busybox awk
# and gawk --posix: either)
_AWK_KEYWORDS = frozenset(("BEGIN", "END", "function", "if", "else", "while", "for", "do", "break",
                           "continue", "next", "nextfile", "exit", "return", "delete", "print",
                           "printf", "in"))
_AWK_EITHER = frozenset(("length", "getline", "BEGINFILE", "ENDFILE", "func", "switch", "case", "default"))
_AWK_HEADERS = ("if", "while", "for")  # after the ")" of their "(...)" a statement starts: a regex
_AWK_OPERATORS = frozenset("(){}[];,+-*/%^!~<=?:$&|>@")  # any other character: the awks differ
_AWK_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_AWK_NUMBER = re.compile(r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")


class _AwkUnsure(Exception):
    """The script's tokens cannot be told apart for sure (a regex or a division, a "/" in a
    bracket expression that the awks end differently, an unterminated string...)."""


def _awk_regex_end(script: str, i: int) -> int:
    """The index after the regex literal that starts at the "/" at i. A "/" inside a bracket
    expression ends the regex for one awk and not for another: unsure."""
    n = len(script)
    j = i + 1
    while j < n:
        c = script[j]
        if c == "\\":
            j += 2
        elif c == "\n":
            break
        elif c == "/":
            return j + 1
        elif c == "[":
            j += 1
            if j < n and script[j] == "^":
                j += 1
            if j < n and script[j] == "]":  # a "]" first is literal
                j += 1
            while j < n and script[j] != "]":
                # gawk and mawk read "\]" as an escaped "]", busybox does not; gawk counts a
                # "[" inside: the awks end such a bracket, and the regex, at different places
                if script[j] in "/\n\\":
                    raise _AwkUnsure
                if script[j] == "[":
                    if j + 1 >= n or script[j + 1] not in ":.=":
                        raise _AwkUnsure
                    close = script.find(script[j + 1] + "]", j + 2)  # [:alpha:], [.x.], [=e=]
                    if close < 0 or any(ch in script[j + 2:close] for ch in "/\n\\["):
                        raise _AwkUnsure
                    j = close + 2
                    continue
                j += 1
            j += 1
        else:
            j += 1
    raise _AwkUnsure


def _awk_string_end(script: str, i: int) -> int:
    n = len(script)
    j = i + 1
    while j < n:
        c = script[j]
        if c == "\\":
            j += 2
        elif c == "\n":
            break
        elif c == '"':
            return j + 1
        else:
            j += 1
    raise _AwkUnsure


def _awk_tokens(script: str) -> Iterator[tuple[str, str, bool]]:
    """awk's tokens of `script`, as (kind, text, at_print): kind "string" (text: its body,
    escapes kept), "regex", "name", "number", "op" (`>`, `>>`, `>=`, `|`, `|&`, `||`, `(`,
    `@`...) or "newline"; at_print: the token is in a print or printf statement outside
    parentheses (where a ">" is a redirection: `print $1 > "f"`; elsewhere a comparison).
    Comments and blanks are skipped. Raises _AwkUnsure where mawk, gawk (--posix too) and
    busybox awk may read the tokens differently: a "/" that may divide or start a regex
    (after length, getline, x++, gawk-only keywords, the ")" of an if/while/for header; a
    "/=" after a value), a bracket in a regex that they end at different places, a character
    that is not awk's (a form feed: a blank for mawk), an unterminated string."""
    i, n = 0, len(script)
    # what came last: "operand" (a name or "]": a "/" divides, "/=" is division-assign),
    # "value" (a string, number, regex or ")": a "/" divides, but gawk reads "/=" as a
    # regex), "op" (a "/" starts a regex), "print" (the same, and a newline ends the
    # statement), "either" (unsure)
    prev = "op"
    depth = 0
    print_depth = None  # the parenthesis depth of the print/printf statement being read
    headers: list[bool] = []  # for each open "(": whether it opened an if/while/for header
    word_before = None
    while i < n:
        c = script[i]
        at_print = depth == print_depth
        word, word_before = word_before, None
        if c in " \t" or script.startswith("\r\n", i):
            i += 1
            word_before = word
        elif c == "\\":
            if script.startswith("\\\n", i) or script.startswith("\\\r\n", i):
                i += 2 if script[i + 1] == "\n" else 3
                word_before = word
            else:
                raise _AwkUnsure
        elif c == "\n":  # ends a statement after an operand; after "," "&&" "{"... it continues
            if prev != "op":
                if at_print:
                    print_depth = None
                prev = "op"
            yield "newline", c, at_print
            i += 1
        elif c == "#":
            end = script.find("\n", i)
            i = n if end < 0 else end
        elif c == '"':
            end = _awk_string_end(script, i)
            yield "string", script[i + 1:end - 1], at_print
            i, prev = end, "value"
        elif c == "/":
            if prev == "either" or (prev == "value" and script.startswith("/=", i)):
                raise _AwkUnsure
            if prev in ("operand", "value"):
                yield "op", c, at_print
                i, prev = i + 1, "op"
            else:
                end = _awk_regex_end(script, i)
                yield "regex", script[i + 1:end - 1], at_print
                i, prev = end, "value"
        elif _AWK_NAME.match(script, i):
            name = _AWK_NAME.match(script, i).group()
            yield "name", name, at_print
            i += len(name)
            word_before = name
            if name in ("print", "printf") and print_depth is None:
                print_depth = depth
            prev = ("print" if name in ("print", "printf") else "op" if name in _AWK_KEYWORDS
                    else "either" if name in _AWK_EITHER else "operand")
        elif _AWK_NUMBER.match(script, i):
            end = _AWK_NUMBER.match(script, i).end()
            yield "number", script[i:end], at_print
            i, prev = end, "value"
        elif c not in _AWK_OPERATORS:
            raise _AwkUnsure
        else:
            op = next((o for o in (">>", ">=", "||", "|&", "++", "--") if script.startswith(o, i)), c)
            yield "op", op, at_print
            i += len(op)
            if op in ("++", "--"):  # x++ / 2 or ++x: either
                prev = "either"
                continue
            header = False
            if op == "(":
                depth += 1
                headers.append(word in _AWK_HEADERS)
            elif op == ")":
                depth -= 1
                if depth < 0:
                    raise _AwkUnsure
                header = headers.pop()
            if op in (";", "{", "}") and at_print:
                print_depth = None
            prev = "either" if header else "value" if op == ")" else "operand" if op == "]" else "op"
    if depth:
        raise _AwkUnsure


def _awk_output(tokens: list[tuple[str, str, bool]]) -> str | None:
    """What in awk's tokens makes the script more than a filter: a ">" of a print or printf
    statement outside parentheses and ">>" (but to /dev/stdout or /dev/stderr), a "|" or
    "|&" anywhere ("||" is "or"), gawk's "@" (but a regex @/.../)."""
    for k, (kind, text, at_print) in enumerate(tokens):
        if kind != "op":
            continue
        if text == ">>" or (text == ">" and at_print):
            target = [(t[0], t[1]) for t in tokens[k + 1:k + 3]]
            if target[:1] in ([("string", "/dev/stdout")], [("string", "/dev/stderr")]) and target[1:] in (
                    [], [("newline", "\n")], [("op", ";")], [("op", "}")]):
                continue  # the command's own output
            return _AWK_WRITE
        if text in ("|", "|&"):
            return _AWK_PIPE
        if text == "@":
            after = [(t[0], t[1]) for t in tokens[k + 1:k + 3]]
            if after[:1] and after[0][0] == "regex":
                continue  # gawk's typed regex @/.../
            if after[:1] == [("name", "load")]:
                return "loads an extension: @load"
            if after[:1] == [("name", "include")]:
                return "reads another script: @include"
            if after[:1] and after[0][0] == "name" and after[1:] == [("op", "(")]:
                return "runs a function named at run time: @f() (system?)"
            return _AWK_AT
    return None


_AWK_ARITHMETIC = frozenset(("op", c) for c in "+-*/%^")


def _awk_ends_operand(token: tuple[str, str]) -> bool:
    """Whether a token ends an operand (what follows it is glued to it: a concatenation)."""
    kind, text = token
    return kind in ("string", "regex", "name", "number") or text in (")", "]", "$", "++", "--")


def awk_commands(argv: Sequence[str]) -> list[str] | None:
    """For deny rules: the command strings this awk runs with the shell, `system("CMD")`,
    `print | "CMD"` and `"CMD" | getline`; None when one is not a single string literal
    without escapes (built at run time), gawk calls a function by name (`@f()`), the
    script cannot be read as tokens, or the options keep it from being known (a script
    file, which the rules do not read; `-i inplace`, `-W`, an unknown option)."""
    scripts = _awk_scripts(argv)
    if isinstance(scripts, str):  # a script file, or options that keep the scripts from being
        return None  # known (`gawk -i inplace PROG`, `-W ...`): what runs is not in the line
    commands: list[str] = []
    for script in scripts:
        try:
            tokens = [(kind, text) for kind, text, _ in _awk_tokens(script)]
        except _AwkUnsure:
            return None if ("system" in script or "|" in script or "@" in script) else []
        ats = [k for k, t in enumerate(tokens) if t == ("op", "@")]
        if any(k + 1 == len(tokens) or tokens[k + 1][0] != "regex" for k in ats):
            return None  # gawk's @f(): a function named at run time (a regex @/.../ is none)
        for k, (kind, text) in enumerate(tokens):
            if kind == "name" and text == "system":  # system("CMD")
                call = tokens[k + 1:k + 4]
                if len(call) < 3 or call[0] != ("op", "(") or call[1][0] != "string" or call[2] != ("op", ")"):
                    return None
                command = call[1][1]
            elif kind == "op" and text in ("|", "|&"):
                if tokens[k + 1:k + 2] == [("name", "getline")]:  # "CMD" | getline: nothing glued before
                    # nor an arithmetic operator: `10 / "5x" | getline` runs "2" (mawk)
                    if k < 1 or tokens[k - 1][0] != "string" or (k > 1 and (
                            _awk_ends_operand(tokens[k - 2]) or tokens[k - 2] in _AWK_ARITHMETIC)):
                        return None
                    command = tokens[k - 1][1]
                else:  # print ... | "CMD", then the statement ends
                    if tokens[k + 1:k + 2][:1] == [] or tokens[k + 1][0] != "string" or tokens[k + 2:k + 3] not in (
                            [], [("newline", "\n")], [("op", ";")], [("op", "}")], [("op", ")")]):
                        return None
                    command = tokens[k + 1][1]
            else:
                continue
            if "\\" in command:  # an escape: decoded by awk, not here
                return None
            commands.append(command)
    return commands


# gawk's long options (5.3); getopt_long takes a unique abbreviation (`--inc=f` is --include)
_GAWK_LONGS = ("--assign", "--bignum", "--characters-as-bytes", "--copyright", "--csv", "--debug",
               "--dump-variables", "--exec", "--field-separator", "--file", "--gen-pot", "--help",
               "--include", "--lint", "--lint-old", "--load", "--no-optimize", "--non-decimal-data",
               "--optimize", "--persist", "--posix", "--pretty-print", "--profile", "--re-interval",
               "--sandbox", "--source", "--traditional", "--use-lc-numeric", "--version")


def _awk_long(word: str) -> str | None:
    """The long option `word` (`--name`, `--name=value`) names: itself, the one it abbreviates
    uniquely; when it abbreviates several, the first one that reads a file, writes one or
    gives the script (fail closed: gawk refuses an ambiguous one); None if none."""
    name = word.split("=", 1)[0]
    if name in _GAWK_LONGS:
        return name
    matches = [long for long in _GAWK_LONGS if long.startswith(name)]
    if len(matches) == 1:
        return matches[0]
    risky = [long for long in matches if long in _AWK_SCRIPT_FILE + _AWK_WRITES + ("--source",)]
    return risky[0] if risky else None


def awk_danger(argv: Sequence[str]) -> str | None:
    """What makes this awk more than a filter, or None. A `>` asks where awk's grammar makes
    it a redirection (_awk_output; where the tokens are ambiguous, anywhere). Every script
    is read: gawk's -e/--source ones, else the first operand."""
    scripts = _awk_scripts(argv)
    if isinstance(scripts, str):
        return scripts
    for script in scripts:
        for needle, what in _AWK_RUNS[:2]:  # system, getline: as text (in a string too)
            if needle in script:
                return what
        try:
            found = _awk_output(list(_awk_tokens(script)))
        except _AwkUnsure:  # read as text: any "|", ">" or "@" (but gawk's regex @/.../) asks
            found = next((w for x, w in _AWK_RUNS[2:4] if x in script), None)
            if found is None and re.search(r"@(?!/)", script):
                found = _AWK_AT
        if found:
            return found
    return None


def _awk_scripts(argv: Sequence[str]) -> list[str] | str:
    """The scripts of an awk command line (gawk's -e/--source ones, else the first operand),
    or what makes them unknown or the awk more than a filter by its options (a message)."""
    args = list(argv[1:])
    scripts: list[str] = []
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--":
            i += 1
            break
        long = _awk_long(word) if word.startswith("--") and word != "--" else None
        if word in _AWK_SCRIPT_FILE or long in _AWK_SCRIPT_FILE:
            return f"its script is read from a file or an extension ({word})"
        if word.startswith("-W"):  # mawk -W exec FILE, -W interactive...: options of its own
            return f"an implementation option ({word}) may read the script from a file"
        if word in ("-v", "-F") or (long in ("--assign", "--field-separator") and "=" not in word):
            i += 2
            continue
        if word.startswith("--"):
            if long in _AWK_WRITES:
                return f"writes a file ({word})"
            if long == "--source":  # --source=TEXT, --source TEXT
                scripts.append(word.split("=", 1)[1] if "=" in word else args[i + 1] if i + 1 < len(args) else "")
                i += 1 if "=" in word else 2
                continue
            i += 1
            continue
        if word.startswith("-") and word != "-":
            i += 1
            for k, ch in enumerate(word[1:], 2):  # a cluster; a value ends it
                if ch in "fEilLD":
                    return f"its script is read from a file or an extension ({word})"
                if ch in "opd":  # gawk -o/-p/-d[FILE]: pretty print, profile, dump
                    return f"writes a file ({word})"
                if ch == "e":  # gawk -e TEXT, -eTEXT
                    scripts.append(word[k:] or (args[i] if i < len(args) else ""))
                    i += not word[k:]
                    break
                if ch in "vFZ":  # -vNAME=VALUE, -F: (attached), or the next word (`-bv x=1`)
                    i += not word[k:]
                    break
                if ch == "W":  # mawk's and gawk's -W OPTION, anywhere in a cluster
                    return f"an implementation option ({word}) may read the script from a file"
                if ch not in _AWK_FLAGS:  # a letter not known here may take the next word
                    return f"an option DashFloat does not know ({word}) may take the script's place"
            continue
        break
    if not scripts and i < len(args):
        scripts.append(args[i])
    return scripts


# (git command, its word or option that makes it run a command given to it). An allow rule
# such as `execute_command(git *)` reads like "use git"; these run any program.
GIT_FILTERS = ("--setup", "--env-filter", "--tree-filter", "--index-filter", "--parent-filter",
               "--msg-filter", "--commit-filter", "--tag-name-filter")  # filter-branch: shell code each
_GIT_RUNS = {
    "bisect": ("run",),  # git bisect run CMD...
    "submodule": ("foreach",),  # git submodule foreach CMD
    "filter-branch": GIT_FILTERS,
    "send-email": ("--sendmail-cmd", "--smtp-server", "--to-cmd", "--cc-cmd", "--header-cmd"),
    "instaweb": ("--httpd", "-d", "--browser", "-b"),
    # clone -u is --upload-pack (a command run for the transfer); a --template's hooks run
    # at once (clone's post-checkout) or land in .git/hooks without a word naming .git (init)
    "clone": ("-u", "--template"),
    "init": ("--template",),
    "archive": ("-o",),  # writes a file, like the global --output
    "bundle": ("create",),  # writes the bundle file
    "format-patch": ("-o", "--output-directory"),  # writes the patches there
    "daemon": ("--access-hook",),  # runs the hook for each request
}
# of those, the ones that write a file rather than run a command
_GIT_WRITES = {("archive", "-o"), ("bundle", "create"), ("format-patch", "-o"),
               ("format-patch", "--output-directory")}
_GIT_OWN_OPTIONS = ("--to", "--cc")  # options of their own, not abbreviations of --to-cmd, --cc-cmd


def git_subcommand_at(argv: Sequence[str]) -> int:
    """Where git's subcommand is in `argv` (len(argv) if none): repocheck.git_command_at
    (an unknown option of git's own before it asks: rules.dangerous_argument)."""
    return git_command_at(argv)[0]


def git_danger(argv: Sequence[str]) -> str | None:
    """The git command in `argv` runs a command given to it (`git bisect run CMD`, `git
    submodule foreach CMD`, a filter of filter-branch...): what, or None. (Options that do
    the same for any git command, `-c`, `--exec`, `-x`..., are rules.DANGEROUS_ARGS.)"""
    args = list(argv[1:])
    i = git_subcommand_at(argv) - 1
    if i >= len(args):
        return None
    command, rest = args[i], args[i + 1 :]
    for word in _GIT_RUNS.get(command, ()):
        for arg in rest:
            if arg == "--" and word.startswith("-"):
                break
            name = arg.split("=", 1)[0]
            if len(word) == 2 and arg.startswith(word) and not arg.startswith("--"):
                name = word  # a short option with its value attached: `-ucmd`
            if name == word or (word.startswith("--") and name.startswith("--") and len(name) > 3
                                and word.startswith(name) and name not in _GIT_OWN_OPTIONS):
                # (send-email, like git's own parser, takes a unique abbreviation)
                what = "writes the file" if (command, word) in _GIT_WRITES else "runs the command"
                return f"{what} given to {command} {word}"
    return None


def env_danger(argv: Sequence[str]) -> str | None:
    """env -S STRING (--split-string) runs the command STRING splits into, by env's own
    rules, which the command analysis does not apply: the words in it (git, rm...) are
    not seen by deny rules or by the repository check. What, or None."""
    args = list(argv[1:])
    i = 0
    while i < len(args):
        word = args[i]
        i += 1
        if word in ("-", "--") or not word.startswith("-"):
            return None  # the command (or NAME=VALUE, or an empty environment) starts here
        if word.startswith("--"):
            name, eq, _value = word.partition("=")
            if len(name) > 2 and "--split-string".startswith(name):
                return "runs a command from its -S string"
            if not eq and len(name) > 2 and ("--unset".startswith(name) or "--chdir".startswith(name)):
                i += 1  # --unset NAME, --chdir DIR
            continue
        for k, ch in enumerate(word[1:], 2):  # a cluster: -i, -0, -v take nothing
            if ch == "S":
                return "runs a command from its -S string"
            if ch in "uC":  # -u NAME, -C DIR: the rest of the word, or the next one
                i += k == len(word)
                break
    return None


def gdb_danger(argv: Sequence[str]) -> str | None:
    """gdb always: it runs the program it debugs (`--args CMD`, `file` and `run` from -ex or
    a .gdbinit) and debugger commands (`shell CMD`, `!CMD`, `pipe`), from options or files."""
    return "runs programs and debugger commands (shell, run, --args)"


def fc_danger(argv: Sequence[str]) -> str | None:
    """bash's fc always: it runs lines of the shell's history (`fc -s`, `fc -s old=new`),
    or its editor on them and then the lines; only a listing (`fc -l`) runs nothing, and
    a rule for `fc *` is not the place to tell them apart."""
    return "runs lines of the shell's history again"


def wrapped_danger(argv: Sequence[str]) -> str | None:
    """A wrapper (nice, timeout, sudo, env...: rules.WRAPPERS) runs the command in its
    arguments: an allow rule for the wrapper would let that command's dangerous arguments
    and scripts through (`nice git -c core.pager=CMD log` under `nice *`). Each suffix of
    the arguments is judged as a command, as the deny rules judge them: what it does, or
    None."""
    own = _CHECKS.get(_basename(argv[0])) if argv else None
    if own is not None:
        found = own(argv)
        if found:
            return found
    for k in range(1, len(argv)):
        inner = argv[k:]
        bad = dangerous_argument(inner)
        if bad is not None:
            return f"runs {_basename(inner[0])} with {bad}, which can run programs or write files"
        check = _CHECKS.get(_basename(inner[0]))
        found = check(inner) if check is not None else None
        if found:
            return f"runs {_basename(inner[0])}, which {found}"
    return None


_CHECKS = {"git": git_danger, "env": env_danger, "sed": sed_danger, "gsed": sed_danger,
           **dict.fromkeys(AWKS, awk_danger), "gdb": gdb_danger, "fc": fc_danger}
# what rules.dangerous_script looks up: the checks above, and every wrapper (env: its own
# check, then the command it runs)
CHECKS = {**_CHECKS, **dict.fromkeys(WRAPPERS, wrapped_danger)}
