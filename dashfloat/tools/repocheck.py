"""Repository config must not run programs behind a command that runs without a question.

Issue 14 section 5. A cloned repository, an unpacked tarball, or a directory the model wrote
into is untrusted input, and git runs the programs its config names: ``git status`` runs
core.fsmonitor, the post-index-change hook and the clean filter of a driver that
.gitattributes names; ``git diff`` runs diff.external, textconv and diff.<driver>.command;
``git log`` runs gpg.program when log.showSignature is set; an alias runs anything; a ``.git``
file may point anywhere, and a directory that merely looks like a bare repository is one.
So a command that an allow rule lets run without a question goes through `check`, which
returns a `Verdict`:

- ``env``: changes to the command's environment. Git config given in the environment
  (GIT_CONFIG_COUNT, GIT_CONFIG_KEY_n, GIT_CONFIG_VALUE_n: git's "command" scope, read after
  every config file) for the program-running keys that git reads under one fixed name
  (`FIXED`): safe.bareRepository=explicit and core.hooksPath always, the others when the
  repository's config sets them. Each gets the value of the user's own config (system,
  global, the environment) when that sets one, else a value that runs nothing. The
  environment reaches every git the command starts, submodules included. GIT_PAGER and
  PAGER are cat (there is no terminal anyway); LESSOPEN and LESSCLOSE are removed, so ``less``
  runs no input preprocessor on a repository's files.
- ``reasons``: why the call must ask instead. For a command that runs git, every repository
  it would use (the working directory's, those of ``git -C``, ``cd``, ``env -C`` and
  ``sudo -D`` targets, and their populated submodules, recursively) is read with git itself, in the same environment
  (``git rev-parse``, ``git config --list --show-scope --show-origin``, ``git ls-files
  --stage``: plumbing that runs no configured program). It asks for: a program that the
  repository's own config (or any config file inside the working directory) names under a
  per-driver name that no fixed override can reach (filter.<x>.clean, diff.<x>.textconv,
  merge.<x>.driver, remote.<x>.uploadpack, an alias when the git command is not built in, a
  value that starts with ``!``: `untrusted_program`); a git directory outside the working
  directory that is not an enclosing repository's, a linked worktree's or a submodule's (a
  ``.git`` file's ``gitdir:``); a work tree that does not contain the directory git runs in
  (core.worktree); a command that sets GIT_* variables or names --git-dir / --work-tree; a
  command whose directories are only known when it runs, or that runs git through a wrapper
  that goes where the check cannot follow (``sudo -i``, ``su -``, ``chroot``...); ``--bare``;
  what the git directory itself holds that git acts on (`_git_dir_reasons`: symbolic links
  out of it, alternates outside, a rebase in progress that would run an ``exec`` line or a
  strategy, linked worktrees outside for ``git worktree``); a work tree outside around a
  git directory inside; config keys naming files outside (`_PATH_KEYS`); ``git init`` /
  ``clone`` writing outside; a command that talks to a repository on this machine, where
  git runs git with that repository's config and hooks, or with the repository's own
  connection settings (`_transport_reasons`); an alias git runs itself (``remote-*``,
  ``merge-*``, ``credential-*``); and anything git cannot read (fail closed).

`check` only reads, bounded in time and size. The pipeline runs it after the rules and the
hooks, on an allowed call only, and it can only tighten (allow -> ask).
"""

from __future__ import annotations

import os
import re
import selectors
import shlex
import shutil
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from dashfloat.textsafe import visible
from dashfloat.tools import rules

__all__ = ["WHO", "FIXED", "Verdict", "check", "describe", "untrusted_program", "config_env"]

WHO = "repository check (git)"

MIN_GIT = (2, 38)  # GIT_CONFIG_COUNT came in 2.31, safe.bareRepository in 2.38
PROBE_TIMEOUT = 5.0  # seconds for all the git runs of one check together
MAX_REPOSITORIES = 16  # repositories read for one command, submodules included
MAX_DEPTH = 4  # submodules of submodules of ...
MAX_CONFIG_BYTES = 4 * 1024 * 1024  # `git config --list` output read at most
MAX_SHOWN = 3  # findings named in a reason; the rest are counted
_VALUE_CHARS = 100

# Keys git reads under one fixed name that name a program (lower case, as git prints them),
# with the value that runs nothing, used when the user's own config sets none. None: no such
# value exists (an empty diff.external is run as a command), so the repository setting one
# makes the call ask, unless the user's own config sets one.
FIXED: dict[str, str | None] = {
    "core.fsmonitor": "false",
    "core.hookspath": os.devnull,  # the default, <gitdir>/hooks, is the repository's own
    "core.pager": "cat",
    "core.editor": ":",  # git's "do not edit"
    "sequence.editor": ":",
    "core.sshcommand": "ssh",
    "core.askpass": "",  # empty: no askpass program
    "credential.helper": "",  # empty: the list of helpers is emptied
    "gpg.program": "gpg",
    "gpg.openpgp.program": "gpg",
    "gpg.x509.program": "gpgsm",
    "gpg.ssh.program": "ssh-keygen",
    "gpg.ssh.defaultkeycommand": None,
    "diff.external": None,
    "protocol.ext.allow": "never",  # ext:: runs a command named by the URL
}
_FORCED = {"safe.barerepository": "explicit"}  # a directory that looks like a bare repository
_SAME = {"gpg.openpgp.program": "gpg.program"}  # two names of one setting
# An environment variable of the user's that takes precedence over a FIXED key with no
# neutral value: when it is set, the repository's value is never used.
_ENV_FIRST = {"diff.external": "GIT_EXTERNAL_DIFF"}

# Keys with a per-driver (or per-remote, per-tool...) name that name a program: no single
# override reaches them all, so the repository setting one makes the call ask.
_PROGRAM_KEYS = (
    "filter.*.clean", "filter.*.smudge", "filter.*.process",
    "diff.*.textconv", "diff.*.command", "merge.*.driver",
    "remote.*.uploadpack", "remote.*.receivepack", "remote.*.vcs", "core.gitproxy",
    "core.alternaterefscommand", "credential.*.helper", "uploadpack.packobjectshook",
    "interactive.difffilter", "sendemail.smtpserver", "sendemail.*.smtpserver",
    "man.*.cmd", "man.*.path", "browser.*.cmd", "browser.*.path", "instaweb.httpd",
    "lfs.customtransfer.*.path", "lfs.extension.*.clean", "lfs.extension.*.smudge",
    "hook.*.command", "tar.*.command", "trailer.*.command", "trailer.*.cmd",
    "difftool.*.path", "mergetool.*.path",  # the program git difftool/mergetool runs
)
# the tool git difftool/mergetool runs: a name with a "/" sources a file (`. $dir/$tool`)
_TOOL_NAMES = ("diff.tool", "diff.guitool", "merge.tool", "merge.guitool")
# ... and, failing closed for keys not listed: a variable name that ends like one of these
_PROGRAM_SUFFIXES = ("cmd", "command", "program", "helper", "driver", "textconv", "tunnel",
                     "hook", "editor", "askpass", "clean", "smudge", "process")
# pager.<command> names a program, but GIT_PAGER (set for every command) takes precedence
_NEUTRALISED_BY_ENV = ("pager.*",)
# what `git lfs install --local` writes: git-lfs from PATH, as with a global install
_KNOWN_SAFE = {
    ("filter.lfs.clean", "git-lfs clean -- %f"),
    ("filter.lfs.smudge", "git-lfs smudge -- %f"),
    ("filter.lfs.process", "git-lfs filter-process"),
}

_TRUSTED_SCOPES = ("system", "global", "command")
_LESS_VARS = ("LESSOPEN", "LESSCLOSE")
_GIT_ENV_WORD = re.compile(r"^GIT_[A-Za-z0-9_]*=")
# git's own options, before its command: those that take the next word as their value (the
# long ones also `--name=value`), and those that take none (`--exec-path` and `--list-cmds`
# only `=value`). Any other option there asks: it might take the next word, and then the
# command is not the word it seems (`git --shallow-file log -c alias.x=!cmd x` ran x).
_GIT_VALUE_OPTIONS = ("-C", "-c", "--config-env", "--git-dir", "--work-tree", "--namespace",
                      "--super-prefix", "--attr-source", "--shallow-file")
