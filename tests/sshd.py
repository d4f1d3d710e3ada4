"""A throwaway OpenSSH server for the tests: the real `sshd`, as the current user, on 127.0.0.1.

    reason = missing()            # None, or one line saying why ssh tests cannot run here
    with Sshd(tmp_dir) as sshd:   # host and client keys, config, sshd -D -e -f CONFIG
        argv = sshd.ssh_argv("echo hi", port=link.port)   # ssh -tt ... through a LinkProxy

Everything lives in `tmp_dir`: keys, authorized_keys, the config, the pid file and a home for
the login (so the real user's shell start-up files are not read). Public-key login only.
Run as root, sshd needs its privilege-separation directory /run/sshd; when it is missing,
sshd runs in a private mount namespace with a tmpfs on /run (`unshare -m`), so nothing outside
`tmp_dir` is created. `stop()` ends sshd by its pid (every session with it: sshd's session
processes are its children) and removes nothing the caller did not create.
"""

from __future__ import annotations

import os
import pwd
import shlex
import shutil
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

SSHD = "/usr/sbin/sshd"


def missing() -> str | None:
    """Why the ssh tests cannot run on this machine (one line), or None."""
    sshd = shutil.which("sshd") or (SSHD if os.access(SSHD, os.X_OK) else None)
    if not sshd:
        return "OpenSSH's sshd is not installed (apt-get install openssh-server); ssh tests skipped"
    for tool in ("ssh", "ssh-keygen"):
        if not shutil.which(tool):
            return f"{tool} is not installed (apt-get install openssh-client); ssh tests skipped"
    if os.geteuid() == 0 and not os.path.isdir("/run/sshd") and not shutil.which("unshare"):
        return "sshd as root needs /run/sshd (or unshare to make one privately); ssh tests skipped"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Sshd:
    """sshd for one test module: started by start() (or `with`), stopped by stop()."""

    def __init__(self, base: Path):
        self.base = Path(base)
        self.home = self.base / "home"
        self.user = pwd.getpwuid(os.geteuid()).pw_name
        self.port = 0
        self.proc: subprocess.Popen | None = None
        self.output: list[str] = []  # sshd's own log lines (-e: to stderr)
        self._listening = threading.Event()

    # ---- lifecycle -----------------------------------------------------------------------
    def start(self, timeout: float = 10.0) -> Sshd:
        self.base.mkdir(parents=True, exist_ok=True)
        self.home.mkdir(exist_ok=True)
        self.base.chmod(0o700)
        for name in ("host_key", "client_key"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "dashfloat-test",
                            "-f", str(self.base / name)], check=True, stdin=subprocess.DEVNULL)
        keys = self.base / "authorized_keys"
        keys.write_text((self.base / "client_key.pub").read_text())
        keys.chmod(0o600)
        self.port = free_port()
        sshd = shutil.which("sshd") or SSHD
        (self.base / "sshd_config").write_text(self.config())
        argv = [sshd, "-D", "-e", "-f", str(self.base / "sshd_config")]
        if os.geteuid() == 0 and not os.path.isdir("/run/sshd"):
            # the privilege-separation directory, privately: a tmpfs on /run seen by sshd only
            argv = ["unshare", "-m", "--propagation", "private", "sh", "-c",
                    "mount -t tmpfs -o mode=0755 dashfloat-test /run && mkdir -m 0755 /run/sshd"
                    " && exec \"$@\"", "sshd", *argv]
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        threading.Thread(target=self._read_output, daemon=True, name="sshd-output").start()
        if not self._listening.wait(timeout):
            self.stop()
            raise RuntimeError("sshd did not start:\n" + "\n".join(self.output[-20:]))
        return self

    def _read_output(self) -> None:
        assert self.proc and self.proc.stdout
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip()
            self.output.append(line)
            if "Server listening" in line:
                self._listening.set()

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)  # sshd's own group (the listener)
            except ProcessLookupError:
                pass
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)

    def __enter__(self) -> Sshd:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def config(self) -> str:
        b = self.base
        lines = [
            "ListenAddress 127.0.0.1",
            f"Port {self.port}",
            f"HostKey {b / 'host_key'}",
            f"AuthorizedKeysFile {b / 'authorized_keys'}",
            f"PidFile {b / 'sshd.pid'}",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "AuthenticationMethods publickey",
            "PubkeyAuthentication yes",
            "UsePAM no",
            "StrictModes no",
            "PrintMotd no",
            "PrintLastLog no",
            "PermitUserEnvironment no",
            "AcceptEnv LANG LC_* DASHFLOAT_*",
            # a home of the test's: no shell start-up file of the real user's is read (Debian's
            # bash reads ~/.bashrc when sshd starts it), nothing is written to the real home
            f"SetEnv HOME={self.home}",
            "ClientAliveInterval 0",
            "LogLevel INFO",
        ]
        sftp = next((p for p in ("/usr/lib/openssh/sftp-server", "/usr/lib/sftp-server",
                                 "/usr/libexec/openssh/sftp-server") if os.access(p, os.X_OK)), None)
        if sftp:  # scp speaks SFTP since OpenSSH 9
            lines.append(f"Subsystem sftp {sftp}")
        if os.geteuid() == 0:
            lines.append("PermitRootLogin prohibit-password")
        return "\n".join(lines) + "\n"

    # ---- the client ----------------------------------------------------------------------
    def ssh_argv(self, command: str | None, *, port: int | None = None, tty: bool = True,
                 send_env: tuple[str, ...] = ("LANG", "LC_*")) -> list[str]:
        """`ssh` to this server (at `port`, e.g. a LinkProxy's, else sshd's own) running
        `command` (a shell command line; None: a login shell). `tty`: -tt (a pty even when
        the client's stdin is not a terminal), else -T (none)."""
        argv = ["ssh", "-tt" if tty else "-T", "-F", "/dev/null",
                "-i", str(self.base / "client_key"), "-p", str(port or self.port),
                "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes",
                "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
                "-o", "LogLevel=ERROR", "-o", "ServerAliveInterval=0",
                "-o", "ControlMaster=no", "-o", "ControlPath=none"]
        for var in send_env:
            argv += ["-o", f"SendEnv={var}"]
        argv.append(f"{self.user}@127.0.0.1")
        if command is not None:
            argv.append(command)
        return argv


