"""End to end: dist/dashfloat-<arch> (make exe) on "a server without Python".

Each test runs the executable copied into an empty directory, with a PATH that holds a few
programs and no python at all, PYTHONHOME and PYTHONPATH unset, TMPDIR private to the test
(so what the bootloader unpacks can be checked), HOME and the XDG directories in the test's
tmp directory.

The executable takes ~30 s to build (a minute under load): the tests use dist/'s when it
was built from this working tree (tests/exebuild.py's .inputs stamp), else build one once
for this module, and are skipped, saying so, where PyInstaller is not installed (`make exe`
installs it; `make test` does not). .ci/run runs `make exe` first.
"""

from __future__ import annotations

import json
import os
import platform
import select
import shutil
import socket
import stat
import subprocess
import threading
from pathlib import Path

import pytest

from tests import exebuild
from tests.e2e import test_ssh
from tests.e2e.conftest import wait_ready
from tests.e2e.harness import Term
from tests.e2e.test_pyz import run
from tests.e2e.test_tools import (
    call,
    calls_reply,
    chat_posts,
    close_whole_preview,
    tool_messages,
    wait_confirming,
)
from tests.fakeserver import ScriptedServer, sse_reply
from tests.sshd import missing as sshd_missing
from tests.sshd import remote_command, wait_until

F1 = "\x1bOP"
sshd, remote = test_ssh.sshd, test_ssh.remote  # its fixtures: a real sshd and a link to it
# what the bare server's PATH holds: a shell and the programs the tests' commands use
PROGRAMS = ("sh", "bash", "env", "cat", "echo", "ls", "stty", "less", "true")


@pytest.fixture(scope="module")
def built_exe(tmp_path_factory) -> Path:
    dist = exebuild.ROOT / "dist" / exebuild.NAME
    if exebuild.is_fresh(dist):
        return dist
    if os.environ.get("DASHFLOAT_NO_EXE_BUILD") == "1":  # .ci/run, when `make exe` failed
        pytest.skip(f"dist/{exebuild.NAME} is missing or stale and DASHFLOAT_NO_EXE_BUILD=1 (make exe failed): "
                    "the single executable is not tested")
    if exebuild.pyinstaller_version() is None:
        pytest.skip(f"PyInstaller is not installed and dist/{exebuild.NAME} is missing or stale: "
                    "`make exe` installs it and builds the executable these tests run")
    return exebuild.build_exe(tmp_path_factory.mktemp("exebuild") / exebuild.NAME)


@pytest.fixture
def server_dir(built_exe, tmp_path) -> Path:
    """An empty directory holding only a copy of the executable, read-only."""
    where = tmp_path / "srv"
    where.mkdir()
    shutil.copy2(built_exe, where / built_exe.name)
    where.chmod(0o555)
    yield where
    where.chmod(0o755)


@pytest.fixture
def exe(server_dir) -> str:
    return str(server_dir / exebuild.NAME)


def bare_env(tmp_path: Path, **extra) -> dict[str, str]:
    """No python on PATH, none of Python's variables; TMPDIR where the bootloader unpacks."""
    bin_dir = tmp_path / "barebin"
    if not bin_dir.exists():
        bin_dir.mkdir()
        for name in PROGRAMS:
            found = shutil.which(name, path="/usr/bin:/bin")
            if found:
                (bin_dir / name).symlink_to(found)
    (tmp_path / "tmp").mkdir(exist_ok=True)
    (tmp_path / "home").mkdir(exist_ok=True)
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "TMPDIR": str(tmp_path / "tmp"), "TERM": "xterm-256color", "LANG": "C.UTF-8", "EDITOR": "true"}
    env.update(extra)
    env = {k: v for k, v in env.items() if v is not None}
    assert shutil.which("python3", path=env["PATH"]) is None and shutil.which("python", path=env["PATH"]) is None
    assert not [k for k in env if k.startswith("PYTHON")]
    return env


def unpacked(tmp_path: Path) -> list[str]:
    """What the bootloader left in the test's TMPDIR."""
    return sorted(p.name for p in (tmp_path / "tmp").iterdir())


def version() -> str:
    from dashfloat import __version__

    return __version__