_GIT_FLAGS = frozenset((
    "-v", "--version", "-h", "--help", "-p", "--paginate", "-P", "--no-pager", "--no-replace-objects",
    "--no-lazy-fetch", "--no-optional-locks", "--no-advice", "--bare", "--literal-pathspecs",
    "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs", "--no-literal-pathspecs",
    "--html-path", "--man-path", "--info-path", "--exec-path",
))


def git_command_at(argv: Sequence[str]) -> tuple[int, str | None]:
    """(where git's command is in `argv`, len(argv) if none; the first of git's own options
    before it that is not known here, or None). The one reader of git's own options: where
    an unknown one stands, the command may be another word (the caller asks)."""
    i, unknown = 1, None
    while i < len(argv):
        word = argv[i]
        if word in _GIT_VALUE_OPTIONS:
            i += 2
        elif word.startswith("-"):
            known = word in _GIT_FLAGS or (word.startswith("--") and "=" in word and word.split("=", 1)[0]
                                           in (*_GIT_VALUE_OPTIONS, "--exec-path", "--list-cmds"))
            unknown = unknown or (None if known else word)
            i += 1
        else:
            break
    return min(i, len(argv)), unknown


def unknown_git_option(argv: Sequence[str]) -> str | None:
    """The first of git's own options before its command that is not known here, or None."""
    return git_command_at(argv)[1]


_CD = ("cd", "pushd")
# Wrappers that run their command in another directory, by name: (options naming the
# directory, as `cd` would: the repository check follows them; options taking a value;
# options that put the command where the check cannot follow: a login's home, another
# root, a namespace's directory: the call asks). None: always somewhere else.
_WRAPPER_DIRS: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]] | None] = {
    "env": (("-C", "--chdir"), ("-u", "--unset", "-S", "--split-string"), ()),
    "sudo": (("-D", "--chdir"),
             ("-u", "--user", "-g", "--group", "-h", "--host", "-p", "--prompt", "-C", "--close-from",
              "-r", "--role", "-t", "--type", "-T", "--command-timeout", "-U", "--other-user"),
             ("-i", "--login", "-R", "--chroot")),
    "su": ((), ("-c", "--command", "-s", "--shell", "-g", "--group", "-G", "--supp-group", "-w",
                "--whitelist-environment"), ("-", "-l", "--login")),
    "runuser": ((), ("-u", "--user", "-c", "--command", "-s", "--shell", "-g", "--group", "-G",
                     "--supp-group", "-w", "--whitelist-environment"), ("-", "-l", "--login")),
    "nsenter": ((), ("-t", "--target", "-S", "--setuid", "-G", "--setgid"), ("-w", "--wd", "-r", "--root")),
    "unshare": ((), ("--setuid", "--setgid", "--map-user", "--map-group"), ("--wd", "-R", "--root")),
    "systemd-run": None, "chroot": None, "firejail": None, "flatpak-spawn": None,
}
# Wrappers whose getopt permutes: an option counts wherever it is before "--" (`su root -l`
# is a login); the others stop at the first word that is not an option.
_PERMUTING = frozenset(("su", "runuser"))


@dataclass(frozen=True)
class Verdict:
    """What `check` found: environment changes for the run (a value of None removes the
    variable) and the reasons to ask instead (none: the command may run)."""

    env: dict[str, str | None] = field(default_factory=dict)
    reasons: tuple[str, ...] = ()


def describe(reasons: Iterable[str]) -> str:
    """The reasons as one sentence for the question and `policy check`."""
    return "; ".join(reasons)


# -- the environment ----------------------------------------------------------------------


def config_env(pairs: Iterable[tuple[str, str]], environ: Mapping[str, str]) -> dict[str, str]:
    """GIT_CONFIG_COUNT / _KEY_n / _VALUE_n for `pairs`, after those already in `environ`
    (the user's own stay, and ours come later, so they win)."""
    try:
        start = max(0, int(environ.get("GIT_CONFIG_COUNT", "0") or 0))
    except ValueError:
        start = 0  # git refuses a bogus count whatever we add
    out: dict[str, str] = {}
    n = start
    for key, value in pairs:
        out[f"GIT_CONFIG_KEY_{n}"] = key
        out[f"GIT_CONFIG_VALUE_{n}"] = value
        n += 1
    out["GIT_CONFIG_COUNT"] = str(n)
    return out


def neutral_env(entries: list[_Entry], root_real: str, environ: Mapping[str, str]) -> dict[str, str]:
    """The environment changes that neutralise every FIXED key (module docstring), whichever
    repository (a submodule's, a `git -C` target's) would set it: the user's own value where
    their config sets one, else the value that runs nothing (or git's default, where that is
    a program of the user's: ssh, gpg, SSH_ASKPASS)."""
    trusted: dict[str, list[str]] = {}
    for e in entries:
        if e.value is not None and _trusted(e, root_real, ()):
            key = e.key.lower()
            trusted.setdefault(_SAME.get(key, key), []).append(e.value)
    pairs: list[tuple[str, str]] = list(_FORCED.items())
    env: dict[str, str] = {}
    for key, neutral in FIXED.items():
        own = trusted.get(_SAME.get(key, key))
        if key == "credential.helper":  # a list: empty it, then the user's own again
            pairs.append((key, ""))
            pairs.extend((key, v) for v in own or () if v)
            continue
        if key == "core.sshcommand" and not own and environ.get("GIT_SSH"):
            env["GIT_SSH_COMMAND"] = environ.get("GIT_SSH_COMMAND") or shlex.quote(environ["GIT_SSH"])
            continue
        if key == "core.askpass":
            neutral = environ.get("SSH_ASKPASS", "")  # what git falls back to without one
        if own:
            pairs.append((key, own[-1]))
        elif neutral is not None:
            pairs.append((key, neutral))
    env.update(config_env(pairs, environ))
    return env


def _unneutralised(entries: list[_Entry], root_real: str, environ: Mapping[str, str],
                   gitdir: str) -> list[str]:
    """FIXED keys with no value that runs nothing (diff.external...) that the repository sets
    while the user's own config and environment do not: findings."""
    own = {e.key.lower() for e in entries if _trusted(e, root_real, (gitdir,))}
    out = []
    for e in entries:
        key = e.key.lower()
        if FIXED.get(key, "") is None and key not in own and _ENV_FIRST.get(key) not in environ \
                and not _trusted(e, root_real, (gitdir,)):
            out.append(_finding(e, root_real))
    return out


def _trusted(e: _Entry, root_real: str, untrusted_dirs: tuple[str, ...]) -> bool:
    """A value from the user's own config: system, global or the environment, from a file
    outside the working directory and outside every repository being checked."""
    if e.scope not in _TRUSTED_SCOPES:
        return False
    if e.scope == "command":
        return e.key.lower() not in _FORCED  # (the probe's own override)
    path = e.path
    if path is None:
        return False  # a blob, stdin...: not a file of the user's
    return not any(_inside(path, d) for d in (root_real, *untrusted_dirs))


def untrusted_program(key: str, value: str | None) -> bool:
    """Whether a key set by the repository's own config names a program that no fixed
    override neutralises (FIXED keys and pager.* are neutralised; aliases are judged apart)."""
    low = key.lower()
    if low in FIXED or low in _FORCED or low.startswith("alias."):
        return False
    if any(fnmatchcase(low, p) for p in _NEUTRALISED_BY_ENV):
        return False
    if (low, value) in _KNOWN_SAFE:
        return False
    if value is not None and value.lstrip().startswith("!"):
        return True
    if any(fnmatchcase(low, p) for p in _PROGRAM_KEYS):
        return True
    if low in _TOOL_NAMES:
        return value is None or "/" in value or "\\" in value
    return low.rsplit(".", 1)[-1].endswith(_PROGRAM_SUFFIXES)


# -- reading git's view -------------------------------------------------------------------


@dataclass(frozen=True)
class _Entry:
    scope: str
    origin: str
    key: str
    value: str | None
    path: str | None  # the origin's file (real path), if it is one


class _Unreadable(Exception):
    """git could not tell us something we need: the call asks (str() says what)."""


