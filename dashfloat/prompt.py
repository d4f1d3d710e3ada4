"""The system message: a short built-in prompt and the project's AGENTS.md instructions.

Every token here is paid on every request, so the built-in prompt says only what the model
cannot learn from the tool schemas: where it is (directory, OS, shell, date), that a call
with a side effect waits for the user and may be rejected, how to work with the tools, and
how to report. It is built once per conversation (at start, on resume and on /clear), so
the date does not change under a provider's prompt cache.

Instructions (`load_instructions`) come from, in this order (later ones more specific):

  1. the user's `$XDG_CONFIG_HOME/dashfloat/AGENTS.md`
  2. one file per directory from the git root (the nearest directory above the working
     directory with a `.git`; the working directory itself when there is none) down to the
     working directory: `AGENTS.override.md` when that directory has one, else `AGENTS.md`

Empty files are skipped. A project file is opened beneath the git root (tools/safeopen), so a
cloned repository's `AGENTS.md` that is a symbolic link to `~/.aws/credentials` is refused,
not sent to the provider; only regular files are read (a FIFO cannot block start-up). The
total is bounded by INSTRUCTIONS_MAX bytes; what is cut is replaced by a marker that says so,
in the text the model reads and in the entry the user sees.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from dashfloat.tools.gitchanges import work_tree_top

INSTRUCTIONS_MAX = 32 * 1024  # bytes of AGENTS.md text, all files together
NAMES = ("AGENTS.override.md", "AGENTS.md")  # per directory, the first that has text wins
CUT_MARKER = "[DashFloat: the instructions were cut here: {more} more of {files} not loaded ({limit} KiB limit)]"

# One line of advice per tool, shown only for the tools the request offers (so a tool added
# to the catalogue brings its own line, and a tool that is not there is never mentioned).
TOOL_ADVICE = {
    "list_directory": "list_directory and read_file first: look before you change anything; read a long "
                      "file in windows (offset, limit) instead of whole.",
    "search_workspace": "search_workspace finds text across the tree; use it rather than reading files "
                        "one by one to find where something is.",
    "edit_file": "edit_file for changes to an existing file: a search_block copied exactly from what "
                 "read_file showed, with enough lines to be unique; write_file for new files.",
    "execute_command": "execute_command runs `/bin/sh -c` with empty stdin and a timeout: nothing "
                       "interactive (editors, pagers, prompts), no servers left running; prefer "
                       "non-interactive flags.",
}


@dataclass
class Instructions:
    """The AGENTS.md text for the system message and what the user is told about it."""

    text: str = ""  # what the model reads ("" when there are none)
    files: list[tuple[str, int]] = field(default_factory=list)  # (shown path, bytes loaded)
    cut: int = 0  # bytes left out by INSTRUCTIONS_MAX
    problems: list[str] = field(default_factory=list)  # files that could not be read, and why

    def entry(self) -> str:
        """The dim entry shown at start ("" when nothing was loaded and nothing failed)."""
        lines = []
        if self.files:
            shown = ", ".join(f"{path} ({_size(n)})" for path, n in self.files)
            lines.append(f"Instructions loaded: {shown}"
                         + (f"; cut at {INSTRUCTIONS_MAX // 1024} KiB, {_size(self.cut)} left out." if self.cut else "."))
        for p in self.problems:
            lines.append(f"Instructions not loaded: {p}.")
        return "\n".join(lines)


def _size(n: int) -> str:
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} KiB"


# ---- where the files are ------------------------------------------------------------------


def project_dirs(cwd: str) -> tuple[str, list[str]]:
    """(base, [directories relative to base, from base down to cwd]): base is the git root,
    or cwd itself outside a git work tree. "." is base itself."""
    cwd = os.path.abspath(cwd)
    base = work_tree_top(cwd) or cwd
    rel = os.path.relpath(cwd, base)
    dirs = ["."]
    if rel != ".":
        parts = rel.split(os.sep)
        dirs += [os.path.join(*parts[: i + 1]) for i in range(len(parts))]
    return base, dirs


def user_file(environ: Mapping[str, str]) -> str | None:
    from dashfloat.config import ConfigError, user_config_path

    try:
        return str(user_config_path(environ).parent)
    except ConfigError:
        return None


# ---- reading ----------------------------------------------------------------------------------


def _read_fd(fd: int, limit: int) -> tuple[bytes, int] | None:
    """Up to `limit` + 1 bytes of a regular file and how many bytes it has past them (None
    when it is not one)."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        return None
    chunks, left = [], limit + 1
    while left > 0:
        data = os.read(fd, min(left, 65536))
        if not data:
            break
        chunks.append(data)
        left -= len(data)
    data = b"".join(chunks)
    return data, max(st.st_size - len(data), 0)


