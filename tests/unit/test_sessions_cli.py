"""`dashfloat sessions`, --continue, --resume and --no-journal on the command line, and the
journal's configuration keys: the answers that come before any screen."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dashfloat import cli
from dashfloat import sessions as S
from dashfloat.config import ConfigError, load_config
from dashfloat.journal import Journal


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    proj = tmp_path / "proj"
    proj.mkdir()
    monkeypatch.chdir(proj)
    return {"home": home, "proj": proj, "environ": os.environ}


def session(env, cwd: Path, sid: str, prompt: str) -> Path:
    real = os.path.realpath(cwd)
    j = Journal(S.project_dir(env["environ"], real) / f"{sid}.jsonl", {"id": sid, "cwd": real})
    j.begin(title=prompt)
    j.event("prompt", turn=1, text=prompt)
    j.event("turn_end", turn=1, tokens=1234)
    j.close()
    return j.path


def test_sessions_lists_this_directory_and_all(env, capsys):
    assert cli.main(["sessions"]) == 0
    assert "No sessions in" in capsys.readouterr().out
    session(env, env["proj"], "aaaa111122223333", "fix the tests")
    other = env["proj"].parent / "other"
    other.mkdir()
    session(env, other, "bbbb111122223333", "write docs")
    assert cli.main(["sessions"]) == 0
    out = capsys.readouterr().out
    assert "aaaa1111" in out and "fix the tests" in out and "1234" in out and "write docs" not in out
    assert cli.main(["sessions", "--all"]) == 0
    out = capsys.readouterr().out
    assert "write docs" in out and str(other) in out


def test_continue_with_nothing_to_continue_says_so(env, capsys):
    assert cli.main(["--continue"]) == 2
    assert "no session to continue" in capsys.readouterr().err


def test_resume_an_unknown_or_ambiguous_id_says_so(env, capsys):
    assert cli.main(["--resume", "abc"]) == 2
    assert "no session id starts with abc" in capsys.readouterr().err
    session(env, env["proj"], "abc0000000000000", "x")
    session(env, env["proj"], "abc1000000000000", "y")
    assert cli.main(["--resume", "abc"]) == 2
    assert "2 sessions start with abc" in capsys.readouterr().err


def test_resume_in_another_directory_than_the_session_is_refused(env, capsys, tmp_path):
    session(env, env["proj"], "abc0000000000000", "x")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert cli.main(["--resume", "abc", "-C", str(elsewhere)]) == 2
    assert f"belongs to {os.path.realpath(env['proj'])}" in capsys.readouterr().err


def test_continue_and_no_journal_do_not_go_together(env, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["--continue", "--no-journal"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit):
        cli.main(["--all"])
    assert "--all goes with 'sessions'" in capsys.readouterr().err


def test_journal_keys(env, tmp_path):
    proj = env["proj"]
    assert load_config({}, {"HOME": str(env["home"])}, proj).journal is True
    assert load_config({"journal": False}, {"HOME": str(env["home"])}, proj).journal is False
    (proj / ".dashfloat").mkdir()
    (proj / ".dashfloat" / "config.toml").write_text("journal = false\n")
    with pytest.raises(ConfigError, match="journal.*not allowed in a project file"):
        load_config({}, {"HOME": str(env["home"])}, proj)
    (proj / ".dashfloat" / "config.toml").write_text("undo_store_mb = 70000\n")
    with pytest.raises(ConfigError, match="undo_store_mb"):
        load_config({}, {"HOME": str(env["home"])}, proj)
    user = env["home"] / ".config" / "dashfloat"
    user.mkdir(parents=True)
    (user / "config.toml").write_text('journal = "no"\n')
    (proj / ".dashfloat" / "config.toml").write_text("")
    with pytest.raises(ConfigError, match="expected true or false"):
        load_config({}, {"HOME": str(env["home"])}, proj)


def test_the_resume_hints_name_dashfloat_as_it_was_started(env, capsys, monkeypatch):
    """From the pyz or the single executable, `dashfloat --resume ID` is not a command that
    exists: the hints say how DashFloat was started (manpage.self_command)."""
    from dashfloat import agent, manpage

    session(env, env["proj"], "aaaa111122223333", "fix the tests")
    monkeypatch.setattr(manpage, "self_command", lambda *a, **k: "python3 /srv/dashfloat.pyz")
    assert cli.main(["sessions"]) == 0
    out = capsys.readouterr().out
    assert "python3 /srv/dashfloat.pyz --resume ID resumes one" in out
    assert "python3 /srv/dashfloat.pyz --continue the latest" in out and "\ndashfloat --" not in out
    text = agent.sessions_text(str(env["proj"]), None)
    assert text.endswith("python3 /srv/dashfloat.pyz --resume ID resumes one (after /quit).")
    text = agent.sessions_text(str(env["proj"]), "aaaa111122223333")
    assert "python3 /srv/dashfloat.pyz --resume ID resumes another" in text
