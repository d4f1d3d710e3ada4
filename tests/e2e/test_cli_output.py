"""End to end: the commands that print and exit (--show-config, policy, --help, --version,
--reset-terminal) behave in a pipeline, and --reset-terminal repairs without breaking UTF-8."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.e2e.harness import clean_env, dashfloat_bin

PRINTING = [
    ["--show-config"],
    ["policy", "list"],
    ["policy", "check", "read_file(a.txt)", "execute_command(git status)"],
    ["--reset-terminal"],
    ["--help"],
    ["--version"],
]


@pytest.mark.parametrize("args", PRINTING, ids=lambda a: " ".join(a))
def test_a_reader_that_went_away_ends_it_quietly(args, tmp_path):
    """stdout is a pipe whose reader is gone before anything is written: no traceback, no
    "Exception ignored", status 0 or 141 (SIGPIPE's)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run([dashfloat_bin(), *args], stdin=subprocess.DEVNULL, stdout=write_end,
                              stderr=subprocess.PIPE, env=clean_env(tmp_path), timeout=30)
    finally:
        os.close(write_end)
    assert proc.stderr == b""
    assert proc.returncode in (0, 141)


def test_show_config_into_head_is_quiet(tmp_path):
    cmd = f"{dashfloat_bin()} --show-config | head -1; echo \"status ${{PIPESTATUS[0]}}\" >&2"
    proc = subprocess.run(["bash", "-c", cmd], stdin=subprocess.DEVNULL, capture_output=True,
                          env=clean_env(tmp_path), timeout=30)
    assert proc.stdout.decode().startswith("base_url")
    assert proc.stderr.decode().strip() in ("status 0", "status 141")


# ---- --reset-terminal ----------------------------------------------------------------------


def _reset_in_a_pty(spawn, tmp_path, lang: str, before: str = "") -> tuple[bytes, str]:
    """Run --reset-terminal in a pty (after `before`, e.g. an stty) and return what it
    printed and `stty -a` afterwards."""
    script = f"{before} {dashfloat_bin()} --reset-terminal; stty -a > {tmp_path}/after"
    t = spawn(["/bin/sh", "-c", script], env=clean_env(tmp_path, LANG=lang))
    assert t.wait_exit() == 0
    return bytes(t.raw), (tmp_path / "after").read_text()


def test_reset_terminal_keeps_the_tty_utf8_mode(spawn, tmp_path):
    raw, after = _reset_in_a_pty(spawn, tmp_path, "C.UTF-8", "stty iutf8;")
    assert " iutf8" in f" {after}".replace("\n", " "), after
    assert "-iutf8" not in after
    assert "icanon" in after and "-icanon" not in after, "stty sane still ran"


def test_reset_terminal_sets_iutf8_for_a_utf8_locale_and_not_otherwise(spawn, tmp_path):
    _raw, after = _reset_in_a_pty(spawn, tmp_path, "C.UTF-8", "stty -iutf8;")
    assert "-iutf8" not in after
    _raw, after = _reset_in_a_pty(spawn, tmp_path, "C", "stty -iutf8;")
    assert "-iutf8" in after


def test_reset_terminal_bytes_never_hold_a_full_reset(spawn, tmp_path):
    raw, _ = _reset_in_a_pty(spawn, tmp_path, "C.UTF-8")
    assert b"\x1bc" not in raw, "RIS drops the Linux console's UTF-8 mode"
    for seq in (b"\x1b[?1049l", b"\x1b[?2004l", b"\x1b[?1000l", b"\x1b[?25h", b"\x1b[r", b"\x1b[0m"):
        assert seq in raw
    assert raw.rstrip(b"\r\n").endswith(b"\x1b%G"), "UTF-8 selected again, last"
    raw, _ = _reset_in_a_pty(spawn, tmp_path, "C")
    assert b"\x1b%G" not in raw and b"\x1bc" not in raw