def _read_user(directory: str, name: str, limit: int) -> tuple[bytes, int] | None:
    """The user's own file (a link is the user's choice there). None when absent."""
    path = os.path.join(directory, name)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return None
    try:
        data = _read_fd(fd, limit)
    finally:
        os.close(fd)
    if data is None:
        raise OSError(f"{name} is not a regular file")
    return data


def _surely_absent(base: str, rel: str) -> bool:
    """Whether lstat finds `rel` missing under `base` with no symbolic link on the way:
    then opening it beneath the root would say FileNotFoundError too. A project without
    AGENTS.md files so never probes openat2 (ctypes, ~2 ms before the first request); a
    link, an error or a file that is there goes to safeopen, which decides."""
    path = base
    for part in rel.split(os.sep):
        path = os.path.join(path, part)
        try:
            st = os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            return True
        except OSError:
            return False
        if stat.S_ISLNK(st.st_mode):
            return False
    return False


def _read_beneath(root, rel: str, limit: int) -> tuple[bytes, int] | None:
    """A project file opened beneath the git root (safeopen.Root). None when absent."""
    if _surely_absent(os.fsdecode(root.given), rel):
        return None
    try:
        fd = root.open(rel, os.O_RDONLY | os.O_NONBLOCK)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        data = _read_fd(fd, limit)
    finally:
        os.close(fd)
    if data is None:
        raise OSError("not a regular file")
    return data


def _decode(data: bytes) -> str:
    return data.decode("utf-8", "replace").removeprefix("\ufeff")