def test_the_executable_is_one_file_that_needs_no_python(built_exe, exe, tmp_path):
    data = Path(exe).read_bytes()
    assert data[:4] == b"\x7fELF" and Path(exe).stat().st_mode & stat.S_IXUSR
    assert exebuild.required_glibc(built_exe) <= tuple(int(p) for p in platform.libc_ver()[1].split("."))  # the builder's
    work = tmp_path / "work"
    work.mkdir()
    env = bare_env(tmp_path)
    done = run([exe, "--version"], env, work)
    assert (done.returncode, done.stdout, done.stderr) == (0, f"dashfloat {version()}\n", "")
    assert unpacked(tmp_path) == []  # the unpacked bundle is removed at exit
    # as typed in its own directory, and the man page is named the way it is run
    done = run([f"./{exebuild.NAME}", "--help"], dict(env, MANPATH="/nonexistent"), Path(exe).parent)
    assert done.returncode == 0, done.stderr
    assert f"or ./{exebuild.NAME} --man." in " ".join(done.stdout.split())


def test_man_travels_inside(exe, tmp_path):
    from dashfloat import manpage, mantext

    done = run([exe, "--man"], bare_env(tmp_path), tmp_path)  # no man on PATH: the text
    assert done.returncode == 0, done.stderr
    assert done.stdout == mantext.render(manpage.generate())
    assert "make exe" in done.stdout and "noexec" in done.stdout  # FILES says what it is


def test_a_headless_answer_and_the_files_of_an_installed_dashfloat(exe, tmp_path, server):
    config = tmp_path / "config" / "dashfloat"
    config.mkdir(parents=True)
    (config / "config.toml").write_text('model = "from-the-user-file"\n')
    env = bare_env(tmp_path)
    done = run([exe, "--show-config"], env, tmp_path)
    line = next(line for line in done.stdout.splitlines() if line.lstrip().startswith("model"))
    assert "from-the-user-file" in line and str(config / "config.toml") in line, done.stderr

    server.push(sse_reply(["Hello ", "from ", "the executable."]))
    project = tmp_path / "proj"
    project.mkdir()
    done = run([exe, "-p", "say hello", "--base-url", server.url, "--model", "test-model"],
               dict(env, OPENAI_API_KEY="sk-exe-test"), project)
    assert (done.returncode, done.stdout.strip(), done.stderr) == (0, "Hello from the executable.", "")
    post = [r for r in server.requests if r["method"] == "POST"][-1]
    assert post["json"]["messages"][-1] == {"role": "user", "content": "say hello"}
    assert post["headers"].get("authorization") == "Bearer sk-exe-test"
    assert list((tmp_path / "state" / "dashfloat" / "sessions").rglob("*.jsonl"))
    assert unpacked(tmp_path) == []


