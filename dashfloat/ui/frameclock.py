"""Self-clocked frames: never more than about one frame on its way to the terminal.

Over a slow or far link (ssh at 32 kbit/s, a phone's tether) the bytes of a frame leave
DashFloat at once but reach the screen much later: sshd, the ssh channel and the network
buffer them, so `write()` never blocks and a burst of frames (PgUp held down) would queue
seconds of drawing behind each other. The terminal itself tells when a frame has arrived:
after a frame DashFloat asks for the cursor position (DSR, `ESC[6n`), and a terminal
answers once it has processed every byte before the question. While a question is
unanswered, the next frame is held: the widgets keep changing, and when the answer comes
(or the wait runs out) one frame draws the newest state, whatever was skipped. A skipped
frame costs nothing: the screen writer diffs against what the terminal shows.

`FrameClock` is the policy alone (pure, times passed in; tested without a terminal):
  * at most one question is outstanding; the next frame carries the next one;
  * frames are held only once the terminal has answered at least once: a terminal that
    never answers changes nothing (after NEVER_ANSWERED unanswered questions no more are
    asked, so it costs 4 bytes a question, three times);
  * a held frame waits at most `timeout()` (from the round trips measured, 0.5-2 s): an
    answer lost (typeahead flushed before a question is shown, a suspend) costs one wait;
  * an answer counts only if it reports where the cursor was asked from: a stray report
    (a key that looks like one, a reply to someone else's question) is no answer, and
    after MISSES questions in a row that went unanswered frames are no longer held until
    the terminal answers again (a terminal that stopped answering changes nothing either).
"""

from __future__ import annotations

QUERY = "\x1b[6n"  # DSR: report the cursor position (answered as ESC [ row ; col R)
# the same question asked from row 2 when the cursor may be on row 1: an answer for row 1
# (ESC[1;5R) reads as a function key (Ctrl-F3), from row 2 on it cannot
QUERY_OFF_ROW_1 = "\x1b7\x1b[2;1H\x1b[6n\x1b8"


class FrameClock:
    NEVER_ANSWERED = 3  # unanswered questions (none ever answered) before asking no more
    FIRST_WAIT = 5.0  # seconds a question waits for a first answer before it counts as unanswered
    MIN_WAIT, MAX_WAIT = 0.5, 2.0  # bounds of the wait for an answer, once answers came
    MISSES = 2  # unanswered questions in a row after which frames are no longer held

    def __init__(self) -> None:
        self.enabled = True
        self.sent_at: float | None = None  # when the outstanding question was written
        self.answers = 0  # answers taken (ever)
        self.unanswered = 0  # questions that timed out while no answer had ever come
        self.srtt: float | None = None  # smoothed time from question to answer
        self.rttvar = 0.0
        self.held = 0  # frames held (statistics for tests and benchmarks)
        self.owed = 0  # questions asked and not answered yet (also those given up on)
        self.asked_at = -1e9  # when the last question was asked
        self.asked_pos = None  # the cursor position (x, y) the last question was asked from
        self.misses = 0  # questions in a row given up on since the last answer

    def timeout(self) -> float:
        """How long an outstanding question may hold frames."""
        if not self.answers or self.srtt is None:
            return self.FIRST_WAIT
        return min(self.MAX_WAIT, max(self.MIN_WAIT, 2 * self.srtt + 4 * self.rttvar))

    def wait(self, now: float) -> float:
        """Seconds the next frame must wait (0: draw it now)."""
        if self.sent_at is None or not self.answers:
            return 0.0
        left = self.sent_at + self.timeout() - now
        if left <= 0:
            self._expire()
            return 0.0
        return left

    def ask(self, now: float, pos: tuple[int, int] | None = None) -> bool:
        """Whether the frame being written now should carry a question (and note it);
        `pos` is where the cursor will be when the terminal reads it (0-based x, y)."""
        if not self.enabled:
            return False
        if self.sent_at is not None:
            if now - self.sent_at < self.timeout():
                return False
            self._expire()
            if not self.enabled:
                return False
        self.sent_at = self.asked_at = now
        self.asked_pos = pos
        self.owed += 1
        return True

    def expects_answer(self, now: float) -> bool:
        """Whether an answer may still come: a question is outstanding, or one given up on
        is still owed (however late: over a link that stalls, an answer for row 1, which
        reads as F3, came 42 s after its question and was typed as a key)."""
        return self.sent_at is not None or self.owed > 0

    def dropped(self) -> None:
        """An answer whose position is not known came (one for row 1, read as F3): one
        fewer is owed, and the outstanding question, if any, still waits for its own."""
        self.owed = max(0, self.owed - 1)

    def answer(self, now: float, pos: tuple[int, int] | None = None) -> bool:
        """A cursor report came (at `pos`). True if it answered the outstanding question. A
        report from elsewhere than the question was asked from answers nothing; a late
        answer to a question given up on is taken and ignored, but proves the terminal
        answers."""
        if pos is not None and self.asked_pos is not None and pos != self.asked_pos:
            return False
        self.owed = max(0, self.owed - 1)
        if self.sent_at is None:
            if not self.enabled or not self.answers:
                self.enabled = True  # a terminal slower than FIRST_WAIT, but one that answers
                self.answers += 1
            return False
        rtt = max(0.0, now - self.sent_at)
        if self.srtt is None:
            self.srtt, self.rttvar = rtt, rtt / 2
        else:  # RFC 6298's estimator
            self.rttvar = 0.75 * self.rttvar + 0.25 * abs(self.srtt - rtt)
            self.srtt = 0.875 * self.srtt + 0.125 * rtt
        self.answers += 1
        self.unanswered = self.misses = 0
        self.sent_at = None
        return True

    def forget(self) -> None:
        """The outstanding question's answer may be gone (input flushed, the screen stopped)."""
        self.sent_at = None

    def _expire(self) -> None:
        self.sent_at = None
        if self.answers:
            self.misses += 1
            if self.misses >= self.MISSES:  # it stopped answering (or never did): hold nothing
                self.answers = self.misses = 0
            return
        if not self.answers:
            self.unanswered += 1
            if self.unanswered >= self.NEVER_ANSWERED:
                self.enabled = False
