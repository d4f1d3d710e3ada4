"""The fixed tool catalogue (ADR 0007 §1: five tools; issue 10 adds search_workspace), argument
validation and the UI's args summary.

`TOOLS` is sent as the request's `tools` array. `validate` checks a call's arguments against
the very same JSON schemas (a tiny validator for the subset used here: object / properties /
required / additionalProperties false, string, integer and boolean types, minimum / maximum,
default) before anything else happens: a bad call becomes an error result, never a confirmation
or an execution. An optional parameter given as null counts as left out (models often send
`"glob": null`): its default applies.
"""

from __future__ import annotations

import json

from dashfloat.tools import names, results


# preview.py (difflib, its patterns) loads when a summary is first made, not with the
# catalogue: a headless run's first request carries TOOLS and need not wait for it
def safe(text: str) -> str:
    from dashfloat.tools.preview import safe as _safe

    return _safe(text)


def human_size(n) -> str:
    from dashfloat.tools.preview import human_size as _human_size

    return _human_size(n)


def command_summary(command: str, limit: int) -> str:
    from dashfloat.tools.preview import command_summary as _command_summary

    return _command_summary(command, limit)

# -- the catalogue ---------------------------------------------------------------------

# search_workspace's bounds (dashfloat/tools/search.py enforces them; the description states them)
SEARCH_MAX_RESULTS = 100  # lines shown by default
SEARCH_MAX_RESULTS_MAX = 1000  # the bound on max_results
SEARCH_LINE_CHARS = 500  # characters of one line shown (around its first match)
SEARCH_OUTPUT_BYTES = 32 * 1024  # the whole result, as the JSON the model reads
SEARCH_TIMEOUT = 10.0  # seconds for one search; the result says what was found by then

_PATH_NOTE = (
    "relative to the working directory (paths outside it are refused; there is no shell: "
    "~ and $VARIABLES are not expanded). A name that list_directory wrote with \\xNN "
    "escapes is given back exactly as written"
)


def _tool(name: str, description: str, properties: dict, required: list[str]) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            },
        },
    }


