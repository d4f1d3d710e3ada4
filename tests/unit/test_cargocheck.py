"""A Rust repository's own settings that make an allowed cargo run a program it names
(tools/cargocheck.py), judged by the permission pipeline; cargo itself is the oracle where it
is installed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from dashfloat.tools import cargocheck, pipeline, rules
from dashfloat.tools.permissions import Policy

_CARGO = shutil.which("cargo") is not None and subprocess.run(
    ["cargo", "--version"], capture_output=True).returncode == 0


def crate(path: Path) -> Path:
    (path / "src").mkdir(parents=True)
    (path / "Cargo.toml").write_text('[package]\nname = "x"\nversion = "0.1.0"\nedition = "2021"\n')
    (path / "src" / "main.rs").write_text("fn main() {}\n")
    (path / "evil.sh").write_text('#!/bin/sh\ntouch "$(dirname "$0")/MARK"\nexec "$@"\n')
    (path / "evil.sh").chmod(0o755)
    return path


def decide(root: Path, command: str, allow: str = "cargo tree *", cwd: str = ".") -> tuple[str, str]:
    policy = Policy([("user config", [rules.parse_rule(f"execute_command({allow})", rules.ALLOW, "user config")])])
    ctx = pipeline.CallContext(call_id="c1", name="execute_command", root=str(root), policy=policy,
                               raw={"id": "c1", "name": "execute_command", "error": None,
                                    "args": {"command": command, "cwd": cwd}})
    kind, _prepared = pipeline.pre_execute(ctx)
    return kind, ctx.reason


def test_a_wrapper_the_repositorys_cargo_config_names_asks(tmp_path):
    top = crate(tmp_path / "c")
    assert decide(top, "cargo tree --offline")[0] == "run"
    (top / ".cargo").mkdir()
    (top / ".cargo" / "config.toml").write_text('[build]\nrustc-wrapper = "./evil.sh"\n')
    kind, reason = decide(top, "cargo tree --offline")
    assert kind == "ask" and reason == (
        "the repository's Rust settings name programs cargo or rustup would run: build.rustc-wrapper = "
        f"./evil.sh (in {top}/.cargo/config.toml)")
    if _CARGO:  # cargo runs it, though cargo tree builds nothing
        subprocess.run(["cargo", "tree", "--offline"], cwd=top, capture_output=True, timeout=120)
        assert (top / "MARK").exists()


def test_the_toolchain_file_s_path_asks_for_every_rustup_proxy(tmp_path):
    """rustup runs the toolchain at `path` (an absolute one: `/proc/self/cwd/tc` is the
    repository itself) for cargo, rustc, rustfmt..."""
    top = crate(tmp_path / "c")
    (top / "tc" / "bin").mkdir(parents=True)
    (top / "tc" / "bin" / "cargo").write_text(f"#!/bin/sh\ntouch {top}/MARK\n")
    (top / "tc" / "bin" / "cargo").chmod(0o755)
    (top / "rust-toolchain.toml").write_text(f'[toolchain]\npath = "{top}/tc"\n')
    for allow, command in (("cargo tree *", "cargo tree"), ("rustfmt *", "rustfmt --check src/main.rs"),
                           ("rustc *", "rustc -vV")):
        kind, reason = decide(top, command, allow)
        assert kind == "ask" and f"toolchain.path = {top}/tc (in {top}/rust-toolchain.toml)" in reason
    if _CARGO and shutil.which("rustup"):
        subprocess.run(["cargo", "tree"], cwd=top, capture_output=True, timeout=120)
        assert (top / "MARK").exists()
    (top / "rust-toolchain.toml").write_text('[toolchain]\nchannel = "stable"\n')
    assert decide(top, "cargo tree")[0] == "run"


@pytest.mark.parametrize("text, named", [
    ('[target.x86_64-unknown-linux-gnu]\nrunner = ["sh", "-c", "touch M"]\n',
     "target.x86_64-unknown-linux-gnu.runner = ['sh', '-c', 'touch M']"),
    ('[target.aarch64-apple-darwin]\nlinker = "evil"\n', "target.aarch64-apple-darwin.linker = evil"),
    ('[build]\nrustc = "/tmp/rustc"\nrustdoc = "x"\n', "build.rustc = /tmp/rustc"),
    ('[build]\nrustc-workspace-wrapper = "w"\n', "build.rustc-workspace-wrapper = w"),
    ('[host]\nlinker = "l"\n', "host.linker = l"),
    ('[registry]\ncredential-provider = "cargo:token-from-stdout evil"\n', "registry.credential-provider"),
    ('[registries.corp]\ncredential-provider = ["evil"]\n', "registries.corp.credential-provider"),
    ('[credential-alias]\nmine = ["evil"]\n', "credential-alias.mine = ['evil']"),
    ('[net]\ngit-fetch-with-cli = true\n', "net.git-fetch-with-cli = True"),
    ("[build\n", "does not parse"),
])
def test_each_key_that_names_a_program_is_named(tmp_path, text, named):
    top = crate(tmp_path / "c")
    (top / ".cargo").mkdir()
    (top / ".cargo" / "config").write_text(text)  # the legacy name is read too
    found = cargocheck.reasons([["cargo", "metadata"]], str(top), str(top))
    assert len(found) == 1 and named in found[0]


def test_harmless_settings_other_tools_and_files_above_the_working_directory_do_not_ask(tmp_path):
    outer = tmp_path / "home"
    (outer / ".cargo").mkdir(parents=True)
    (outer / ".cargo" / "config.toml").write_text('[build]\nrustc-wrapper = "sccache"\n')  # the user's own
    top = crate(outer / "c")
    (top / ".cargo").mkdir()
    (top / ".cargo" / "config.toml").write_text('[build]\njobs = 4\n[net]\ngit-fetch-with-cli = false\n'
                                                '[alias]\nb = "build"\n')
    (top / "sub").mkdir()
    assert cargocheck.reasons([["cargo", "build"]], str(top / "sub"), str(top)) == []
    assert cargocheck.reasons([["ls"]], str(top), str(top)) == []
    (top / ".cargo" / "config.toml").write_text('[build]\nrustc-wrapper = "./evil.sh"\n')
    assert cargocheck.reasons([["cargo", "build"]], str(top / "sub"), str(top)) != []  # read up the tree
    assert cargocheck.reasons([["rustc", "-vV"]], str(top), str(top)) == []  # rustc reads no cargo config
    assert cargocheck.reasons([["/usr/bin/env"], ["cargo", "tree"]], str(top), str(top)) != []


def test_a_legacy_toolchain_file_with_a_path_asks_and_a_channel_does_not(tmp_path):
    top = crate(tmp_path / "c")
    (top / "rust-toolchain").write_text("nightly-2025-01-01\n")
    assert cargocheck.reasons([["cargo", "tree"]], str(top), str(top)) == []
    (top / "rust-toolchain").write_text("/proc/self/cwd/tc\n")
    assert "toolchain /proc/self/cwd/tc" in cargocheck.reasons([["cargo", "tree"]], str(top), str(top))[0]


def test_a_question_that_asks_anyway_gets_the_settings_as_a_note(tmp_path):
    top = crate(tmp_path / "c")
    (top / ".cargo").mkdir()
    (top / ".cargo" / "config.toml").write_text('[build]\nrustc-wrapper = "./evil.sh"\n')
    ctx = pipeline.CallContext(call_id="c1", name="execute_command", root=str(top), policy=Policy(),
                               raw={"id": "c1", "name": "execute_command", "error": None,
                                    "args": {"command": "cargo build"}})
    kind, prepared = pipeline.pre_execute(ctx)
    notes = [t for k, t in prepared.preview if k == "marker" and t.startswith("note: ")]
    assert kind == "ask" and "build.rustc-wrapper = ./evil.sh" in notes[0]
    assert not (top / "MARK").exists()  # judged by reading, nothing run


def test_only_a_rust_tool_reads_the_toolchain_file(tmp_path):
    top = crate(tmp_path / "c")
    (top / "rust-toolchain.toml").write_text('[toolchain]\npath = "/proc/self/cwd/tc"\n')
    assert cargocheck.reasons([["ls"], []], str(top), str(top)) == []
    assert cargocheck.reasons([[], ["rustfmt"]], str(top), str(top)) != []


@pytest.mark.parametrize("extra, asks", [(0, False), (1, True)])
def test_a_settings_file_is_read_up_to_one_mebibyte(tmp_path, extra, asks):
    """1 MiB of settings are read and judged; one byte more asks unread."""
    top = crate(tmp_path / "c")
    (top / ".cargo").mkdir()
    head = '[build]\njobs = 4\n'
    (top / ".cargo" / "config.toml").write_text(head + "#" * ((1 << 20) - len(head) - 1 + extra) + "\n")
    found = cargocheck.reasons([["cargo", "tree"]], str(top), str(top))
    assert found == ([f"the repository's Rust settings name programs cargo or rustup would run: {top}/.cargo/"
                      "config.toml is longer than DashFloat reads"] if asks else [])


def test_the_directories_up_from_the_working_directory_end_at_the_filesystem_root(tmp_path):
    here = tmp_path / "a" / "b"
    here.mkdir(parents=True)
    ups = cargocheck._dirs_up(str(here), "/")
    assert ups[0] == str(here) and ups[-1] == "/" and len(ups) == len(here.parts)
    assert cargocheck._dirs_up(str(here), str(tmp_path / "a")) == [str(here), str(tmp_path / "a")]


def test_the_question_says_once_why_the_allowed_command_asks(tmp_path):
    top = crate(tmp_path / "c")
    (top / ".cargo").mkdir()
    (top / ".cargo" / "config.toml").write_text('[build]\nrustc-wrapper = "./evil.sh"\n')
    policy = Policy([("user config", [rules.parse_rule("execute_command(cargo tree *)", rules.ALLOW, "user config")])])
    ctx = pipeline.CallContext(call_id="c1", name="execute_command", root=str(top), policy=policy,
                               raw={"id": "c1", "name": "execute_command", "error": None,
                                    "args": {"command": "cargo tree"}})
    kind, prepared = pipeline.pre_execute(ctx)
    notes = [t for k, t in prepared.preview if k == "marker" and t.startswith("asks: ")]
    assert kind == "ask" and notes == [f"asks: {ctx.reason}"] and "build.rustc-wrapper" in notes[0]


def test_a_settings_file_that_cannot_be_read_or_decoded_asks_and_says_why(tmp_path, monkeypatch):
    top = crate(tmp_path / "c")
    (top / ".cargo").mkdir()
    (top / ".cargo" / "config.toml").write_bytes(b'[build]\njobs = 4 # \xff\n')
    said = cargocheck.reasons([["cargo", "tree"]], str(top), str(top))
    assert said == ["the repository's Rust settings name programs cargo or rustup would run: "
                    f"{top}/.cargo/config.toml does not parse ('utf-8' codec can't decode byte 0xff in position 19: "
                    "invalid start byte)"]
    (top / ".cargo" / "config.toml").unlink()
    (top / "rust-toolchain.toml").write_text("[toolchain\n")
    said = cargocheck.reasons([["cargo", "tree"]], str(top), str(top))
    assert len(said) == 1 and f"{top}/rust-toolchain.toml does not parse (" in said[0]

    def unreadable(*args, **kwargs):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(cargocheck, "open", unreadable, raising=False)
    assert cargocheck.reasons([["cargo", "tree"]], str(top), str(top)) == [
        "the repository's Rust settings name programs cargo or rustup would run: "
        f"{top}/rust-toolchain.toml cannot be read (Permission denied)"]