def load_instructions(cwd: str, environ: Mapping[str, str], *, limit: int = INSTRUCTIONS_MAX,
                      user_dir: str | None = ...) -> Instructions:  # type: ignore[assignment]
    """Find and read the instruction files (see the module docstring). Never raises: a file
    that cannot be read is named in `problems`."""
    from dashfloat.tools import safeopen

    out = Instructions()
    found: list[tuple[str, str, int]] = []  # (shown path, text, bytes not read)
    if user_dir is ...:
        user_dir = user_file(environ)
    if user_dir:
        home = environ.get("HOME", "")
        for name in NAMES:
            shown = os.path.join(user_dir, name)
            if home and shown.startswith(home.rstrip("/") + "/"):
                shown = "~" + shown[len(home.rstrip("/")):]
            try:
                data = _read_user(user_dir, name, limit)
            except OSError as exc:
                out.problems.append(f"{shown}: {exc.strerror or exc}")
                continue
            if data is not None and data[0].strip():
                found.append((shown, _decode(data[0]), data[1]))
                break
    base, dirs = project_dirs(cwd)
    cwd_abs = os.path.abspath(cwd)
    try:
        root = safeopen.Root(base)
    except OSError as exc:
        out.problems.append(f"{base}: {exc.strerror or exc}")
        root = None
    if root is not None:
        with root:
            for d in dirs:
                for name in NAMES:
                    rel = name if d == "." else os.path.join(d, name)
                    shown = os.path.relpath(os.path.join(base, rel), cwd_abs)
                    try:
                        data = _read_beneath(root, rel, limit)
                    except safeopen.Escape:
                        out.problems.append(f"{shown}: a symbolic link that leads outside the project")
                        continue
                    except OSError as exc:
                        out.problems.append(f"{shown}: {exc.strerror or exc}")
                        continue
                    if data is not None and data[0].strip():
                        found.append((shown, _decode(data[0]), data[1]))
                        break
    bodies = [(shown, text.strip("\n") + "\n") for shown, text, _unread in found]
    total = sum(len(body.encode("utf-8")) for _s, body in bodies) + sum(unread for _s, _t, unread in found)
    parts: list[str] = []
    used = 0
    for i, (shown, body) in enumerate(bodies):
        size = len(body.encode("utf-8"))
        if used + size <= limit:
            parts.append(f"## {shown}\n\n{body}")
            used += size
            out.files.append((shown, size))
            continue
        kept = body.encode("utf-8")[: limit - used].decode("utf-8", "ignore")
        if kept.strip():
            parts.append(f"## {shown}\n\n{kept.rstrip()}\n")
            out.files.append((shown, len(kept.encode("utf-8"))))
            used += len(kept.encode("utf-8"))
        out.cut = total - used
        names = ", ".join(s for s, _b in bodies[i:])
        parts.append(CUT_MARKER.format(more=_size(out.cut), files=names, limit=limit // 1024) + "\n")
        break
    if parts:
        out.text = ("# Project instructions (AGENTS.md)\n\nFrom the user's and the project's instruction files; "
                    "a later (more specific) file wins over an earlier one, and the user's own requests win "
                    "over both.\n\n" + "\n".join(parts))
    return out


# ---- the built-in prompt --------------------------------------------------------------------


def _os_line() -> str:
    name = ""
    try:
        with open("/etc/os-release", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    name = line.split("=", 1)[1].strip().strip('"')
                    break
    except OSError:
        pass
    u = os.uname()  # what platform.system(), release() and machine() say on POSIX, without loading platform
    kernel = f"{u.sysname} {u.release} ({u.machine})"
    return f"{name}, {kernel}" if name else kernel


def _shell_line() -> str:
    real = os.path.realpath("/bin/sh")
    shell = os.path.basename(real)
    return "/bin/sh" + (f" (which is {shell}: POSIX sh, no bash features)" if shell == "dash" else
                        f" (which is {shell})" if shell and shell != "sh" else "")


def system_prompt(cwd: str, tool_names: list[str], read_only: frozenset[str] | set[str] = frozenset(),
                  *, today: str | None = None, os_line: str | None = None, shell: str | None = None) -> str:
    """The built-in prompt (~400 tokens with five tools). `tool_names`: the tools the request
    offers; `read_only`: those that run without asking."""
    today = today or time.strftime("%Y-%m-%d (%A)")
    lines = [
        "You are DashFloat, a coding agent in a terminal, working on the user's machine through tools.",
        "",
        f"- Working directory: {cwd}. Every path is relative to it; tools cannot reach outside it.",
        f"- System: {os_line or _os_line()}. Commands run with {shell or _shell_line()}.",
        f"- Today: {today}.",
    ]
    if tool_names:
        free = [n for n in tool_names if n in read_only]
        asks = [n for n in tool_names if n not in read_only]
        lines += ["", "Tools:"]
        if free:
            lines.append(f"- {', '.join(free)} run at once; several in one answer run together.")
        if asks:
            lines.append(f"- {', '.join(asks)} usually wait for the user to approve a preview, and may be "
                         "rejected: a rejected call did nothing. Do not repeat it; change the plan or ask.")
        lines += [f"- {TOOL_ADVICE[n]}" for n in TOOL_ADVICE if n in tool_names]
        lines.append("- After a change, check it (run the tests or the build when the project has them).")
    lines += [
        "",
        "Older tool outputs may be replaced by short stubs, and older turns by a summary, to fit the "
        "context window: read a file again rather than guess at what a stub left out.",
        "",
        "When you are done, say briefly what you changed (which files) and how you checked it, or what "
        "failed and why. Never claim something ran or passed when it did not. If the request is "
        "ambiguous or risky, ask first.",
    ]
    return "\n".join(lines)


def system_message(prompt: str, instructions: Instructions | None) -> dict:
    """The one system message of every request: the prompt, then the instructions."""
    text = prompt if instructions is None or not instructions.text else f"{prompt}\n\n{instructions.text}"
    return {"role": "system", "content": text}