def scp_argv(sshd: Sshd, source: str, dest_dir: str, *, port: int | None = None) -> list[str]:
    """`scp SOURCE user@host:DEST_DIR/` to this server (at `port`, e.g. a LinkProxy's)."""
    return ["scp", "-q", "-F", "/dev/null", "-i", str(sshd.base / "client_key"), "-P", str(port or sshd.port),
            "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "StrictHostKeyChecking=no",
            "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
            source, f"{sshd.user}@127.0.0.1:{dest_dir}/"]


def remote_command(argv: list[str], *, env: dict[str, str] | None = None, unset: tuple[str, ...] = (),
                   cwd: str | None = None) -> str:
    """The shell line that runs `argv` on the server with `env` added (and `unset` removed),
    in `cwd`: exec'd, so the program is the session's process, as `ssh host prog` gives."""
    parts = []
    if cwd:
        parts.append(f"cd {shlex.quote(cwd)} &&")
    parts.append("exec env")
    for var in unset:
        parts += ["-u", shlex.quote(var)]
    for key, value in (env or {}).items():
        parts.append(shlex.quote(f"{key}={value}"))
    parts += [shlex.quote(a) for a in argv]
    return " ".join(parts)


def environ_of(pid: int) -> dict[str, str]:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            raw = f.read()
    except OSError:
        return {}
    out = {}
    for item in raw.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep:
            out[key.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
    return out


def marked(var: str, value: str) -> list[int]:
    """Pids of live (not zombie) processes whose environment has var=value: on the server,
    everything a session started, whatever detached (setsid, double forks keep the env)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                raw = f.read()
        except OSError:
            continue
        if raw[raw.rfind(b")") + 2 :][:1] in (b"Z", b"X"):
            continue
        if environ_of(int(name)).get(var) == value:
            found.append(int(name))
    return found


def wait_until(pred, timeout: float, interval: float = 0.01):
    """Poll `pred` until truthy or `timeout`; returns its last value."""
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)
