"""What DashFloat cannot write is said once (dashfloat/storage.py), and what it could keep
is kept: the history in memory, /undo's previous bytes in memory."""

from __future__ import annotations

import errno
import io
import logging

import pytest

from dashfloat import storage
from dashfloat.history import History
from dashfloat.journal import Journal


def test_each_kind_is_said_once_and_a_notice_can_speak_for_others():
    said = []
    storage.attach(said.append)
    assert storage.report("state", "cannot write", covers=("log", "history"))
    assert not storage.report("state", "again")
    assert not storage.report("log", "the log failed")  # the state notice said it
    assert storage.report("journal", "the journal failed")
    assert said == ["cannot write", "the journal failed"]


def test_notices_made_before_a_front_end_wait_for_it():
    storage.report("log", "early")
    said = []
    storage.attach(said.append)
    storage.report("history", "late")
    assert said == ["early", "late"]


def test_a_failing_sink_breaks_nothing():
    def sink(text):
        raise RuntimeError("the screen is gone")

    storage.attach(sink)
    assert storage.report("log", "x")


def test_probe_names_what_is_in_the_way(tmp_path):
    (tmp_path / "afile").write_text("x")
    assert storage.probe(tmp_path / "afile" / "state" / "dashfloat") == f"Not a directory: {tmp_path / 'afile'}"
    assert storage.probe(tmp_path / "ok" / "dashfloat") is None
    assert [p.name for p in (tmp_path / "ok" / "dashfloat").iterdir()] == []  # the probe file is gone


def test_unwritable_says_what_this_session_goes_without():
    text = storage.unwritable("/h/.local/state/dashfloat", "Read-only file system: /h", journal=True)
    assert text.startswith("DashFloat cannot write in /h/.local/state/dashfloat (Read-only file system: /h)")
    assert "no log" in text and "no journal" in text and "XDG_STATE_HOME" in text
    assert "journal" not in storage.unwritable("/s", "x", journal=False)


class FullStream(io.StringIO):
    def flush(self):
        raise OSError(errno.ENOSPC, "No space left on device")


def test_the_log_on_a_full_disk_is_said_once_and_never_printed(capsys):
    said = []
    storage.attach(said.append)
    handler = storage.LogHandler(FullStream(), "/s/dashfloat.log")
    logger = logging.getLogger("test.storage.full")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        for i in range(3):
            logger.error("record %d", i)
    finally:
        logger.removeHandler(handler)
    assert said == ["The log /s/dashfloat.log could not be written (No space left on device): "
                    "from here on nothing is logged."]
    assert capsys.readouterr().err == ""


def test_the_history_on_a_full_disk_is_said_once_and_kept_in_memory(tmp_path, monkeypatch):
    said = []
    storage.attach(said.append)
    history = History(tmp_path / "history")
    calls = []

    def full(line):
        calls.append(line)
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "history"))

    monkeypatch.setattr(history, "_append", full)
    for text in ("one", "two", "three"):
        history.add(text)
    assert len(calls) == 1, "not tried again once the disk said no"
    assert said == [f"The prompt history {tmp_path / 'history'} could not be saved (No space left on device: "
                    f"{tmp_path / 'history'}): prompts from here on are kept for this session only "
                    "(Up still shows them)."]
    assert history.older("") == "three" and history.older("") == "two"


def test_a_read_only_history_is_read_and_never_written(tmp_path):
    path = tmp_path / "history"
    path.write_text('"old prompt"\n')
    history = History(path)
    history.read_only = True
    history.load()
    history.add("new prompt")
    assert path.read_text() == '"old prompt"\n'
    assert history.older("") == "new prompt" and history.older("") == "old prompt"


@pytest.mark.parametrize("how", ["failed", "store"])
def test_undo_keeps_previous_bytes_in_memory_when_the_store_cannot(tmp_path, how, monkeypatch):
    journal = Journal(tmp_path / "s" / "x.jsonl", {"id": "x"}, undo_max=10)
    if how == "failed":
        journal.failed = "Read-only file system"
    else:
        def full(data):
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(journal.store, "put_file", full)
    digest, why = journal.keep(b"before")
    assert why == "" and journal.kept(digest) == b"before"
    too_big, why = journal.keep(b"x" * 11)
    assert too_big is None and "undo_store_mb" in why
    second, _ = journal.keep(b"abcde")  # 6 + 5 > 10: the oldest goes
    assert journal.kept(second) == b"abcde" and journal.kept(digest) is None
    assert not (tmp_path / "s").exists()
