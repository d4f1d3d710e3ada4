"""`python -m dashfloat.events`: printing the schema, and --check's exit status and messages
(the check `make lint` runs): with the default path, a given one, a missing one, a stale one."""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path

import pytest

from dashfloat import events as E


def _write_schema(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_schema_text_keeps_non_ascii_characters_as_they_are(monkeypatch):
    """The file is UTF-8 for people to read: no \\u escapes."""
    monkeypatch.setattr(E, "SCHEMA_VERSION", "2.0-β")
    text = E.schema_text()
    assert '"x-schema-version": "2.0-β"' in text
    assert "\\u" not in text
    assert json.loads(text)["title"] == "DashFloat headless events, schema version 2.0-β"
    assert text.endswith("}\n")


def test_without_arguments_it_prints_the_schema(capsys):
    assert E.main([]) == 0
    out, err = capsys.readouterr()
    assert out == E.schema_text()
    assert err == ""


def test_check_of_a_current_file_given_by_path(tmp_path, capsys):
    path = _write_schema(tmp_path / "s.json", E.schema_text())
    assert E.main(["--check", str(path)]) == 0
    assert capsys.readouterr() == ("", "")


def test_check_without_a_path_reads_the_schema_file_under_the_working_directory(tmp_path, monkeypatch, capsys):
    _write_schema(tmp_path / E.SCHEMA_FILE, E.schema_text())
    monkeypatch.chdir(tmp_path)
    assert E.main(["--check"]) == 0
    assert capsys.readouterr() == ("", "")


def test_check_without_a_path_and_no_schema_file(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert E.main(["--check"]) == 1
    assert capsys.readouterr() == ("", f"{E.SCHEMA_FILE}: No such file or directory\n")


def test_check_of_a_missing_file(tmp_path, capsys):
    missing = tmp_path / "nope.json"
    assert E.main(["--check", str(missing)]) == 1
    assert capsys.readouterr() == ("", f"{missing}: No such file or directory\n")


def test_a_given_path_wins_over_the_default(tmp_path, monkeypatch, capsys):
    """A current default file must not hide a stale file named on the command line."""
    _write_schema(tmp_path / E.SCHEMA_FILE, E.schema_text())
    stale = _write_schema(tmp_path / "stale.json", E.schema_text().replace("headless", "headful", 1))
    monkeypatch.chdir(tmp_path)
    assert E.main(["--check", str(stale)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"{stale} is out of date with dashfloat/events.py: run `make man`\n"


def test_a_check_flag_that_is_not_first_prints_the_schema(tmp_path, capsys):
    assert E.main([str(tmp_path / "nope.json"), "--check"]) == 0
    assert capsys.readouterr().out == E.schema_text()


@pytest.mark.filterwarnings("ignore:.*found in sys.modules:RuntimeWarning")
@pytest.mark.parametrize("args, status", [(["--check", "nope.json"], 1), (["nope.json"], 0)])
def test_run_as_a_module_exits_with_mains_status(tmp_path, monkeypatch, capsys, args, status):
    """`python -m dashfloat.events ARGS`: sys.argv[0] is the program, the rest are main's."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["events.py", *args])
    with pytest.raises(SystemExit) as exc:
        runpy.run_module("dashfloat.events", run_name="__main__")
    assert exc.value.code == status
    out, err = capsys.readouterr()
    assert (out == E.schema_text()) is (status == 0)
    assert err == ("" if status == 0 else "nope.json: No such file or directory\n")
