"""A Rust repository's own settings that make an allowed cargo (or rustc, rustfmt...) run a
program the repository names: the twin of tools/repocheck.py for cargo and rustup.

cargo reads `.cargo/config.toml` (and the legacy `.cargo/config`) in the directory it runs
in and in every directory above; a cloned repository's can set `build.rustc-wrapper`,
`build.rustc`, `target.<triple>.runner`, a linker, a credential provider... and even
`cargo tree` or `cargo metadata`, which build nothing, run rustc (`rustc -vV`), so the
wrapper runs. rustup's proxies (cargo, rustc, rustfmt, clippy... on PATH) read
`rust-toolchain.toml` (or the legacy `rust-toolchain`) the same way up the tree, and its
`path = "..."` makes them run the toolchain found there. So before an allowed command that
runs one of those tools, the files inside the working directory are read (those above it,
like ~/.cargo's, are the user's own), and a key that names a program asks, naming it. A file
that cannot be read or parsed asks too (cargo would read it its own way).

No process runs here: the files are read with tomllib. Bounded: MAX_BYTES a file.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

from dashfloat.textsafe import visible
from dashfloat.tools.rules import _basename

WHO = "repository check (cargo)"
MAX_BYTES = 1 << 20

# rustup's proxies: each one reads rust-toolchain.toml (and cargo its config too)
PROXIES = frozenset(("cargo", "rustc", "rustdoc", "rustfmt", "cargo-fmt", "cargo-clippy", "clippy-driver",
                     "rust-gdb", "rust-gdbgui", "rust-lldb", "rls", "rust-analyzer", "cargo-miri"))

# keys whose value is a program cargo runs (a table key `*` stands for any one name)
_PROGRAM_KEYS = (
    ("build", "rustc"), ("build", "rustc-wrapper"), ("build", "rustc-workspace-wrapper"), ("build", "rustdoc"),
    ("target", "*", "runner"), ("target", "*", "linker"), ("host", "linker"), ("host", "*", "linker"),
    ("registry", "credential-provider"), ("registry", "global-credential-providers"),
    ("registries", "*", "credential-provider"), ("credential-alias", "*"),
    ("net", "git-fetch-with-cli"),  # runs the git on PATH, with the repository's git config
)


def runs_a_rust_tool(argvs: Iterable[Sequence[str]]) -> bool:
    return any(argv and _basename(argv[0]) in PROXIES for argv in argvs)


def _text(path: str) -> tuple[str | None, str | None]:
    """(the file's text, None) or (None, why it cannot be read)."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as exc:
        return None, f"{visible(path)} cannot be read ({exc.strerror or exc})"
    if len(data) > MAX_BYTES:
        return None, f"{visible(path)} is longer than DashFloat reads"
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return None, f"{visible(path)} does not parse ({exc})"


def _toml(path: str, text: str | None, why: str | None) -> tuple[dict | None, str | None]:
    """(the TOML table, None) or (None, why it cannot be read)."""
    import tomllib

    if text is None:
        return None, why
    try:
        return tomllib.loads(text), None
    except tomllib.TOMLDecodeError as exc:
        return None, f"{visible(path)} does not parse ({exc})"


def _found(table: dict, key: tuple[str, ...], prefix: str = "") -> list[str]:
    """`dotted.name = value` for each value at `key` in `table` (`*`: any name)."""
    if not key:
        if table is False or table is None:
            return []
        return [f"{prefix} = {visible(str(table))}"]
    if not isinstance(table, dict):
        return []
    head, rest = key[0], key[1:]
    names = list(table) if head == "*" else [head] if head in table else []
    return [hit for name in names
            for hit in _found(table[name], rest, f"{prefix}.{name}" if prefix else name)]


def _config_findings(path: str) -> list[str]:
    table, why = _toml(path, *_text(path))
    if table is None:
        return [why or ""]
    hits = [hit for key in _PROGRAM_KEYS for hit in _found(table, key)]
    return [f"{h} (in {visible(path)})" for h in hits]


def _toolchain_findings(path: str) -> list[str]:
    text, why = _text(path)
    if text is not None and os.path.basename(path) == "rust-toolchain" and "[" not in text:
        name = text.strip()  # legacy: a channel name (or TOML); a name with a "/" is a path
        return [f"toolchain {visible(name)} (in {visible(path)})"] if "/" in name else []
    table, why = _toml(path, text, why)
    if table is None:
        return [why or ""]
    chain = table.get("toolchain")
    if isinstance(chain, dict) and "path" in chain:
        return [f"toolchain.path = {visible(str(chain['path']))} (in {visible(path)})"]
    return []


def _dirs_up(cwd: str, root: str) -> list[str]:
    """`cwd` and each directory above it that is inside `root` (the repository's files)."""
    out = []
    here, top = os.path.realpath(cwd), os.path.realpath(root)
    while here == top or here.startswith(top.rstrip("/") + "/"):
        out.append(here)
        up = os.path.dirname(here)
        if up == here:
            break
        here = up
    return out


def reasons(argvs: Iterable[Sequence[str]], cwd: str, root: str) -> list[str]:
    """Why an allowed command that runs a Rust tool must ask: the programs that the
    repository's cargo config or toolchain file names (empty when none, or no Rust tool)."""
    argvs = [list(a) for a in argvs]
    if not runs_a_rust_tool(argvs):
        return []
    cargo = any(a and _basename(a[0]) in ("cargo", "cargo-fmt", "cargo-clippy", "cargo-miri") for a in argvs)
    found: list[str] = []
    for d in _dirs_up(cwd, root):
        for name in ("rust-toolchain.toml", "rust-toolchain"):
            path = os.path.join(d, name)
            if os.path.isfile(path):
                found += _toolchain_findings(path)
        if cargo:
            for name in ("config.toml", "config"):
                path = os.path.join(d, ".cargo", name)
                if os.path.isfile(path):
                    found += _config_findings(path)
    if not found:
        return []
    return ["the repository's Rust settings name programs cargo or rustup would run: " + "; ".join(found)]