class _Probe:
    """Runs git's read-only plumbing in the environment the command will get."""

    def __init__(self, git: str, environ: Mapping[str, str], timeout: float | None = None) -> None:
        self.git = git
        self.env = dict(environ)
        self.env.update(config_env(
            [*_FORCED.items(), ("core.fsmonitor", "false"), ("core.hookspath", os.devnull)], environ))
        self.env.update({"LC_ALL": "C", "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0",
                         "GIT_PAGER": "cat", "PAGER": "cat"})
        self.config_env = dict(environ)  # for `git config --list`: only our forced key added
        self.config_env.update(config_env(_FORCED.items(), environ))
        self.config_env.update({"LC_ALL": "C", "GIT_OPTIONAL_LOCKS": "0"})
        self.deadline = time.monotonic() + (PROBE_TIMEOUT if timeout is None else timeout)

    def run(self, args: list[str], cwd: str, *, env=None, limit: int = MAX_CONFIG_BYTES,
            keep=None) -> tuple[int, bytes, str]:
        """(exit status, stdout, first line of stderr). `keep(chunk_records)` filters
        NUL-separated records as they arrive (for large listings); _Unreadable past the
        time budget or `limit` bytes kept."""
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise _Unreadable("git took too long to read the repository")
        try:
            proc = subprocess.Popen([self.git, *args], cwd=cwd, env=env or self.env,
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, close_fds=True, start_new_session=True)
        except OSError as exc:
            raise _Unreadable(f"could not run git: {exc.strerror or exc}") from None
        out = bytearray()
        pending = b""
        try:
            assert proc.stdout is not None
            with selectors.DefaultSelector() as sel:
                sel.register(proc.stdout, selectors.EVENT_READ)
                while True:
                    left = self.deadline - time.monotonic()
                    if left <= 0:
                        raise _Unreadable("git took too long to read the repository")
                    if not sel.select(left):
                        continue
                    chunk = os.read(proc.stdout.fileno(), 65536)
                    if not chunk:
                        break
                    if keep is None:
                        out += chunk
                    else:
                        records = (pending + chunk).split(b"\0")
                        pending = records.pop()
                        out += b"".join(r + b"\0" for r in records if keep(r))
                    if len(out) > limit:
                        raise _Unreadable("git's answer about the repository is too large")
            err = proc.stderr.read(4096) if proc.stderr is not None else b""
            status = proc.wait(max(0.1, self.deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise _Unreadable("git took too long to read the repository") from None
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            for f in (proc.stdout, proc.stderr):
                if f is not None:
                    f.close()
        if pending and keep is not None and keep(pending):
            out += pending
        line = err.decode("utf-8", "replace").strip().splitlines()
        return status, bytes(out), (line[0] if line else "")

    def config(self, cwd: str) -> list[_Entry]:
        status, out, err = self.run(["config", "--list", "-z", "--show-scope", "--show-origin"],
                                    cwd, env=self.config_env)
        if status != 0:
            raise _Unreadable(f"git cannot read the config: {err or f'exit status {status}'}")
        return _parse_config(out, cwd)

    def config_file(self, path: str, cwd: str) -> list[_Entry]:
        """One config file's entries, its includes not followed (_include_reasons follows them,
        whatever their conditions: git would evaluate a nested one as it is now)."""
        status, out, err = self.run(["config", "--list", "-z", "--show-scope", "--show-origin",
                                     "--file", path], cwd, env=self.config_env)
        if status != 0:
            raise _Unreadable(f"git cannot read the config {visible(path)}: {err or f'exit status {status}'}")
        return _parse_config(out, cwd)

    def about(self) -> _About:
        """This git's version and built-in commands (cached while the binary is the same)."""
        try:
            st = os.stat(self.git)
            ident = (self.git, st.st_ino, st.st_mtime_ns, st.st_size)
        except OSError:
            ident = None
        if ident is not None and ident in _ABOUT:
            return _ABOUT[ident]
        status, out, _ = self.run(["--version"], "/")
        found = re.search(rb"(\d+)\.(\d+)", out) if status == 0 else None
        version = (int(found[1]), int(found[2])) if found else (0, 0)
        status, out, _ = self.run(["--list-cmds=builtins"], "/")
        names = frozenset(out.decode("utf-8", "replace").split()) if status == 0 else frozenset()
        about = _About(version, names)
        if ident is not None:
            _ABOUT.clear()
            _ABOUT[ident] = about
        return about


@dataclass(frozen=True)
class _About:
    version: tuple[int, int]
    builtins: frozenset[str]


_ABOUT: dict[tuple, _About] = {}


def _parse_config(out: bytes, cwd: str) -> list[_Entry]:
    """`git config --list -z --show-scope --show-origin`: scope NUL origin NUL key [LF value] NUL."""
    fields = out.decode("utf-8", "surrogateescape").split("\0")
    if fields and fields[-1] == "":
        fields.pop()
    if len(fields) % 3:
        raise _Unreadable("git's config listing could not be parsed")
    entries = []
    for i in range(0, len(fields), 3):
        scope, origin, pair = fields[i:i + 3]
        key, sep, value = pair.partition("\n")
        path = None
        if origin.startswith("file:"):
            path = os.path.realpath(os.path.join(cwd, origin[5:]))
        entries.append(_Entry(scope, origin, key, value if sep else None, path))
    return entries


# -- the check ------------------------------------------------------------------------------


def check(command: str, cwd: str, root: str, *, environ: Mapping[str, str] | None = None,
          timeout: float | None = None) -> Verdict:
    """The environment for running `command` in `cwd` without a question, and the reasons
    (if any) to ask instead (module docstring). `timeout` bounds all its git runs together
(default PROBE_TIMEOUT).
    Never raises."""
    from dashfloat.tools import exec as _exec

    environ = dict(os.environ if environ is None else environ)
    command_env = {**environ, **_exec.ENV_OVERRIDES}
    env: dict[str, str | None] = {"GIT_PAGER": "cat", "PAGER": "cat"}
    env.update(dict.fromkeys(_LESS_VARS))
    root_real = os.path.realpath(root)
    git = shutil.which("git", path=command_env.get("PATH"))
    if git is None:  # no git: no git config to neutralise, and a git command fails to start
        env.update(config_env(_FORCED.items(), environ))
        return Verdict(env, ())
    analysis = rules.analyze_command(command)
    runs_git = _runs_git(analysis)
    probe = _Probe(git, command_env, timeout)
    reasons: list[str] = []
    try:
        entries = probe.config(cwd)
    except _Unreadable as exc:
        entries = []  # the user's own values unknown: every key gets the value that runs nothing
        if runs_git:
            reasons.append(str(exc))
    env.update(neutral_env(entries, root_real, environ))
    if runs_git:
        try:
            if probe.about().version < MIN_GIT:
                reasons.append("this git is older than {}.{}: it would ignore the settings that keep "
                               "a repository from running programs".format(*MIN_GIT))
            reasons.extend(_check_repositories(analysis, cwd, root_real, probe, environ))
        except _Unreadable as exc:
            reasons.append(str(exc))
    return Verdict(env, tuple(dict.fromkeys(reasons)))


def _git_argvs(a: rules.Analysis) -> list[list[str]]:
    return [argv for argv in a.candidates if argv and _is_git(argv[0])]


def _is_git(word: str) -> bool:
    base = word.rstrip("/").rsplit("/", 1)[-1]
    return base == "git" or base.startswith("git-")


def runs_git(command: str) -> bool:
    """Whether a command line runs git (by name, as rules.analyze_command reads it)."""
    return _runs_git(rules.analyze_command(command))


def _runs_git(a: rules.Analysis) -> bool:
    return bool(_git_argvs(a)) or any(_is_git(w) for w in set(a.loose_words))


def _git_options(argv: list[str]) -> tuple[list[str], str | None, str | None]:
    """(the -C directories in order, the git command's name, a reason to ask) for one argv."""
    dirs: list[str] = []
    i = 1
    while i < len(argv):
        word = argv[i]
        name = word.split("=", 1)[0]
        if name in ("--git-dir", "--work-tree"):
            return dirs, None, f"it names another git directory or work tree ({word})"
        if word == "--bare":
            return dirs, None, "it makes the directory git runs in its git directory (--bare)"
        if word in _GIT_VALUE_OPTIONS:
            if i + 1 >= len(argv):
                return dirs, None, None
            if word == "-C":
                dirs.append(argv[i + 1])
            i += 2
            continue
        if word.startswith("-"):
            if git_command_at(["git", word])[1]:
                return dirs, None, (f"git's option {visible(word)} is not one DashFloat knows: it may take "
                                    "the next word, and git's command is then another")
            i += 1
            continue
        return dirs, word, None
    return dirs, None, None


def _wrapper_dir(argv: list[str]) -> tuple[str | None, str | None]:
    """(the directory a wrapper runs its command in, relative to where it runs; a reason to
    ask) for an argv whose first word is in _WRAPPER_DIRS: (None, None) when it stays."""
    name = argv[0].rstrip("/").rsplit("/", 1)[-1]
    spec = _WRAPPER_DIRS[name]
    if spec is None:
        return None, f"{name} runs its command somewhere the repository check cannot follow"
    chdir, takes, elsewhere = spec
    found: str | None = None

    def away(word: str) -> tuple[str | None, str]:
        return found, f"{name} {word} runs its command somewhere the repository check cannot follow"

    i = 1
    while i < len(argv):
        word = argv[i]
        if word in ("-", "--") or not word.startswith("-"):
            if word in elsewhere:
                return away(word)  # su - (a login)
            if name in _PERMUTING and word != "--":
                i += 1  # su's user: its options may follow
                continue
            # the command, or what comes before it and ends the options: env's - (an empty
            # environment), env's and sudo's NAME=VALUE
            break
        if word.startswith("--"):
            option, eq, value = word.partition("=")
            if option in elsewhere:
                return away(word)
            if option in chdir or option in takes:
                if not eq:
                    if i + 1 >= len(argv):
                        break
                    i += 1
                    value = argv[i]
                if option in chdir:
                    found = value if found is None else os.path.join(found, value)
            i += 1
            continue
        for k in range(1, len(word)):  # a cluster of short options: -iu root, -Cdir, -D dir
            option = "-" + word[k]
            if option in elsewhere:
                return away(word)
            if option in chdir or option in takes:
                value = word[k + 1 :]
                if not value:
                    if i + 1 >= len(argv):
                        return found, None
                    i += 1
                    value = argv[i]
                if option in chdir:
                    found = value if found is None else os.path.join(found, value)
                break
        i += 1
    return found, None


def _cd_targets(a: rules.Analysis, cwd: str, environ: Mapping[str, str]) -> tuple[list[str], str | None]:
    out = []
    for argv in a.candidates:
        if argv and argv[0].rstrip("/").rsplit("/", 1)[-1] in _WRAPPER_DIRS:
            target, why = _wrapper_dir(argv)
            if why:
                return out, why
            if target is not None:
                out.append(os.path.join(cwd, target))
            continue
        if not argv or argv[0] not in _CD:
            continue
        rest = [w for w in argv[1:] if w not in ("-P", "-L", "-e", "-@", "--")]
        if not rest:
            home = environ.get("HOME")
            if not home:
                return out, "it changes to a directory known only when it runs"
            out.append(home)
        elif rest[0] == "-" or rest[0].startswith(("+", "-")):
            return out, "it changes to a directory known only when it runs"
        else:
            out.append(os.path.join(cwd, rest[0]))
    return out, None


def _check_repositories(a: rules.Analysis, cwd: str, root_real: str, probe: _Probe,
                        environ: Mapping[str, str]) -> list[str]:
    reasons: list[str] = []
    if a.opaque:
        return ["some of its words are known only when it runs, so which repository git would "
                "use and what it would run cannot be checked"]
    if any(_GIT_ENV_WORD.match(w) for w in a.words):
        reasons.append("it sets git's environment (GIT_...=)")
    bases, why = _cd_targets(a, cwd, environ)
    if why:
        reasons.append(why)
    bases = [cwd, *bases]
    dirs: list[str] = []
    aliases_matter = False
    argvs = _git_argvs(a) or [["git"]]
    writes = writes_tree = transports = worktree = False
    dir_names: list[tuple[str, str]] = []
    at_top: list[tuple[str, str]] = []
    for argv in argvs:
        c_dirs, sub, why = _git_options(argv)
        writes |= sub not in _READS_ONLY
        writes_tree |= sub not in _KEEPS_THE_WORK_TREE
        action = argv[argv.index(sub) + 1:][:1] if sub == "worktree" else []
        worktree |= sub == "worktree" and action != ["list"]
        if sub in ("init", "clone") or action == ["add"]:
            for target in _created(argv, sub):
                for b in bases:
                    where = os.path.realpath(os.path.join(b, *c_dirs, target))
                    if not _inside(where, root_real):
                        reasons.append(f"git {sub} writes a repository outside the working directory, "
                                       f"in {visible(where)}")
                    elif sub == "init":
                        reasons.extend(_reinit_reasons(where, root_real))
        if sub in _TRANSPORTS:
            transports = True
            named, others = _named_repositories(argv, sub)
            for w in named:
                if _is_local_url(w):
                    reasons.append(_on_this_machine(f"git {sub} talks to", w))
                elif any(_is_dir(b, c_dirs, w) for b in bases):
                    dir_names.append((sub, w))  # a local path unless a remote has that name
                else:
                    at_top.append((sub, w))  # git resolves it from the work tree's top
            dir_names.extend((sub, w) for w in others if any(_is_repository(b, c_dirs, w) for b in bases))
            if sub == "remote":  # `git remote add -f up file:///...` fetches from it at once
                reasons.extend(_on_this_machine(f"git {sub} talks to", w) for w in others if _is_local_url(w))
        if why:
            reasons.append(why)
        if sub is not None and sub not in probe.about().builtins:
            aliases_matter = True  # an alias is looked up for a command that is not built in
        for base in bases:
            d = base
            for c in c_dirs:
                d = os.path.join(d, c) if c else d
            dirs.append(os.path.normpath(d))
    seen: set[tuple[str, str]] = set()
    budget = [MAX_REPOSITORIES]
    for d in dict.fromkeys(dirs):
        if os.path.isdir(d):
            reasons.extend(_check_repository(d, root_real, probe, environ, aliases_matter, seen, budget,
                                             depth=0, use=_Use(writes, writes_tree, transports, worktree, tuple(dir_names),
                                                     tuple(at_top))))
    return reasons


@dataclass(frozen=True)
class _Use:
    """What the command's git does that some findings depend on."""

    writes: bool  # a git command not in _READS_ONLY (it may write files of the git directory)
    writes_tree: bool  # a git command not in _KEEPS_THE_WORK_TREE (it may write the work tree)
    transports: bool  # talks to another repository (_TRANSPORTS)
    worktree: bool  # `git worktree ...`: acts on the linked worktrees, wherever they are
    dir_names: tuple[tuple[str, str], ...] = ()  # (command, word): a word naming a directory
    at_top: tuple[tuple[str, str], ...] = ()  # (command, word): a name to look for at the top
    git_dirs: tuple[str, ...] = ()  # the git directories of the repositories around this one


# git commands that talk to another repository: one on this machine runs git there (its
# receive-pack or upload-pack / upload-archive), with that repository's config and hooks
# (subtree push/pull, submodule update --remote, maintenance's prefetch fetch too)
_TRANSPORTS = frozenset(("push", "send-pack", "fetch", "fetch-pack", "pull", "ls-remote", "archive",
                         "clone", "remote", "subtree", "submodule", "maintenance"))


# options of the transport commands (and init, clone) whose value may be the next word
# (`git push -o x repo`)
_VALUE_OPTIONS = frozenset((
    "-o", "--push-option", "--server-option", "--recurse-submodules", "--repo", "--receive-pack",
    "--exec", "--upload-pack", "-u", "--depth", "--deepen", "--shallow-since", "--shallow-exclude",
    "-j", "--jobs", "--negotiation-tip", "--refmap", "--recurse-submodules-default",
    "--submodule-prefix", "--filter", "-s", "--strategy", "-X", "--strategy-option", "--origin",
    "-b", "--branch", "--reference", "--reference-if-able", "--separate-git-dir", "-c", "--config",
    "--template", "--bundle-uri", "--output", "--format", "--prefix", "--remote", "--sort",
    "--signed", "--set-upstream-to", "--initial-branch", "--object-format",
))


# options of _VALUE_OPTIONS that take no value (or only `=value`) in these commands
_FLAGS_IN = {"push": frozenset(("-u", "--signed")), "fetch": frozenset(("-u", "--recurse-submodules")),
             "pull": frozenset(("--recurse-submodules",)), "clone": frozenset(("-s", "--recurse-submodules"))}


def _operands(rest: list[str], sub: str = "") -> list[str]:
    """The words of a git command's arguments that are neither options nor their values."""
    return [rest[k] for k in _operand_positions(rest, sub)]


def _operand_positions(rest: list[str], sub: str = "") -> list[int]:
    """Where the operands of `_operands` are in `rest`."""
    takes = _VALUE_OPTIONS - _FLAGS_IN.get(sub, frozenset())
    found: list[int] = []
    k = 0
    while k < len(rest):
        w = rest[k]
        if w == "--":
            return found + list(range(k + 1, len(rest)))
        if w.startswith("-") and w != "-":
            k += 2 if w in takes else 1
            continue
        found.append(k)
        k += 1
    return found


def _option_values(rest: list[str], name: str) -> list[str]:
    """The values of a long option, given as `--name=V` or `--name V`, however abbreviated
    (git takes `--rep=X` for `--repo=X`)."""
    out = []
    for i, w in enumerate(rest):
        given, eq, value = w.partition("=")
        if len(given) > 2 and name.startswith(given):  # "--" and a letter at least
            out.extend([value] if eq else rest[i + 1:i + 2])
    return out


def _named_repositories(argv: list[str], sub: str) -> tuple[list[str], list[str]]:
    """(the words a transport command may take for the repository: `--repo` (push) and
    `--remote` (archive, whose other words are paths) however abbreviated, its first operand,
    and, since an option in _VALUE_OPTIONS may take no value in this command (`push -u`,
    `clone -s`, `fetch --recurse-submodules`), every word before that operand; its other
    operands, refspecs mostly)."""
    rest = argv[argv.index(sub) + 1:]
    named = _option_values(rest, "--repo") + _option_values(rest, "--remote")
    at = _operand_positions(rest, sub)
    words = [rest[k] for k in at]
    if sub not in ("archive", "remote"):
        end = at[0] + 1 if at else len(rest)
        named += [w for w in rest[:end] if not w.startswith("-")]
        words = words[1:]
    return list(dict.fromkeys(named)), words


def _reinit_reasons(where: str, root_real: str) -> list[str]:
    """`git init` in a repository that exists writes its git directory again (the sample
    hooks, info/exclude, description: whatever is missing), through any link in it, the
    hooks directory's too (which no other command writes): links out of it ask, and so does a
    gitdir file that leads out."""
    dotgit = os.path.join(where, ".git")
    if os.path.isfile(dotgit) and not os.path.islink(dotgit):
        try:
            with open(dotgit, encoding="utf-8", errors="surrogateescape") as f:
                text = f.read(MAX_STATE_BYTES + 1)  # git reads a gitdir file of up to 1 MiB
        except OSError:
            return []
        if len(text) > MAX_STATE_BYTES:
            return [f"git init reads a gitdir file longer than DashFloat reads ({visible(dotgit)})"]
        target = text[len("gitdir:"):].strip() if text.startswith("gitdir:") else ""
        real = os.path.realpath(os.path.join(where, target)) if target else ""
        if real and not _inside(real, root_real):
            return [f"git init writes the repository's git directory outside the working directory, "
                    f"in {visible(real)}"]
        gitdir = real
    elif os.path.isdir(dotgit):
        gitdir = os.path.realpath(dotgit)
    elif os.path.isfile(os.path.join(where, "HEAD")):  # a bare repository
        gitdir = os.path.realpath(where)
    else:
        return []
    if not gitdir or not os.path.isdir(gitdir):
        return []
    links = _links_out(gitdir, gitdir)
    hooks = os.path.join(gitdir, "hooks")
    if os.path.islink(hooks) and not _inside(os.path.realpath(hooks), gitdir):
        links.insert(0, f"{visible(hooks)} -> {visible(os.path.realpath(hooks))}")
    if links:
        return [_names("git init writes the repository's git directory again, through symbolic links out "
                       "of it: ", links)]
    return []


def _created(argv: list[str], sub: str) -> list[str]:
    """The directories `git init` / `git clone` / `git worktree add` write (relative to where
    git runs): init's directory (or "."), clone's destination (or "." for a name it derives),
    the new worktree's, and a --separate-git-dir; a directory that is a link out of the
    working directory counts where it leads."""
    rest = argv[argv.index(sub) + 1:]
    if sub == "worktree":  # `git worktree add PATH`
        rest = rest[1:]
    words = _operands(rest, sub)
    wanted = 0 if sub != "clone" else 1
    out = _option_values(rest, "--separate-git-dir") + [words[wanted] if len(words) > wanted else "."]
    return [p for p in out if p]


def _is_dir(base: str, c_dirs: list[str], word: str) -> bool:
    """A word git takes for a repository on this machine, as git looks for one: `X`, `X.git`,
    `X/.git`, or a file `X` (a gitdir file, a bundle), unless it names a configured remote
    (checked with the config)."""
    if "://" in word or not word:
        return False
    path = os.path.join(base, *c_dirs, word)
    return os.path.lexists(path) or os.path.isdir(path + ".git")


def _is_repository(base: str, c_dirs: list[str], word: str) -> bool:
    """A word, not in the place of the repository, that names one anyway (`X.git`, `X/.git`,
    a bare `X/HEAD`, a gitdir file): a refspec that is also a repository's name is judged
    as the repository git might take it for."""
    if "://" in word or not word or ":" in word:
        return False
    path = os.path.join(base, *c_dirs, word)
    if os.path.isdir(path + ".git") or os.path.lexists(os.path.join(path, ".git")) \
            or os.path.isfile(os.path.join(path, "HEAD")):
        return True
    try:
        with open(path, "rb") as f:
            return f.read(8) == b"gitdir: "
    except OSError:
        return False


def _names(what: str, found: list[str]) -> str:
    """`what` and the first MAX_SHOWN findings, the rest counted."""
    more = f" and {len(found) - MAX_SHOWN} more" if len(found) > MAX_SHOWN else ""
    return what + "; ".join(found[:MAX_SHOWN]) + more


def _is_local_url(word: str) -> bool:
    """A repository on this machine: a path or a file:// URL (not `host:path`, not a name)."""
    if word.startswith("file://"):
        return True
    if "://" in word or word.startswith("-"):
        return False
    head = word.split("/", 1)[0]
    return ("/" in word or word.startswith((".", "~"))) and ":" not in head


def _on_this_machine(what: str, url: str) -> str:
    return (f"{what} a repository on this machine ({visible(url)}): git runs git there, with that "
            f"repository's config and hooks, which the check does not read")


def _check_repository(d: str, root_real: str, probe: _Probe, environ: Mapping[str, str],
                      aliases_matter: bool, seen: set[tuple[str, str]], budget: list[int], *, depth: int,
                      use: _Use) -> list[str]:
    status, out, err = probe.run(["rev-parse", "--absolute-git-dir", "--show-toplevel", "--git-common-dir"], d)
    if status != 0:
        if "not a git repository" in err or "cannot use bare repository" in err:
            return []  # the command's git finds no repository either (or refuses it)
        return [f"git cannot read the repository at {_shown(d, root_real)}: {visible(err)}"]
    lines = out.decode("utf-8", "surrogateescape").splitlines()
    if len(lines) != 3:
        return [f"git does not see a work tree at {_shown(d, root_real)}"]
    gitdir, top = (os.path.realpath(p) for p in lines[:2])
    common = os.path.realpath(os.path.join(d, lines[2]))  # relative to d, or absolute
    if (gitdir, top) in seen:
        return []
    seen.add((gitdir, top))
    budget[0] -= 1
    if budget[0] < 0:
        return ["it has more nested repositories than DashFloat checks"]
    reasons: list[str] = []
    if not _inside(gitdir, root_real) and not _known_gitdir(gitdir, top, root_real):
        reasons.append(f"the repository's .git points outside the working directory, to "
                       f"{visible(gitdir)}")
    if _inside(gitdir, root_real) and not _inside(common, root_real) and not _inside(gitdir, common):
        # a `commondir` file: refs, objects and config read from elsewhere
        reasons.append(f"the repository's objects and refs are outside the working directory, in "
                       f"{visible(common)} (commondir)")
    if not _inside(os.path.realpath(d), top):
        reasons.append(f"the repository's work tree is elsewhere: {visible(top)} (core.worktree)")
    elif _inside(gitdir, root_real) and not _inside(top, root_real):
        # git dir inside, work tree around it (core.worktree = ../..): git diff read files of
        # the tree outside, git reset --hard wrote there
        reasons.append(f"the repository's work tree is outside the working directory: {visible(top)} "
                       f"(core.worktree)")
    reasons.extend(_git_dir_reasons(gitdir, common, top, root_real, use))
    entries = probe.config(d)
    found = _unneutralised(entries, root_real, environ, gitdir)
    files: list[str] = []
    # a partial clone fetches missing objects from its promisor remote for any command
    lazy = any(e.key.lower() == "extensions.partialclone" or fnmatchcase(e.key.lower(), "remote.*.promisor")
               for e in entries)
    if use.transports or lazy:
        reasons.extend(_transport_reasons(entries, common, top, root_real, use,
                                          lambda e: _trusted(e, root_real, (gitdir,))))
    here = (gitdir, common, *use.git_dirs)  # a file in one of them: the command may write it
    included: set[str] = set()
    for e in entries:
        if _trusted(e, root_real, (gitdir,)):
            continue
        if untrusted_program(e.key, e.value) or _alias_runs(e.key, aliases_matter):
            found.append(_finding(e, root_real))
        elif _names_a_file_outside(e, top, root_real):
            files.append(_finding(e, root_real))
        reasons.extend(_include_reasons(e, probe, top, root_real, use, here, included))
    if found:
        reasons.append(_names("git would run what the repository's config names: ", found))
    if files:
        reasons.append(_names("the repository's config names files outside the working directory, "
                              "which git reads or writes: ", files))
    if reasons or depth >= MAX_DEPTH:
        if depth >= MAX_DEPTH:
            reasons.append("its submodules are nested deeper than DashFloat checks")
        return reasons
    module_entries = _module_configs(probe, gitdir, top)
    found = [_finding(e, root_real) for e in module_entries
             if untrusted_program(e.key, e.value)  # or a FIXED key with no neutral value:
             or (FIXED.get(e.key.lower(), "") is None and _ENV_FIRST.get(e.key.lower()) not in environ)]
    if found:
        return [_names("git would run what a submodule's config names (a diff of the history "
                       "runs git in each submodule, checked out or not): ", found)]
    reasons = [r for e in module_entries for r in _include_reasons(e, probe, top, root_real, use, here, included)]
    if reasons:
        return reasons
    for path in _gitlinks(probe, top) + _untracked_directories(probe, top):
        sub = os.path.join(top, path)
        if os.path.lexists(os.path.join(sub, ".git")) and os.path.isdir(sub):
            reasons.extend(_check_repository(sub, root_real, probe, environ, aliases_matter, seen,
                                             budget, depth=depth + 1,
                                             use=_Use(use.writes, use.writes_tree, use.transports, False,
                                                      git_dirs=here)))
            if reasons:
                break
    return reasons


# aliases git itself runs as commands: `git remote-<helper>` for a URL's transport or
# remote.<name>.vcs, `git merge-<strategy>` (merge, rebase, pull, cherry-pick -s), `git
# credential-<helper>`: found whatever command the call runs
_ALIASES_GIT_RUNS = ("alias.remote-*", "alias.merge-*", "alias.credential-*")


# keys whose value is a file or directory git reads or writes (a repository's config must
# not name one outside the working directory: format-patch wrote there, commit.template
# and format.signatureFile printed a file from elsewhere)
_PATH_KEYS = frozenset((
    "format.outputdirectory", "format.signaturefile", "commit.template", "mailmap.file",
    "blame.ignorerevsfile", "diff.orderfile", "gpg.ssh.allowedsignersfile", "gpg.ssh.revocationfile",
    "core.attributesfile", "core.excludesfile", "sendemail.aliasesfile",
))  # (http.* files: _CONNECTION_KEYS, before a command that talks to a remote)


def _names_a_file_outside(e: _Entry, top: str, root_real: str) -> bool:
    if not e.value or e.key.lower() not in _PATH_KEYS:
        return False
    path = os.path.realpath(os.path.join(top, os.path.expanduser(e.value)))
    return not (_inside(path, root_real) or _inside(path, top))


def _alias_runs(key: str, aliases_matter: bool) -> bool:
    low = key.lower()
    return low.startswith("alias.") and (aliases_matter or any(fnmatchcase(low, p) for p in _ALIASES_GIT_RUNS))


# the repository's own settings of how git connects (http.<key> and http.<url>.<key> alike)
_CONNECTION_KEYS = ("http.*", "remote.*.proxy", "remote.*.proxyauthmethod")


def _transport_reasons(entries: list[_Entry], common: str, top: str, root_real: str, use: _Use,
                       trusted) -> list[str]:
    """A command that talks to another repository, when a remote's URL (any scope: the hooks
    and config are the target's), or a URL rewrite's (`url.<base>.insteadOf`), is a
    repository on this machine; or when it names a directory that no remote is called; or
    when the repository's own config says how git connects (`_CONNECTION_KEYS`: a proxy
    with TLS checks off, or a CA of its own, hands the credentials your helper gives for
    the real host to someone else; a cookie file is read and sent)."""
    reasons = []
    remotes = set()
    connection = [_finding(e, root_real) for e in entries
                  if any(fnmatchcase(e.key.lower(), p) for p in _CONNECTION_KEYS) and not trusted(e)]
    if connection:
        reasons.append(_names("the repository's config sets how git connects, so your credentials "
                              "for the remote could go elsewhere: ", connection))
    chosen = []  # remotes named by branch.<b>.remote, .pushremote, remote.pushDefault
    group_members = []
    for e in entries:
        key = e.key.lower()
        if fnmatchcase(key, "remote.*.url") or fnmatchcase(key, "remote.*.pushurl"):
            remotes.add(e.key[len("remote."):e.key.rindex(".")])
        if not e.value:
            continue
        if fnmatchcase(key, "remote.*.*url") and (_is_local_url(e.value) or _is_dir(top, [], e.value)):
            reasons.append(_on_this_machine("a remote's URL is", e.value))
        elif key.startswith("url.") and key.endswith((".insteadof", ".pushinsteadof")):
            base = e.key[len("url."):e.key.rindex(".")]
            if _is_local_url(base) or _is_dir(top, [], base):
                reasons.append(_on_this_machine("the repository's config rewrites URLs to", base))
        elif fnmatchcase(key, "branch.*.remote") or fnmatchcase(key, "branch.*.pushremote") \
                or key == "remote.pushdefault":
            chosen.append(e.value)
        elif key.startswith("remotes."):
            group_members.extend(e.value.split())
    legacy = _legacy_remotes(common)  # .git/remotes/<name>, .git/branches/<name>
    remotes.update(name for name, _ in legacy)
    for name, url in legacy:
        if _is_local_url(url) or _is_dir(top, [], url):
            reasons.append(_on_this_machine(f"a remote's URL (.git/remotes or .git/branches: {visible(name)}) is", url))

    def here(value: str) -> bool:  # a URL or path used as a remote, not a remote's name
        return value not in remotes and (_is_local_url(value) or _is_dir(top, [], value))

    reasons.extend(_on_this_machine("a branch's remote is", v) for v in chosen if here(v))
    reasons.extend(_on_this_machine("a remote group (remotes.*) names", v) for v in group_members if here(v))
    reasons.extend(_on_this_machine(f"git {sub} talks to", w) for sub, w in use.dir_names if w not in remotes)
    reasons.extend(_on_this_machine(f"git {sub} talks to", w) for sub, w in use.at_top if here(w))
    return reasons


_GIT_BLANKS = " \t\n\r"  # what git's isspace() takes for a blank (not \v, \f)


def _legacy_remotes(common: str) -> list[tuple[str, str]]:
    """(name, URL) of the remotes git still reads from files: `remotes/<name>` (its `URL:`
    lines) and `branches/<name>` (a URL, `#branch` after it)."""
    out: list[tuple[str, str]] = []
    for sub in ("remotes", "branches"):
        base = os.path.join(common, sub)
        try:
            names = sorted(os.listdir(base))
        except OSError:
            continue
        if len(names) > MAX_REPOSITORIES * 4:  # unread ones could be used: fail closed
            raise _Unreadable(f"it has more .git/{sub} files than DashFloat checks")
        for name in names:
            text = _read_state(os.path.join(base, name), f"{sub}/{name}") or ""
            if sub == "branches":  # the first line, trimmed; "#branch" cut off
                urls = [text.split("\n", 1)[0].strip(_GIT_BLANKS).partition("#")[0]]
            else:  # each line (its "\r\n" or "\n" off) trimmed at the end; "URL:" then blanks
                lines = (ln[:-1] if ln.endswith("\r") else ln for ln in text.split("\n"))
                urls = [ln.rstrip(_GIT_BLANKS)[4:].lstrip(_GIT_BLANKS) for ln in lines
                        if ln.rstrip(_GIT_BLANKS).startswith("URL:")]
            out.extend((name, url) for url in urls if url)
    return out


def _git_dir_reasons(gitdir: str, common: str, top: str, root_real: str, use: _Use) -> list[str]:
    """What the git directory itself holds that git would act on: symbolic links out of it
    (git reads and writes through them: a reflog appended to a shell's rc file, a pack
    shared with another repository that gc rewrites, a config a command rewrites in the
    work tree), alternates outside (objects read from another repository), a rebase in
    progress whose todo list runs commands (`exec`) or names a strategy git runs as a
    command, and, for `git worktree`, linked worktrees outside (repair writes there, remove
    deletes)."""
    def outside(path: str) -> bool:
        return not (_inside(path, root_real) or _inside(path, top))

    reasons = []
    links = _links_out(gitdir, common)
    if links:
        reasons.append(_names("the repository's git directory has symbolic links out of it, which "
                              "git reads and writes through: ", links))
    for alt in _alternates(os.path.join(common, "objects"), depth=0):
        if outside(alt):
            reasons.append(f"the repository reads objects from outside the working directory, "
                           f"{visible(alt)} (objects/info/alternates)")
            break
    reasons.extend(_rebase_reasons(gitdir))
    if use.worktree:
        away = [p for p in _worktree_dirs(common) if outside(p)]
        if away:
            reasons.append(_names("git worktree acts on linked worktrees outside the working directory: ",
                                  [visible(p) for p in away]))
    return reasons


MAX_GIT_DIR_ENTRIES = 50_000  # files of a git directory (its loose objects aside) looked at for links
MAX_STATE_BYTES = 1 << 20  # a rebase todo list, an alternates file... read at most (longer: ask)


def _links_out(gitdir: str, common: str) -> list[str]:
    """The symbolic links in the git directories (a linked worktree's and the common one)
    that resolve out of both, shown as `path -> target`: every file and directory but the
    loose objects (an object store's own entries, its pack/ and info/ are looked at:
    `_is_object_store`) and the hooks directory (core.hooksPath keeps hooks from running)."""
    homes = tuple(dict.fromkeys((gitdir, common)))

    def away(path: str) -> str | None:
        if os.path.islink(path):
            real = os.path.realpath(path)
            if not any(_inside(real, h) for h in homes):
                return f"{visible(path)} -> {visible(real)}"
        return None

    found: list[str] = []
    count = 0
    for home in homes:
        for dirpath, dirnames, filenames in os.walk(home):
            rel = os.path.relpath(dirpath, home)
            if rel == ".":
                dirnames[:] = [n for n in dirnames if n != "hooks"]
            elif _is_object_store(rel):
                names = dirnames + filenames
                dirnames[:] = [n for n in dirnames if n in ("pack", "info")]  # not the fan-out
                count += len(names)
                if count > MAX_GIT_DIR_ENTRIES:  # (a store's own entries are looked at too)
                    raise _Unreadable("its git directory has more files than DashFloat checks")
                found.extend(filter(None, (away(os.path.join(dirpath, n)) for n in sorted(names))))
                continue
            dirnames.sort()
            for name in sorted(dirnames + filenames):
                count += 1
                if count > MAX_GIT_DIR_ENTRIES:
                    raise _Unreadable("its git directory has more files than DashFloat checks")
                hit = away(os.path.join(dirpath, name))
                if hit:
                    found.append(hit)
    return found


def _is_object_store(rel: str) -> bool:
    """A directory of content-addressed files under a git directory, whose fan-out is not
    walked: `objects`, a submodule's (`modules/<name>/objects`, nested) and git-lfs's
    `lfs/objects` (tens of thousands of files in a real repository)."""
    parts = rel.split(os.sep)
    if parts == ["objects"] or parts == ["lfs", "objects"]:
        return True
    return len(parts) >= 3 and parts[-1] == "objects" and parts[0] == "modules" and parts[-3] == "modules"


def _read_state(path: str, what: str) -> str | None:
    """A state file's text as git reads it, line ends untranslated ("ort\r" is no built-in
    strategy; an alternate "objs\r" is not "objs") (None: there is none); longer than
    MAX_STATE_BYTES: _Unreadable."""
    try:
        with open(path, encoding="utf-8", errors="surrogateescape", newline="") as f:
            text = f.read(MAX_STATE_BYTES + 1)
    except OSError:
        return None
    if len(text) > MAX_STATE_BYTES:
        raise _Unreadable(f"its {what} is longer than DashFloat reads")
    return text


def _alternates(objects: str, depth: int) -> list[str]:
    """The object directories objects/info/alternates adds (relative to the objects directory;
    a C-quoted line unquoted), and theirs in turn, as git follows them (five deep)."""
    text = _read_state(os.path.join(objects, "info", "alternates"), "objects/info/alternates")
    if text is None:
        return []
    out = []
    for line in text.split("\n"):  # git takes the rest of the line as it is, blanks and "\r" too
        if not line or line.startswith("#"):
            continue
        if line.startswith('"'):
            line = _unquote_c(line)
        path = os.path.realpath(os.path.join(objects, line))
        out.append(path)
        if depth < 5:
            out.extend(_alternates(path, depth + 1))
    return out


_C_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
              "\\": "\\", '"': '"'}


def _unquote_c(text: str) -> str:
    """git's C-style quoting undone (`"a\\tb\\303\\251"`): the escapes above and octal bytes."""
    body = text[1:-1] if text.endswith('"') and len(text) > 1 else text[1:]
    out = bytearray()
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in "0123" and re.match(r"[0-7]{3}", body[i + 1:i + 4]):
                out.append(int(body[i + 1:i + 4], 8))
                i += 4
                continue
            out += _C_ESCAPES.get(nxt, nxt).encode("utf-8", "surrogateescape")
            i += 2
            continue
        out += c.encode("utf-8", "surrogateescape")
        i += 1
    return out.decode("utf-8", "surrogateescape")


# merge strategies built into git (any other name runs `git merge-<name>`: a program or an alias)
_BUILTIN_STRATEGIES = frozenset(("ort", "recursive", "resolve", "octopus", "ours", "subtree"))


def _rebase_reasons(gitdir: str) -> list[str]:
    """A rebase in progress (`rebase-merge/`, as a clone may carry it): the `exec` lines of its
    todo list run on `git rebase --continue`, and a strategy that is not built in runs as a
    command; and `git am`'s or a cherry-pick's strategy likewise."""
    found = []
    state = os.path.join(gitdir, "rebase-merge")
    todo = _read_state(os.path.join(state, "git-rebase-todo"), "rebase todo list") or ""
    for line in todo.splitlines():
        word = line.strip().split(None, 1)
        if word and word[0] in ("x", "exec"):
            found.append(f"exec {visible(word[1] if len(word) > 1 else '')}")
    for path in (os.path.join(state, "strategy"), os.path.join(gitdir, "rebase-apply", "strategy"),
                 os.path.join(gitdir, "sequencer", "opts")):
        text = _read_state(path, "rebase or cherry-pick state")
        if text is None:
            continue
        if path.endswith("opts"):  # a config file: strategy = <name>
            names = re.findall(r"^\s*strategy\s*=\s*(\S+)", text, re.M)
        else:  # git reads the whole file less one line end: "ort x" is no built-in strategy
            name = text[:-2] if text.endswith("\r\n") else text[:-1] if text.endswith("\n") else text
            names = [name.replace("\n", "\\n")] if text else []  # (shown on one line)
        found.extend(f"strategy {visible(n)}" for n in names if n not in _BUILTIN_STRATEGIES)
    if found:
        return [_names("a rebase or cherry-pick in progress would run: ", found)]
    return []


def _worktree_dirs(common: str) -> list[str]:
    """The directories of the linked worktrees (`worktrees/<id>/gitdir` names their .git)."""
    out = []
    base = os.path.join(common, "worktrees")
    try:
        ids = sorted(os.listdir(base))
    except OSError:
        return []
    if len(ids) > MAX_REPOSITORIES * 4:  # one unread could be outside: fail closed
        raise _Unreadable("it has more linked worktrees than DashFloat checks")
    for wid in ids:
        try:
            with open(os.path.join(base, wid, "gitdir"), encoding="utf-8", errors="surrogateescape") as f:
                dotgit = f.read(4096).strip()
        except OSError:
            continue
        if dotgit:
            out.append(os.path.realpath(os.path.dirname(os.path.join(base, wid, dotgit))))
    return out


# git commands that write no file of the work tree (an include there cannot change under them)
_READS_ONLY = frozenset((
    "status", "log", "diff", "show", "blame", "annotate", "grep", "ls-files", "ls-tree",
    "rev-parse", "rev-list", "describe", "shortlog", "cat-file", "for-each-ref", "show-ref",
    "name-rev", "reflog", "whatchanged", "diff-tree", "diff-files", "diff-index", "count-objects",
    "help", "version", "var", "check-ignore", "check-attr", "merge-base", "show-branch",
))


# of the commands that write, those that write only the git directory, never the work tree
# (add runs clean filters, which the config check judges; commit writes COMMIT_EDITMSG)
_KEEPS_THE_WORK_TREE = _READS_ONLY | frozenset((
    "add", "stage", "commit", "tag", "branch", "fetch", "push", "remote", "ls-remote", "gc", "fsck",
))


MAX_INCLUDE_DEPTH = 10  # git follows includes this deep


def _is_include(e: _Entry) -> bool:
    key = e.key.lower()
    return bool(e.value) and (key == "include.path" or (key.startswith("includeif.") and key.endswith(".path")))


def _include_reasons(e: _Entry, probe: _Probe, top: str, root_real: str, use: _Use,
                     gitdirs: tuple[str, ...], included: set[str], depth: int = 0) -> list[str]:
    """An include of the repository's config (`include.path`, `includeIf.<cond>.path`): its
    file's program keys count whatever the condition (`onbranch:` turns on when a command
    switches branch; `hasconfig:remote.*.url:` when `git remote add -f` adds a remote and
    fetches), and so do the includes in it, at any depth, whatever theirs. The command
    itself may write the file before a git child reads it (`git stash pop` restored one,
    then ran a filter it named): one in a git directory (this repository's, or one around
    it: a submodule's config may include its superproject's COMMIT_EDITMSG) if it writes at
    all (`git commit` writes COMMIT_EDITMSG, then runs `git status` in the submodules); one
    in the work tree or the working directory, or one that does not exist yet, if it writes
    the work tree (a team's shared `../.gitconfig` does not make `git commit` ask)."""
    if not _is_include(e):
        return []
    base = os.path.dirname(e.path) if e.path else top
    target = os.path.realpath(os.path.join(base, os.path.expanduser(e.value)))
    in_git = any(_inside(target, os.path.realpath(g)) for g in gitdirs)
    if (in_git and use.writes) or (use.writes_tree and (
            not os.path.isfile(target) or _inside(target, top) or _inside(target, root_real))):
        return [f"the repository's config includes {visible(e.value)}, a file the command "
                f"itself may write before git reads it"]
    if not os.path.isfile(target) or target in included:
        return []
    included.add(target)
    entries = probe.config_file(target, top)
    named = [_finding(i, root_real) for i in entries
             if untrusted_program(i.key, i.value) or FIXED.get(i.key.lower(), "") is None]
    reasons = [_names("git would run what a config the repository includes names: ", named)] if named else []
    if depth + 1 >= MAX_INCLUDE_DEPTH:  # one not read could name a program: ask
        deeper = [i.value for i in entries if _is_include(i)]
        if deeper:  # (named: the first include not read)
            reasons.append(f"the repository's config includes files nested deeper than DashFloat reads "
                           f"({visible(deeper[0])})")
        return reasons
    for inner in entries:
        reasons.extend(_include_reasons(inner, probe, top, root_real, use, gitdirs, included, depth + 1))
    return reasons


def _module_configs(probe: _Probe, gitdir: str, top: str) -> list[_Entry]:
    """The config of every submodule git directory under `<gitdir>/modules` (any depth; its
    includes: _include_reasons): git uses one when it diffs a submodule's history, even where
    the submodule is not checked out or not in the index."""
    entries: list[_Entry] = []
    count = 0
    for dirpath, dirnames, filenames in os.walk(os.path.join(gitdir, "modules")):
        dirnames.sort()
        if "config" in filenames and "HEAD" in filenames:
            count += 1
            if count > MAX_REPOSITORIES:
                raise _Unreadable("it has more submodules than DashFloat checks")
            entries.extend(probe.config_file(os.path.join(dirpath, "config"), top))
    return entries


def _untracked_directories(probe: _Probe, top: str) -> list[str]:
    """The untracked directories of the work tree: a repository of its own that is not in the
    index is one of them, and a diff of the history may run git in it (the caller reads
    those that have a `.git`)."""
    status, out, err = probe.run(["ls-files", "-z", "--others", "--directory", "--no-empty-directory"], top,
                                 keep=lambda r: r.endswith(b"/"))
    if status != 0:
        raise _Unreadable(f"git cannot list the repository's files: {err or f'exit status {status}'}")
    return [os.fsdecode(r[:-1]) for r in out.split(b"\0") if r.endswith(b"/")]


def _gitlinks(probe: _Probe, top: str) -> list[str]:
    """The paths of the submodules (gitlinks, mode 160000) in the index of the work tree."""
    status, out, err = probe.run(["ls-files", "-z", "--stage"], top,
                                 keep=lambda r: r.startswith(b"160000 "))
    if status != 0:
        raise _Unreadable(f"git cannot list the repository's files: {err or f'exit status {status}'}")
    paths = []
    for record in out.split(b"\0"):
        if b"\t" in record:
            paths.append(os.fsdecode(record.split(b"\t", 1)[1]))
    return paths


def _known_gitdir(gitdir: str, top: str, root_real: str) -> bool:
    """A git directory outside the working directory that is not a redirection: the `.git`
    directory of an enclosing work tree, a linked worktree's (its `gitdir` file points back
    to this `.git` file), or inside an enclosing repository's `.git` (a submodule's)."""
    dotgit = os.path.join(top, ".git")
    if os.path.isdir(dotgit) and not os.path.islink(dotgit):
        return os.path.realpath(dotgit) == gitdir and _inside(root_real, top)
    if os.path.isfile(dotgit):
        try:
            with open(os.path.join(gitdir, "gitdir"), encoding="utf-8", errors="surrogateescape") as f:
                back = f.read(4096).strip()
        except OSError:
            back = ""
        if back and os.path.realpath(back) == os.path.realpath(dotgit):
            return True
    parent = root_real
    while True:
        enclosing = os.path.join(parent, ".git")
        if os.path.isdir(enclosing) and not os.path.islink(enclosing) and _inside(gitdir, enclosing):
            return True
        up = os.path.dirname(parent)
        if up == parent:
            return False
        parent = up


def _finding(e: _Entry, root_real: str) -> str:
    value = "(no value)" if e.value is None else e.value
    if len(value) > _VALUE_CHARS:
        value = value[:_VALUE_CHARS] + "…"
    where = _shown(e.path, root_real) if e.path else e.origin
    return visible(f"{e.key} = {value} (in {where})").replace("\n", "\\n")


def _shown(path: str, root_real: str) -> str:
    if _inside(path, root_real):
        return os.path.relpath(path, root_real)
    return path


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")