@pytest.mark.parametrize("outer", [None, "/opt/outer/lib"])
def test_commands_see_the_servers_environment_not_the_bundles(exe, tmp_path, server, outer):
    """The bootloader points LD_LIBRARY_PATH at the unpacked libraries: a command DashFloat
    runs must get the value the user had (or none), and none of the bootloader's variables."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / "notes.txt").write_text("exe-notes-content\n")
    server.push(calls_reply(call("read_file", {"path": "notes.txt"}, "c1", 0),
                            call("execute_command", {"command": "env"}, "c2", 1)),
                sse_reply(["All ", "done."]))
    env = bare_env(tmp_path, LD_LIBRARY_PATH=outer)
    done = run([exe, "-p", "go", "--base-url", server.url, "--model", "test-model",
                "--allow", "execute_command(env)"], env, project)
    assert (done.returncode, done.stdout.strip()) == (0, "All done."), done.stderr
    results = {m["tool_call_id"]: m["content"] for m in tool_messages(chat_posts(server)[-1])}
    assert "exe-notes-content" in results["c1"]
    seen = json.loads(results["c2"])["output"].splitlines()
    assert f"PATH={env['PATH']}" in seen
    assert not [line for line in seen if "_MEI" in line or "_PYI" in line], seen
    assert [line for line in seen if line.startswith("LD_LIBRARY_PATH=")] == ([] if outer is None else
                                                                             [f"LD_LIBRARY_PATH={outer}"])


class TlsRelay:
    """https://127.0.0.1:PORT in front of the scripted server: TLS with a throwaway
    certificate, relayed as plain bytes to the server's port."""

    def __init__(self, target_port: int, context):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.target_port, self.context = target_port, context
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._relay, args=(conn,), daemon=True).start()

    def _relay(self, conn) -> None:
        try:
            tls = self.context.wrap_socket(conn, server_side=True)
        except OSError:  # a client that refused the certificate
            conn.close()
            return
        with tls, socket.create_connection(("127.0.0.1", self.target_port)) as plain:
            pairs = {tls: plain, plain: tls}
            while True:
                ready = [tls] if tls.pending() else select.select(list(pairs), [], [], 30)[0]
                if not ready:
                    return
                for src in ready:
                    try:
                        data = src.recv(65536)
                    except OSError:
                        return
                    if not data:
                        return
                    pairs[src].sendall(data)

    def close(self) -> None:
        self.sock.close()


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl to make a certificate")
def test_https_with_the_bundled_tls_and_a_clear_error_for_an_unknown_certificate(exe, tmp_path, server):
    """The bundled OpenSSL and requests' CA handling: REQUESTS_CA_BUNDLE trusts a
    throwaway certificate; without it the bundled CA list refuses it, in one clear line."""
    import ssl

    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    relay = TlsRelay(int(server.url.split(":")[2].split("/")[0]), context)
    try:
        server.push(sse_reply(["Over ", "TLS."]))
        argv = [exe, "-p", "hi", "--base-url", f"https://127.0.0.1:{relay.port}/v1", "--model", "test-model",
                "--no-journal"]
        done = run(argv, bare_env(tmp_path, REQUESTS_CA_BUNDLE=str(cert)), tmp_path)
        assert (done.returncode, done.stdout.strip(), done.stderr) == (0, "Over TLS.", "")
        done = run(argv, bare_env(tmp_path), tmp_path)
        assert done.returncode != 0 and done.stdout == ""
        assert "certificate" in done.stderr.lower() and "Traceback" not in done.stderr, done.stderr
    finally:
        relay.close()


def test_the_full_screen_app_a_confirmed_tool_call_the_help_and_a_clean_exit(exe, tmp_path, server, spawn):
    project = tmp_path / "proj"
    project.mkdir()
    content = "".join(f"line {i}\n" for i in range(60))
    server.push(calls_reply(call("write_file", {"path": "made.txt", "content": content})),
                sse_reply(["The ", "**executable** ", "wrote it."]))
    term = spawn([exe, "--base-url", server.url, "--model", "test-model"], env=bare_env(tmp_path), cwd=str(project))
    wait_ready(term, timeout=60)
    assert " idle " in term.status() and " test-model " in term.status(), term.dump()
    assert [p for p in unpacked(tmp_path) if p.startswith("_MEI")]  # unpacked while it runs,
    assert all(stat.S_IMODE((tmp_path / "tmp" / p).stat().st_mode) == 0o700 for p in unpacked(tmp_path))  # privately
    term.type("write made.txt\r")
    wait_confirming(term)
    term.type("v")  # the whole preview in the pager
    term.wait_for(lambda t: t.lines[0].startswith("write_file made.txt") and "lines 1-" in t.lines[0], what="the pager")
    close_whole_preview(term)
    term.type("y")
    term.wait_text("The executable wrote it.", timeout=30)
    term.wait_status("idle")
    assert (project / "made.txt").read_text() == content
    assert "**" not in "\n".join(term.transcript())
    term.send(F1)
    term.wait_text("DashFloat keys")
    term.send("\x1b")
    term.wait_gone("DashFloat keys")
    term.send("\x03")
    term.wait_for(lambda t: "Ctrl-C again quits" in t.status(), what="the quit hint")
    term.send("\x03")
    assert term.wait_exit(timeout=15) == 0
    assert term.left_alternate_screen() and term.bracketed_paste_off()
    assert b"Traceback" not in term.raw and b"[PYI-" not in term.raw
    assert unpacked(tmp_path) == []