TOOLS: list[dict] = [
    _tool(
        "read_file",
        "Read a text file and return a 1-based window of its lines. Returns at most 2,000 "
        "lines and 64 KiB per call; the result says `truncated` and reports the totals, so "
        "read further with `offset`. Binary files are reported, not returned. Runs without "
        "asking the user.",
        {
            "path": {"type": "string", "description": f"File path, {_PATH_NOTE}."},
            "offset": {
                "type": "integer",
                "minimum": 1,
                "default": 1,
                "description": "First line to return (1-based).",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": 10000,
                "default": 2000,
                "description": "Maximum number of lines to return (output is still capped "
                "at 2,000 lines / 64 KiB).",
            },
        },
        ["path"],
    ),
    _tool(
        "write_file",
        "Create or overwrite a file with the given content (UTF-8 text); missing parent "
        "directories are created. The user sees a diff and must approve it first; if they "
        "reject it the result says `rejected` and nothing is written.",
        {
            "path": {"type": "string", "description": f"File path, {_PATH_NOTE}."},
            "content": {"type": "string", "description": "The complete new file content."},
        },
        ["path", "content"],
    ),
    _tool(
        "edit_file",
        "Replace one exact occurrence of `search_block` in a file with `replace_block`. The "
        "search block must match the file byte for byte (whitespace and indentation "
        "included) exactly once: no match or several (overlapping ones count) is an error and nothing "
        "changes; include enough surrounding lines to make it unique. Files above 8 MiB "
        "are refused. The user sees a diff and must approve it first.",
        {
            "path": {"type": "string", "description": f"File path, {_PATH_NOTE}."},
            "search_block": {
                "type": "string",
                "description": "The exact text to find (must occur exactly once, non-empty).",
            },
            "replace_block": {
                "type": "string",
                "description": "The text that replaces it (must differ from search_block).",
            },
        },
        ["path", "search_block", "replace_block"],
    ),
    _tool(
        "execute_command",
        "Run a shell command line with `/bin/sh -c` (stdin is empty; no interactive "
        "programs). Times out after 30 s by default, killing the whole process group; "
        "output (stdout and stderr combined) is capped at 32 KiB. The result reports the "
        "exit status. The user sees the exact command and must approve it first.",
        {
            "command": {"type": "string", "description": "The command line to run."},
            "cwd": {
                "type": "string",
                "default": ".",
                "description": f"Directory to run in, {_PATH_NOTE}.",
            },
        },
        ["command"],
    ),
    _tool(
        "list_directory",
        "List a directory's entries (name, type, size), sorted by name; at most 500 entries, "
        "the result says `truncated` beyond that. A name that is not valid UTF-8 is written "
        "with \\xNN escapes (the result says how); pass it to the other tools as written. "
        "Runs without asking the user.",
        {
            "path": {
                "type": "string",
                "default": ".",
                "description": f"Directory path, {_PATH_NOTE}.",
            },
        },
        [],
    ),
    _tool(
        "search_workspace",
        "Find the lines that contain `pattern` in the files under a directory (or in one file): "
        "returns `file:line: text` lines and the number of matches per file. Skips binary "
        "files, .git, node_modules, virtualenvs and what .gitignore ignores. Case-sensitive; "
        f"a literal text unless `regex` is true. At most `max_results` lines (default {SEARCH_MAX_RESULTS}), "
        f"each cut to {SEARCH_LINE_CHARS} characters around the match, {SEARCH_OUTPUT_BYTES >> 10} KiB "
        f"in all, {SEARCH_TIMEOUT:g} s: the result says `truncated` and still counts every match, "
        "so narrow with `path` or `glob`. Runs without asking the user.",
        {
            "pattern": {"type": "string", "description": "The text to find (one line), or a regular "
                        "expression when regex is true (the common syntax: . * + ? [] () | ^ $ \\b \\d \\s \\w)."},
            "path": {"type": "string", "default": ".",
                     "description": f"Directory or file to search, {_PATH_NOTE}."},
            "regex": {"type": "boolean", "default": False,
                      "description": "Treat pattern as a regular expression (default: a literal text)."},
            "glob": {"type": "string", "description": "Only files whose name matches, e.g. *.py or *.{ts,tsx}; "
                     "with a / a path pattern relative to path, e.g. src/**/*.ts."},
            "max_results": {"type": "integer", "minimum": 1, "maximum": SEARCH_MAX_RESULTS_MAX,
                            "default": SEARCH_MAX_RESULTS, "description": "Most matching lines returned."},
        },
        ["pattern"],
    ),
]

READ_ONLY = frozenset({"read_file", "list_directory", "search_workspace"})
PATH_PARAMS = {"read_file": "path", "write_file": "path", "edit_file": "path",
               "list_directory": "path", "execute_command": "cwd", "search_workspace": "path"}
"""The parameter of each tool that names a file or directory (canonicalised by validate)."""
MUTATING = frozenset({"write_file", "edit_file", "execute_command"})

_SCHEMAS: dict[str, dict] = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
NAMES: tuple[str, ...] = tuple(_SCHEMAS)

# -- validation ------------------------------------------------------------------------

_PROBLEMS_MAX = 8  # problems named in one error message
_SHOW_MAX = 40  # characters of a model-supplied value or name quoted in an error message


