"""For tests/bench/uiday_bench.py: DashFloat's Agent replaced by one that plays the long day's
answers at once (no server, no tools, no conversation, no compaction), so a day of the UI
alone takes seconds. Active only with DF_UIDAY set (this directory on PYTHONPATH)."""

import os
import sys
import threading

BENCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _patch(mod):
    from dashfloat import messages as M

    class PlayedAgent:
        """Answers "[turn N] ..." with the long day's turn-N text, as fast as it can."""

        alive = True

        def __init__(self, endpoint, model, post, **kw):
            self.post = post

        def start(self):
            self.post((M.PHASE, "idle"))

        def join(self, timeout=None):
            pass  # (cli.run_ui waits for the agent at the end)

        def send(self, msg):
            if msg[0] == M.PROMPT:
                threading.Thread(target=self._turn, args=(msg[1],), daemon=True).start()

        def _turn(self, text):
            import longday_bench as lb

            n = int(text.split("[turn ", 1)[1].split("]", 1)[0])
            post = self.post
            for m in ((M.USER, text), (M.PHASE, "waiting"), (M.ASSISTANT_START,), (M.PHASE, "streaming"),
                      (M.TOKEN, f"{lb.start_word(n)} I will look at the code first."), (M.ASSISTANT_END, "done"),
                      (M.ASSISTANT_START,)):
                post(m)
            for piece in lb.pieces(lb.answer_text(n)):
                post((M.TOKEN, piece))
            post((M.ASSISTANT_END, "done"))
            post((M.PHASE, "idle"))

    mod.Agent = PlayedAgent


def _keep_rows(mod):
    mod.TranscriptPane.CACHE_LINES = 10**9  # DF_UIDAY_KEEP_ROWS: no laid-out line is dropped


_EVICTED: list = []  # DF_UIDAY_KEEP_EVICTED: the rows the cache drops, kept alive here


def _keep_evicted(mod):
    """The same cache, the same evictions, but the rows it drops are never freed."""
    rows = mod.TranscriptPane._rows

    def _rows(self, i, width):
        cached = self._cache[i]
        if not (cached is not None and cached[0] == width) and len(self._cached) >= self.CACHE_LINES:
            j = self._cached[0]  # the line this layout will evict
            if j < len(self._cache):
                _EVICTED.append(self._cache[j])
        return rows(self, i, width)

    mod.TranscriptPane._rows = _rows


def _no_relayout(mod):
    """DF_UIDAY_NO_RELAYOUT: a turn's rows stay where the stream laid them out."""
    mod.TranscriptPane.lay_out_again = lambda self: None


HOOKS = {"dashfloat.agent": _patch}
if os.environ.get("DF_UIDAY_KEEP_ROWS"):
    HOOKS["dashfloat.ui.widgets"] = _keep_rows
elif os.environ.get("DF_UIDAY_KEEP_EVICTED"):
    HOOKS["dashfloat.ui.widgets"] = _keep_evicted
elif os.environ.get("DF_UIDAY_NO_RELAYOUT"):
    HOOKS["dashfloat.ui.widgets"] = _no_relayout


if os.environ.get("DF_UIDAY"):
    sys.path.append(BENCH)
    from posthook import install

    install(HOOKS)
