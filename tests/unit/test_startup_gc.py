"""The garbage collector is off while DashFloat starts (cli.main) and on again for every
way it goes on: the TUI turns it on at its first frame (tests/widget), -p before its run,
every other command on its way out."""

from __future__ import annotations

import gc

import pytest

from dashfloat import cli


def test_a_headless_run_collects_and_main_leaves_the_collector_on(monkeypatch, tmp_path):
    seen = []

    def fake_headless(args, config, session):
        seen.append(gc.isenabled())
        return 0

    monkeypatch.setattr(cli, "headless_command", fake_headless)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)
    assert gc.isenabled()
    assert cli.main(["-p", "hello", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"]) == 0
    assert seen == [True] and gc.isenabled()


@pytest.mark.parametrize("argv", [["--version"], ["--show-config"], ["--no-such-flag"]])
def test_every_other_way_out_leaves_the_collector_on(argv, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.chdir(tmp_path)
    try:
        cli.main(argv)
    except SystemExit:
        pass
    assert gc.isenabled()