def test_ctrl_z_suspends_to_the_shell_and_fg_comes_back(exe, tmp_path):
    """The executable is two processes (the bootloader waits for the one running DashFloat):
    Ctrl-Z must stop both, or the shell never gets the terminal back."""
    with ScriptedServer(models=["m"]) as server:
        env = bare_env(tmp_path, PS1="SHELL$ ")
        term = Term(["bash", "--norc", "--noprofile", "-i"], env, cwd=str(tmp_path))
        try:
            term.wait_text("SHELL$")
            mark = len(term.raw)
            term.type(f"{exe} --base-url {server.url} --model m\r")
            # bash turned bracketed paste on for its own prompt: wait for urwid's, after it
            term.wait_for(lambda t: b"\x1b[?2004h" in t.raw[mark:] and " idle " in t.status(), timeout=60,
                          what="the app running")
            term.type("draft text")
            term.wait_text("draft text")
            mark = len(term.raw)
            term.send("\x1a")
            term.wait_for(lambda t: b"Stopped" in t.raw[mark:], timeout=15, what="the job to stop")
            assert term.raw.rfind(b"\x1b[?1049l") > mark, "the alternate screen was not left on suspend"
            mark = len(term.raw)
            term.type("fg\r")
            # the screen before the suspend is still there: wait for urwid to run again
            term.wait_for(lambda t: b"\x1b[?2004h" in t.raw[mark:], timeout=15, what="the app running again")
            # and drawn again, without a key (the old screen is still in the emulator: the bytes count)
            term.wait_for(lambda t: b" idle " in t.raw[mark:] and b"draft text" in t.raw[mark:], timeout=15,
                          what="the screen drawn again after fg")
            term.wait_status("idle")
            term.wait_text("draft text")
            mark = len(term.raw)
            term.send("\x03")
            term.wait_gone("draft text")
            term.send("\x04")  # Ctrl-D on the empty prompt quits
            term.wait_for(lambda t: b"SHELL$" in t.raw[mark:], timeout=15, what="the shell prompt after quitting")
            assert b"Traceback" not in term.raw and b"[PYI-" not in term.raw
        finally:
            term.close()
    assert unpacked(tmp_path) == []


def test_the_built_executable_is_reproducible(built_exe, tmp_path):
    """Building it again gives the same bytes (a second build: only when asked)."""
    if os.environ.get("DASHFLOAT_EXE_REBUILD") != "1":
        pytest.skip("a second build takes ~30 s: DASHFLOAT_EXE_REBUILD=1 runs it")
    again = exebuild.build_exe(tmp_path / exebuild.NAME)
    assert again.read_bytes() == built_exe.read_bytes()


@pytest.mark.skipif(sshd_missing() is not None, reason=sshd_missing() or "")
def test_copied_with_scp_run_through_ssh_and_gone_when_the_link_is_cut(built_exe, remote, sshd, server, tmp_path):
    """What the README says: `scp dist/dashfloat-x86_64 host:` then `ssh -t host
    ./dashfloat-x86_64`, into an empty directory, with no python on the server's PATH. A cut
    link ends both of its processes within 2 s, without a crash, and removes what it unpacked."""
    from tests.e2e.test_ssh import cut_and_check
    from tests.sshd import scp_argv

    target = remote.tmp / "empty"
    target.mkdir()
    done = subprocess.run(scp_argv(sshd, str(built_exe), str(target), port=remote.link.port),
                          env=remote.client_env(None, None), stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    assert [p.name for p in target.iterdir()] == [exebuild.NAME]
    assert (target / exebuild.NAME).read_bytes() == built_exe.read_bytes()
    server.push(sse_reply(["Hello ", "through ", "ssh."]))
    bare = bare_env(tmp_path)
    command = remote_command([f"./{exebuild.NAME}", "--base-url", server.url, "--model", "test-model"],
                             env=remote.env(PATH=bare["PATH"], TMPDIR=bare["TMPDIR"]), cwd=str(target))
    t = Term(sshd.ssh_argv(command, port=remote.link.port), remote.client_env("xterm-256color", "C.UTF-8"))
    t.child.delaybeforesend = None
    remote.terms.append(t)
    wait_ready(t, timeout=60)
    t.type("hi\r")
    t.wait_text("Hello through ssh.")
    t.wait_status("idle")
    assert len(remote.alive()) == 2, "the bootloader and DashFloat"
    assert unpacked(tmp_path)
    cut_and_check(remote, t)
    assert wait_until(lambda: not unpacked(tmp_path), timeout=2.0), unpacked(tmp_path)
