"""The frame clock's policy (dashfloat/ui/frameclock.py), with times passed in."""

from dashfloat.ui.frameclock import FrameClock


def test_frames_wait_for_the_answer_once_the_terminal_has_answered():
    c = FrameClock()
    assert c.ask(0.0)  # the first frame carries a question
    assert c.wait(0.01) == 0  # no answer ever seen: nothing is held yet
    assert c.answer(0.05)
    assert c.ask(1.0)
    assert not c.ask(1.01)  # one question at a time: the next frame carries none
    assert c.wait(1.02) > 0  # and the frame after it waits
    assert c.answer(1.06)
    assert c.wait(1.07) == 0


def test_a_terminal_that_never_answers_changes_nothing_and_is_asked_three_times():
    c = FrameClock()
    asked = 0
    now = 0.0
    for _ in range(1000):
        assert c.wait(now) == 0  # never a held frame
        asked += c.ask(now)
        now += 0.1
    assert asked == FrameClock.NEVER_ANSWERED
    assert not c.enabled


def test_a_first_answer_slower_than_the_first_wait_still_turns_the_clock_on():
    c = FrameClock()
    c.ask(0.0)
    assert c.ask(FrameClock.FIRST_WAIT + 0.1)  # the first counted as unanswered: asked again
    assert not c.answer(FrameClock.FIRST_WAIT + 0.2) or c.answers  # some answer arrived
    assert c.answers >= 1


def test_a_lost_answer_holds_frames_no_longer_than_the_wait():
    c = FrameClock()
    c.ask(0.0)
    c.answer(0.1)
    c.ask(1.0)
    t = c.timeout()
    assert FrameClock.MIN_WAIT <= t <= FrameClock.MAX_WAIT
    assert c.wait(1.0 + t / 2) > 0
    assert c.wait(1.0 + t + 0.01) == 0  # given up: the frame goes
    assert c.ask(1.0 + t + 0.02)  # and carries a new question


def test_the_wait_follows_the_measured_round_trip():
    c = FrameClock()
    now = 0.0
    for _ in range(20):  # 1.5 s per answer: a 32 kbit/s link drawing big frames
        c.ask(now)
        now += 1.5
        c.answer(now)
    assert c.timeout() == FrameClock.MAX_WAIT
    fast = FrameClock()
    now = 0.0
    for _ in range(20):
        fast.ask(now)
        now += 0.002
        fast.answer(now)
    assert fast.timeout() == FrameClock.MIN_WAIT


def test_forget_drops_the_outstanding_question_and_a_late_answer_is_only_taken():
    c = FrameClock()
    c.ask(0.0)
    c.answer(0.1)
    c.ask(1.0)
    c.forget()  # typeahead flushed: its answer may be gone
    assert c.wait(1.01) == 0
    assert not c.answer(1.2)  # the late answer answers nothing
    assert c.ask(1.3)


def test_a_stray_report_answers_nothing_and_a_silent_terminal_is_no_longer_waited_for():
    """A cursor report from elsewhere (a key that looks like one, a reply to another
    program's question) is no answer; a terminal that answered once and then never again
    (or a stray report that matched) stops holding frames after MISSES timeouts."""
    c = FrameClock()
    c.ask(0.0, (2, 23))
    assert not c.answer(0.01, (4, 11))  # not where the question was asked
    assert c.answers == 0 and c.sent_at is not None
    assert c.answer(0.02, (2, 23))
    now = 1.0
    held = 0
    for _ in range(20):  # it answers no more
        c.ask(now, (2, 23))
        wait = c.wait(now + 0.01)
        held += wait > 0
        now += wait + 0.02
        c.wait(now)
    assert held == FrameClock.MISSES  # then frames go as they come
    assert c.answers == 0


def test_an_answer_owed_is_expected_however_late_it_comes():
    """Over a link that stalls, an answer came 42 s after its question (a resize to one row
    had made it an answer for row 1, which reads as F3): still owed, it is still an answer,
    and taking one (or dropping one whose position is unknown) pays it off."""
    c = FrameClock()
    assert not c.expects_answer(0.0)
    assert c.ask(0.0, (2, 23))
    c.forget()  # given up on (input flushed)
    assert c.expects_answer(42.0) and c.expects_answer(10_000.0)
    c.dropped()
    assert not c.expects_answer(42.0)
    c.dropped()  # never below zero
    assert c.owed == 0
