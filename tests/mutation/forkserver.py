"""The mutation runner's fork server: one per workspace, so that a mutant's pytest run does not
pay for a new interpreter, pytest and the third-party packages (about 0.6 s of a 0.8 s run).

Started by run_mutation.Workspace with the workspace's environment (its marker included) and
the workspace as its working directory. It imports pytest, pytest's own plugins and the
packages of WARM (never dashfloat, never the tests: a mutant's code is always imported fresh,
in the child), then for each request, a line of JSON ``{"argv": [...], "out": path}`` on stdin,
forks a child that starts a session of its own (setsid), puts /dev/null on its stdin and
`out` on its stdout and stderr, and runs pytest as ``python -m pytest ARGV`` would, up to the
interpreter's normal exit (non-daemon threads joined, atexit run). The server answers
``pid N`` when the child is forked and ``exit CODE`` when it has ended (a negative code: the
signal that killed it). End of stdin ends the server.
"""

from __future__ import annotations

import os
import sys

# as for `python -m pytest` run in the workspace: the working directory first on the path
sys.path[0] = os.getcwd()

import gc  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402

# third-party and standard modules the code and the tests import: warm in the server. Only
# modules whose import reads nothing a test could change first (and that start no thread).
WARM = [
    "requests", "requests.adapters", "requests.auth", "urllib3", "urllib3.connectionpool",
    "urllib3.connection", "charset_normalizer", "idna", "certifi", "urwid", "urwid.display",
    "urwid.display.common", "urwid.str_util", "pexpect", "ptyprocess", "pyte", "pyte.screens",
    "pygments", "pygments.lexer", "pygments.token", "markdown_it", "markdown_it.token", "wcwidth",
    "http.client", "http.server", "socketserver", "ssl", "socket", "selectors", "subprocess",
    "email.parser", "email.message", "ctypes", "ctypes.util", "difflib", "zipfile", "uuid",
    "unicodedata", "tomllib", "statistics", "timeit", "secrets", "configparser", "argparse",
    "shlex", "fnmatch", "textwrap", "dataclasses", "queue", "hashlib", "base64", "zlib",
    "pty", "termios", "resource", "logging", "inspect", "ast", "tempfile", "pdb", "cmd", "code",
    "codeop", "faulthandler", "_pytest._argcomplete",
]


def warm() -> None:
    import pytest  # noqa: F401
    from _pytest.config import default_plugins

    for name in default_plugins:
        importlib.import_module(f"_pytest.{name}")
    importlib.import_module("_pytest.pytester")
    for name in WARM:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    import tempfile

    # computed from TMPDIR when first asked for, as in a fresh interpreter
    tempfile.tempdir = None
    # the children need not walk (nor copy) the server's objects when they collect
    gc.collect()
    gc.freeze()
    leaked = [m for m in sys.modules if m == "dashfloat" or m.startswith(("dashfloat.", "tests"))]
    if leaked:
        raise SystemExit(f"forkserver: the warm-up imported the project's own modules: {leaked}")


# A mutant can make a loop that grows a list forever: seen, a test child at 17 GB of the
# machine's 24 when it was found. Its data (heap and private mappings) is capped instead, so
# it fails with MemoryError (a kill) long before the time limit; the tests need ~0.5 GB.
DATA_LIMIT = int(os.environ.get("DASHFLOAT_MUTATION_DATA_LIMIT", 4 << 30))  # bytes (a test lowers it)


def child(request: dict) -> int:
    """In the forked child: become `python -m pytest ARGV` and return its exit code."""
    os.setsid()
    import resource

    resource.setrlimit(resource.RLIMIT_DATA, (DATA_LIMIT, DATA_LIMIT))
    null = os.open(os.devnull, os.O_RDONLY)
    out = os.open(request["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(null, 0)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.close(null)
    os.close(out)
    import pytest
    from _pytest.config import _console_main  # what pytest/__main__.py runs

    sys.argv = [os.path.join(os.path.dirname(pytest.__file__), "__main__.py"), *request["argv"]]
    return _console_main()


def serve() -> None:
    pending = b""
    while True:
        while b"\n" not in pending:
            chunk = os.read(0, 65536)
            if not chunk:
                return
            pending += chunk
        line, _, pending = pending.partition(b"\n")
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            # leaves serve() by SystemExit: the child ends as an interpreter does
            sys.exit(child(request))
        os.write(1, f"pid {pid}\n".encode())
        _, status = os.waitpid(pid, 0)
        os.write(1, f"exit {os.waitstatus_to_exitcode(status)}\n".encode())


if __name__ == "__main__":
    warm()
    os.write(1, b"ready\n")
    serve()