def _show(value) -> str:
    """A short quotation of a model-supplied value for an error message."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        try:
            text = repr(value)
        except Exception:  # e.g. an int beyond the str() digit limit
            text = f"<{type(value).__name__}>"
    if len(text) > _SHOW_MAX:
        text = text[: _SHOW_MAX - 1] + "…"
    return text


def _json_kind(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _range_text(schema: dict) -> str:
    lo, hi = schema.get("minimum"), schema.get("maximum")
    if lo is not None and hi is not None:
        return f"{lo}..{hi}"
    if lo is not None:
        return f">= {lo}"
    return f"<= {hi}"


def _check_value(param: str, schema: dict, value) -> str | None:
    """The problem with one parameter's value, or None."""
    kind = schema.get("type")
    if kind == "string":
        if not isinstance(value, str):
            return f"parameter '{param}' expected a string, got {_json_kind(value)} {_show(value)}"
        if "\x00" in value:
            return f"parameter '{param}' contains a NUL byte"
        return None
    if kind == "boolean":
        if not isinstance(value, bool):
            return f"parameter '{param}' expected true or false, got {_json_kind(value)} {_show(value)}"
        return None
    if kind == "integer":
        if isinstance(value, bool) or not isinstance(value, int):
            return f"parameter '{param}' expected an integer, got {_json_kind(value)} {_show(value)}"
        lo, hi = schema.get("minimum"), schema.get("maximum")
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            return f"parameter '{param}' out of range: {_show(value)} (allowed {_range_text(schema)})"
        return None
    return f"parameter '{param}' has an unsupported schema type {kind!r}"  # a catalogue bug


_NO_NAME = "tool call has no function name"  # the accumulator's reason for an empty name


def _unknown_tool(name, extra: str | None = None) -> dict:
    allowed = ", ".join(NAMES)
    if isinstance(name, str) and name:
        msg = f"unknown tool {_show(name)}; the tools are: {allowed}"
    else:
        msg = f"{_NO_NAME}; the tools are: {allowed}"
    if extra:
        extra = "; ".join(p for p in extra.split("; ") if p != _NO_NAME)
    if extra:
        msg += f" (also: {extra})"
    return results.error("unknown_tool", msg)


def validate(name: str, args, error: str | None = None) -> tuple[dict | None, dict | None]:
    """Check a call against the catalogue.

    Returns `(normalised_args, None)` with every default filled in and the path parameter in
    its one written form (`names.canonical`: the model's `caf\\udce9` and `caf\\xe9` are the
    same file, so rules, hooks, the preview and the tool all see `caf\\xe9`), or `(None, result)` with
    an `unknown_tool` / `bad_arguments` error result naming every problem found. `error` is
    the accumulator's reason when the arguments did not parse (`args` is then None).
    """
    schema = _SCHEMAS.get(name) if isinstance(name, str) else None
    if schema is None:
        return None, _unknown_tool(name, error)
    if error:
        return None, results.error("bad_arguments", f"{name}: {error}")
    if not isinstance(args, dict):
        return None, results.error(
            "bad_arguments",
            f"{name}: arguments must be a JSON object, got {_json_kind(args)}",
        )
    props: dict = schema["properties"]
    problems: list[str] = []
    for param in schema["required"]:
        if param not in args:
            problems.append(f"missing required parameter '{param}'")
    extra = [k for k in args if k not in props]
    for key in extra:
        problems.append(
            f"unknown parameter {_show(key)} (allowed: {', '.join(props)})"
        )
    out: dict = {}
    for param, pschema in props.items():
        if param in args and args[param] is None and param not in schema["required"]:
            if "default" in pschema:
                out[param] = pschema["default"]
            continue  # null for an optional parameter: left out
        if param in args:
            problem = _check_value(param, pschema, args[param])
            if problem:
                problems.append(problem)
            else:
                out[param] = args[param]
        elif "default" in pschema:
            out[param] = pschema["default"]
    path_param = PATH_PARAMS.get(name)
    if isinstance(out.get(path_param), str):  # with the other problems: all named at once
        written = names.canonical(out[path_param])
        if written is None:
            problems.append(
                f"parameter '{path_param}' holds the lone surrogate "
                f"{names.stray_surrogate(out[path_param])}, which stands for no byte; a byte "
                "that is not UTF-8 is written \\xNN"
            )
        else:
            out[path_param] = written
    if problems:
        if len(problems) > _PROBLEMS_MAX:
            more = len(problems) - _PROBLEMS_MAX
            problems = problems[:_PROBLEMS_MAX] + [f"and {more} more problems"]
        return None, results.error("bad_arguments", f"{name}: " + "; ".join(problems))
    return out, None


