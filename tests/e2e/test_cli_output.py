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
