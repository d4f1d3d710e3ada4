"""A tracer for DashFloat under a bench: put this directory on PYTHONPATH and name a log in
DF_TRACE, and the app (any process that imports it) writes, with time.monotonic():

  in T KEYS        keys as App._input_filter got them
  fl T0 T1         a frame's write to the terminal (DashScreen.flush)
  it T0 T1 cpu C   a pass of the loop over 3 ms (KeptSelectorEventLoop._loop)
  sel T0 T1        a select that returned something
  cb T0 T1 cpu C KIND NAME   an alarm, file or idle callback that took over 2 ms of CPU
  PROFILE NAME cpu C + a cProfile table: App._tick or App._catch_up over 12 ms of CPU
                   (profiled every call: their times are inflated, their shape is right)

tests/bench/trace_huge.py lines this up with the huge bench's echo probes. Nothing is
patched without DF_TRACE.

Apart from DF_TRACE, DF_PROFILE_DIR names a directory: SIGUSR1 starts a cProfile of the main
thread's CPU time and SIGUSR2 stops it and writes DIR/main-N.pstats (N counts from 1). The long day's
--profile-keys profiles its echo and PgUp probes at each checkpoint with it, turn 1 beside
turn 300.
"""

import os
import sys
import time

_PROFILE_DIR = os.environ.get("DF_PROFILE_DIR")
if _PROFILE_DIR:
    import cProfile
    import signal

    _prof = {"p": None, "n": 0}

    def _start(_sig, _frame):
        _prof["p"] = cProfile.Profile(time.thread_time_ns, 1e-9)  # CPU, not wall: a busy machine moves it less
        _prof["p"].enable()

    def _stop(_sig, _frame):
        p, _prof["p"] = _prof["p"], None
        if p is not None:
            p.disable()
            _prof["n"] += 1
            p.dump_stats(os.path.join(_PROFILE_DIR, f"main-{_prof['n']}.pstats"))

    signal.signal(signal.SIGUSR1, _start)
    signal.signal(signal.SIGUSR2, _stop)

_PATH = os.environ.get("DF_TRACE")
if _PATH:
    _log = open(_PATH, "a", buffering=1)  # noqa: SIM115 - open for the process's life

    def _patch_app(mod):
        import cProfile
        import io
        import pstats

        orig = mod.App._input_filter

        def _input_filter(self, keys, raw):
            if keys:
                _log.write(f"in {time.monotonic():.6f} {keys!r}\n")
            return orig(self, keys, raw)

        mod.App._input_filter = _input_filter
        for name in ("_tick", "_catch_up"):
            o = getattr(mod.App, name)

            def prof(self, *a, _o=o, _n=name):
                pr = cProfile.Profile()
                c0 = time.thread_time()
                pr.enable()
                try:
                    return _o(self, *a)
                finally:
                    pr.disable()
                    c = time.thread_time() - c0
                    if c > 0.012:
                        out = io.StringIO()
                        pstats.Stats(pr, stream=out).sort_stats("cumulative").print_stats(25)
                        rows = out.getvalue().splitlines()[6:40]
                        _log.write(f"PROFILE {_n} cpu {c:.4f}\n" + "".join(f"  | {r}\n" for r in rows))

            setattr(mod.App, name, prof)

    def _patch_screen(mod):
        orig = mod.DashScreen.flush

        def flush(self):
            t0 = time.monotonic()
            orig(self)
            _log.write(f"fl {t0:.6f} {time.monotonic():.6f}\n")

        mod.DashScreen.flush = flush

    def _timed(cb, kind):
        name = getattr(cb, "__qualname__", None) or repr(cb)

        def run(*a, **k):
            t0, c0 = time.monotonic(), time.thread_time()
            try:
                return cb(*a, **k)
            finally:
                c = time.thread_time() - c0
                if c > 0.002:
                    _log.write(f"cb {t0:.6f} {time.monotonic():.6f} cpu {c:.6f} {kind} {name}\n")

        return run

    def _patch_select_loop(mod):
        import selectors

        loop = mod.SelectEventLoop
        alarm, watch, idle = loop.alarm, loop.watch_file, loop.enter_idle
        loop.alarm = lambda self, sec, cb: alarm(self, sec, _timed(cb, "alarm"))
        loop.watch_file = lambda self, fd, cb: watch(self, fd, _timed(cb, "file"))
        loop.enter_idle = lambda self, cb: idle(self, _timed(cb, "idle"))
        select = selectors.EpollSelector.select

        def traced_select(self, timeout=None):
            t0 = time.monotonic()
            r = select(self, timeout)
            if r:
                _log.write(f"sel {t0:.6f} {time.monotonic():.6f}\n")
            return r

        selectors.EpollSelector.select = traced_select

    def _patch_kept_loop(mod):
        orig = mod.KeptSelectorEventLoop._loop

        def _loop(self):
            t0, c0 = time.monotonic(), time.thread_time()
            try:
                return orig(self)
            finally:
                t1 = time.monotonic()
                if t1 - t0 > 0.003:
                    _log.write(f"it {t0:.6f} {t1:.6f} cpu {time.thread_time() - c0:.6f}\n")

        mod.KeptSelectorEventLoop._loop = _loop

    def _patch_main_loop(mod):
        orig = mod.MainLoop._make_alarm_callback

        def _make(self, callback, user_data):
            cb = orig(self, callback, user_data)
            cb.__qualname__ = getattr(callback, "__qualname__", repr(callback))
            return cb

        mod.MainLoop._make_alarm_callback = _make

    _HOOKS = {"urwid.event_loop.main_loop": _patch_main_loop, "urwid.event_loop.select_loop": _patch_select_loop,
              "dashfloat.ui.app": _patch_app, "dashfloat.ui.screen": _patch_screen,
              "dashfloat.ui.eventloop": _patch_kept_loop}

    sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/bench
    from posthook import install

    install(_HOOKS)