def validate_call(call: dict) -> tuple[dict | None, dict | None]:
    """Validate one `{"id", "name", "args", "error"}` call from `toolcalls.finish`.

    An accumulator error (arguments unparseable or cut off) becomes `bad_arguments` with
    that text; a call without a name is `unknown_tool`.
    """
    if not isinstance(call, dict):
        return None, results.error("bad_arguments", "malformed tool call")
    return validate(call.get("name"), call.get("args"), call.get("error") or None)


# -- the UI's one-line args summary ----------------------------------------------------

_PATH_MAX = 80
_COMMAND_MAX = 60
_RAW_MAX = 4096  # characters looked at before escaping (a summary is one short row)


def _clip_tail(text: str, limit: int) -> str:
    """Keep the end (a file name says more than its first directories)."""
    return text if len(text) <= limit else "…" + text[-(limit - 1):]


def _clip_head(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _as_text(value) -> str:
    if isinstance(value, str):
        return value
    return _show(value)


def _path(args: dict, key: str = "path", default: str | None = None) -> str:
    value = args.get(key, default)
    if value is None:
        return "?"
    text = _as_text(value)
    if len(text) > _RAW_MAX:
        text = "…" + text[-_RAW_MAX:]
    return _clip_tail(safe(text), _PATH_MAX)


def _command(value) -> str:
    """The command on one row: blank runs counted, its head and its tail (preview.py)."""
    if not isinstance(value, str):
        return _clip_head(safe(_show(value)), _COMMAND_MAX)
    return command_summary(value, _COMMAND_MAX)


def _details(name: str, args: dict) -> str:
    """The part of the summary after the tool name."""
    if name == "read_file":
        text = _path(args)
        offset, limit = args.get("offset"), args.get("limit")
        if offset not in (None, 1) or limit not in (None, 2000):
            text += ":" + _clip_head(safe(_as_text(offset if offset is not None else 1)), 20)
            if limit not in (None, 2000):
                text += "+" + _clip_head(safe(_as_text(limit)), 20)
        return text
    if name == "write_file":
        text = _path(args)
        content = args.get("content")
        if isinstance(content, str):
            text += f" ({human_size(len(content.encode('utf-8', 'surrogatepass')))})"
        return text
    if name == "edit_file":
        return _path(args)
    if name == "execute_command":
        text = _command(args.get("command", "?"))
        cwd = args.get("cwd")
        if cwd is not None and cwd != ".":
            text += f" (in {_path(args, 'cwd')})"
        return text
    if name == "list_directory":
        return _path(args, default=".")
    if name == "search_workspace":
        pattern = args.get("pattern", "?")
        text = _clip_head(safe(_as_text(pattern)), _COMMAND_MAX)
        text = (f"/{text}/" if args.get("regex") is True else repr(text) if isinstance(pattern, str) else text)
        where = args.get("path")
        if where not in (None, "."):
            text += f" in {_path(args)}"
        if isinstance(args.get("glob"), str):
            text += f" ({_clip_head(safe(args['glob']), 40)})"
        return text
    return _clip_head(safe(_show(args)), _COMMAND_MAX) if args else ""


def summary(name, args) -> str:
    """The short args summary for the UI's tool row, terminal-safe; never raises.

    `read_file lib/foo.ex`, `read_file lib/foo.ex:120+50`, `write_file notes.md (1.2 KiB)`,
    `edit_file app.py`, `execute_command pytest -q`, `list_directory src`. Args that are not
    a dict (None: the arguments did not parse) give just the name.
    """
    try:
        shown = _clip_head(safe(_as_text(name)), _PATH_MAX) if name else "?"
    except Exception:
        shown = "?"
    if not isinstance(args, dict):
        return shown
    try:
        details = _details(name, args)
    except Exception:  # a summary is decoration: odd args must never break the UI
        return shown
    return f"{shown} {details}" if details else shown
