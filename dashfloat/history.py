"""Prompt history kept across runs, with Up/Down navigation for the prompt.

The file holds one JSON string per line (json.dumps, ASCII only), so multi-line prompts
survive and a damaged line costs only itself. History must never crash the app: every
I/O error is logged and swallowed. `load()` runs once at startup and `add()` does one
small append per submitted prompt (plus, rarely, a rewrite that trims the file).
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

log = logging.getLogger(__name__)

# Never read more than this from the end of the file (a runaway file must not stall startup).
_MAX_READ = 8 * 1024 * 1024
LIMIT = 1000  # prompts kept


class History:
    def __init__(self, path: Path | None, limit: int = LIMIT, secrets=()) -> None:
        self.path = path
        self.secrets = secrets  # masking pairs: the configured key never goes into the file
        self.limit = max(1, int(limit))
        self.entries: list[str] = []
        self._pos: int | None = None  # index into entries while navigating
        self._draft: str | None = (
            None  # what was in the prompt before the first older()
        )
        self._file_lines = 0  # lines in the file, as far as we know: drives trimming
        self._write_warned = False
        self.read_only = False  # the file is read, never written: prompts stay in memory

    # ---- persistence -------------------------------------------------------------

    def load(self) -> None:
        """Read the file; a missing file is fine, corrupt lines are skipped. Never raises."""
        self.reset_navigation()
        if self.path is None:
            return
        try:
            lines = self._read_lines()
        except FileNotFoundError:
            return
        except Exception as exc:  # noqa: BLE001 - history must never crash the app
            log.warning("prompt history %s could not be read: %s", self.path, exc)
            return
        entries, bad = _parse(lines)
        if bad:
            log.warning("prompt history %s: skipped %d corrupt line(s)", self.path, bad)
        self.entries = entries[-self.limit :]
        self._file_lines = len(lines)
        self._tighten_permissions()

    def _read_lines(self) -> list[bytes]:
        assert self.path is not None
        with open(self.path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > _MAX_READ:
                handle.seek(size - _MAX_READ)
                data = handle.read()
                data = data[data.find(b"\n") + 1 :]  # drop the partial first line
            else:
                data = handle.read()
        return [line for line in data.split(b"\n") if line.strip()]

    def _tighten_permissions(self) -> None:
        # Prompts may contain pasted secrets: keep the file (and its directory) private.
        from dashfloat import private

        try:
            assert self.path is not None
            notes = private.ensure_dir(self.path.parent)
            note = private.tighten(str(self.path), private.FILE_MODE, self.path.stat())
            for text in [*notes, note] if note else notes:
                log.info("private files: %s", text)
        except Exception as exc:  # noqa: BLE001
            log.warning("prompt history %s: could not restrict permissions: %s", self.path, exc)

    def add(self, text: str) -> None:
        """Remember a submitted prompt: skips blanks and immediate duplicates. Never raises."""
        self.reset_navigation()
        if not isinstance(text, str) or not text.strip():
            return
        if self.entries and self.entries[-1] == text:
            return
        self.entries.append(text)
        if len(self.entries) > self.limit:
            del self.entries[: len(self.entries) - self.limit]
        if self.path is None or self.read_only:
            return
        try:
            from dashfloat.masking import mask

            self._append(json.dumps(mask(text, self.secrets, patterns=False)) + "\n")
            self._file_lines += 1
            if self._file_lines > 2 * self.limit:
                self._trim()
        except Exception as exc:  # noqa: BLE001 - history must never crash the app
            level = logging.DEBUG if self._write_warned else logging.WARNING
            self._write_warned = True
            log.log(level, "prompt history %s could not be saved: %s", self.path, exc)
            if isinstance(exc, OSError):  # the disk: said once, and not tried again this session
                from dashfloat import storage

                self.read_only = True
                storage.report("history", f"The prompt history {self.path} could not be saved "
                                          f"({storage.describe(exc)}): prompts from here on are kept for "
                                          "this session only (Up still shows them).")

    def _append(self, line: str) -> None:
        assert self.path is not None
        from dashfloat import private

        notes = private.ensure_dir(self.path.parent)
        fd, more = private.open_private(self.path, os.O_WRONLY | os.O_APPEND)
        for note in notes + more:
            log.info("private files: %s", note)
        try:
            data = line.encode("ascii")
            written = os.write(fd, data)
            if written != len(data):
                raise OSError(f"short write ({written} of {len(data)} bytes)")
        finally:
            os.close(fd)

    def _trim(self) -> None:
        """Rewrite the file with its newest `limit` entries (atomically).

        Re-reads the file rather than writing `self.entries`, so prompts appended by
        another DashFloat running at the same time are kept.
        """
        assert self.path is not None
        entries, _ = _parse(self._read_lines())
        keep = entries[-self.limit :]
        import tempfile

        fd, tmp = tempfile.mkstemp(prefix=".history-", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="ascii") as handle:
                handle.writelines(json.dumps(entry) + "\n" for entry in keep)
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        self._file_lines = len(keep)

    # ---- navigation --------------------------------------------------------------

    def older(self, current: str) -> str | None:
        """The previous entry, or None at the oldest. The first call stashes `current`."""
        if not self.entries:
            return None
        if self._pos is None:
            self._draft = current
            self._pos = len(self.entries)
        if self._pos == 0:
            return None
        self._pos -= 1
        return self.entries[self._pos]

    def newer(self) -> str | None:
        """The next entry; past the newest, the stashed draft. None when not navigating."""
        if self._pos is None:
            return None
        self._pos += 1
        if self._pos >= len(self.entries):
            draft = self._draft if self._draft is not None else ""
            self.reset_navigation()
            return draft
        return self.entries[self._pos]

    def reset_navigation(self) -> None:
        self._pos = None
        self._draft = None


def _parse(lines: list[bytes]) -> tuple[list[str], int]:
    """Decode JSON-string lines; returns (entries, number of corrupt lines)."""
    entries: list[str] = []
    bad = 0
    for raw in lines:
        try:
            value = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            bad += 1
            continue
        if not isinstance(value, str):
            bad += 1
            continue
        try:
            value.encode("utf-8")  # lone surrogates would break the terminal later
        except UnicodeEncodeError:
            bad += 1
            continue
        if not value.strip() or (entries and entries[-1] == value):
            continue
        entries.append(value)
    return entries, bad
