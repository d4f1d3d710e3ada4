"""Command line: arguments, configuration, terminal checks, then the full-screen app, or
the headless front end (`-p`, dashfloat/headless.py) that never imports urwid.

Exit status: 0 ok, 1 runtime error, 2 usage or configuration error (headless runs add 3, 4
and 130: dashfloat/events.py OUTCOMES). Heavy modules (urwid, requests, markdown) are
imported only once we know the UI will start, so --help, --version and configuration
errors answer at once.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys

from dashfloat import __version__

EXIT_OK, EXIT_RUNTIME, EXIT_USAGE = 0, 1, 2
EXIT_PIPE = 128 + 13  # the reader of our output went away: what a shell reports for SIGPIPE
EXIT_INTERRUPTED = 128 + 2  # SIGINT (and, headless, SIGTERM and SIGHUP): the turn was cancelled

RESET_SEQUENCE = (
    "\x1b[?2004l"  # bracketed paste off
    "\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l"  # mouse tracking off
    "\x1b[?1004l"  # focus reporting off
    "\x1b[0m"  # attributes reset
    "\x1b[r"  # full-screen scrolling margins
    "\x1b[?1049l"  # leave the alternate screen
    "\x1b[?25h"  # show the cursor
    "\x1b(B\x0f"  # G0 is ASCII and in use (a program may have left line-drawing characters)
)
UTF8_SEQUENCE = "\x1b%G"  # select UTF-8 (the Linux console's UTF-8 mode)

DUMB_TERMS = ("", "dumb", "unknown")


def _terminal_columns() -> int:
    """shutil.get_terminal_size().columns, with os alone: $COLUMNS when it is a positive
    number, else the terminal's width on stdout, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
        columns = columns or 80
    return columns


class _Formatter(argparse.HelpFormatter):
    """argparse's formatter, its width found without shutil: add_argument builds one to check
    every option, and shutil (with zlib, bz2 and lzma) costs ~2.5 ms of every start."""

    def __init__(self, prog, indent_increment=2, max_help_position=24, width=None):
        super().__init__(prog, indent_increment, max_help_position,
                         _terminal_columns() - 2 if width is None else width)


class _Parser(argparse.ArgumentParser):
    """The description names how to open the manual (man_command: a stat of each man
    directory, more for a pyz), worked out only when --help shows it, not on every start."""

    def format_help(self) -> str:
        if self.description is None:
            from dashfloat.manpage import man_command

            self.description = (
                "A full-screen terminal coding agent for any OpenAI-compatible chat-completions "
                "endpoint. Type a request, read the streamed answer. Keys: F1 inside the app, "
                f"or {man_command()}."
            )
        return super().format_help()


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="dashfloat",
        formatter_class=_Formatter,
        epilog=(
            "The API key is read only from the environment: OPENAI_API_KEY, or the variable "
            "named by api_key_env. Configuration files: .dashfloat/config.toml in the working "
            "directory, then $XDG_CONFIG_HOME/dashfloat/config.toml."
        ),
    )
    p.add_argument("-C", dest="root", metavar="DIR", help="start in DIR (the root tools are confined to)")
    p.add_argument("--base-url", metavar="URL", help="endpoint base URL, e.g. http://localhost:11434/v1")
    p.add_argument("--model", metavar="NAME", help="model name (default: ask the endpoint's /models)")
    p.add_argument("--colors", choices=("auto", "1", "16", "256"), help="colour depth (default auto; NO_COLOR means 1)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--ascii", dest="ascii", action="store_const", const="on", help="ASCII glyphs and borders only")
    g.add_argument("--unicode", dest="ascii", action="store_const", const="off", help="Unicode glyphs even on a plain console")
    from dashfloat.config import KEYS

    default = {spec.name: spec.default for spec in KEYS}
    p.add_argument("--connect-timeout", type=float, metavar="SECONDS",
                   help=f"connect timeout (default {default['connect_timeout']:g})")
    p.add_argument("--read-timeout", type=float, metavar="SECONDS",
                   help=f"idle read timeout while streaming (default {default['read_timeout']:g})")
    p.add_argument("--permission-mode", metavar="MODE", help="ask (default), accept-edits, read-only or unrestricted: how calls that no rule decides are handled")
    p.add_argument("--max-turns", metavar="N", help="budget: most requests to the model from now (see /usage)")
    p.add_argument("--max-tokens", metavar="N", help="budget: most tokens, input and output, from now")
    p.add_argument("--max-cost", metavar="AMOUNT", help="budget: most cost from now, by the [prices] table")
    p.add_argument("--allow", action="append", metavar="RULE", help="allow calls matching RULE, e.g. 'execute_command(git status)' (repeatable)")
    p.add_argument("--ask", action="append", metavar="RULE", help="ask before calls matching RULE (repeatable)")
    p.add_argument("--deny", action="append", metavar="RULE", help="deny calls matching RULE, e.g. 'read_file(**/.env)'; deny always wins (repeatable)")
    s = p.add_mutually_exclusive_group()
    s.add_argument("--continue", dest="continue_", action="store_true",
                   help="resume the latest session of this working directory")
    s.add_argument("--resume", metavar="ID", help="resume session ID (a unique prefix is enough; 'dashfloat sessions' lists them)")
    s.add_argument("--no-journal", dest="journal", action="store_const", const=False,
                   help="keep no journal of this session (no --continue, no /undo)")
    h = p.add_argument_group("headless mode (scripts, CI, cron; see HEADLESS MODE in the man page)")
    h.add_argument("-p", "--print", dest="print_", nargs="?", const="", metavar="PROMPT",
                   help="run PROMPT to its end without the full-screen UI and exit; without PROMPT, "
                        "the prompt is read from stdin")
    h.add_argument("--output-format", choices=("text", "json", "stream-json"),
                   help="text (default: the final answer), json (one result object) or stream-json "
                        "(one JSON event a line, as it happens)")
    h.add_argument("-v", "--verbose", action="store_true",
                   help="with -p and text output: tool rows and progress on stderr")
    h.add_argument("--approvals", metavar="none|stdin|cmd:PROGRAM",
                   help="who answers a call that needs approval: nobody, so it is refused (none, the "
                        "default), JSON lines on stdin, or PROGRAM")
    h.add_argument("--approval-timeout", type=float, metavar="SECONDS",
                   help="reject a question unanswered after SECONDS (default 300 for stdin, 30 for a program)")
    p.add_argument("--all", action="store_true", help="with 'sessions': list the sessions of every directory")
    p.add_argument("--show-config", action="store_true", help="print the effective configuration and where each value came from, then exit")
    p.add_argument("--reset-terminal", action="store_true", help="print the sequence that repairs a terminal left broken by a killed program, then exit")
    p.add_argument("--version", action="version", version=f"dashfloat {__version__}")
    p.add_argument("--man", action="store_true",
                   help="show the manual page (through man if installed, else as text through $PAGER), then exit")
    p.add_argument(
        "command", nargs="*", metavar="policy|sessions",
        help="'policy check CALL...' prints the permission decision for each CALL, e.g. "
        "'execute_command(git status)'; 'policy list' prints every rule by layer and the mode. "
        "Both use the same configuration and options as a real run and execute nothing. "
        "'sessions' lists the sessions of this working directory (--all: of every directory).",
    )
    return p


POLICY_USAGE = "policy check CALL... | policy list | sessions [--all]"


def reset_sequence(environ) -> str:
    """What --reset-terminal prints. Never a full reset (RIS, ESC c): on the Linux console
    that drops the UTF-8 mode; with a UTF-8 locale, UTF-8 is selected again (ESC % G) in
    case the killed program left another character set."""
    from dashfloat.ui.theme import utf8_locale

    return RESET_SEQUENCE + (UTF8_SEQUENCE if utf8_locale(environ) else "")


def reset_terminal() -> int:
    from dashfloat.ui.theme import startup_environ, utf8_locale

    environ = startup_environ()
    sys.stdout.write(reset_sequence(environ))
    sys.stdout.flush()
    if sys.stdin.isatty():
        import termios

        iutf8 = getattr(termios, "IUTF8", 0o40000)  # the module has it from Python 3.13
        fd = sys.stdin.fileno()
        try:
            was_utf8 = bool(termios.tcgetattr(fd)[0] & iutf8)
        except termios.error:
            was_utf8 = False
        try:
            import subprocess

            subprocess.run(["stty", "sane"], check=False, stdin=sys.stdin)
        except OSError:
            pass
        # `stty sane` clears iutf8: Backspace would then erase half of a UTF-8 character
        if was_utf8 or utf8_locale(environ):
            try:
                attrs = termios.tcgetattr(fd)
                attrs[0] |= iutf8
                termios.tcsetattr(fd, termios.TCSANOW, attrs)
            except termios.error:
                pass
    return EXIT_OK


def _err(msg: str) -> None:
    from dashfloat.masking import mask

    sys.stderr.write(mask(f"dashfloat: {msg}\n"))


def _out(text: str) -> None:
    """Print a command's answer to stdout, with every configured secret masked."""
    from dashfloat.masking import mask

    sys.stdout.write(mask(text) + "\n")  # one write: a reader that stops early gets it whole


def setup_logging(state_dir) -> str | None:
    """Log to <state>/dashfloat.log; never to the screen. Returns the path or None.

    The log holds the audit trail: it is created 0600 in a 0700 directory (tightened if it
    exists with a wider mode), and every record is masked (`storage.MaskingFormatter`), so
    neither the API key nor a token in a URL reaches it, not even inside a traceback."""
    import logging  # here, not at the top: the first frame is painted before the log is set up

    from dashfloat import private, storage

    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    notes: list[str] = []
    path = os.path.join(state_dir, "dashfloat.log")
    try:
        notes += private.ensure_dir(state_dir)
        fd, more = private.open_private(path, os.O_WRONLY | os.O_APPEND)
        notes += more
        stream = os.fdopen(fd, "a", encoding="utf-8", errors="backslashreplace")
        handler: logging.Handler = storage.LogHandler(stream, path)
    except OSError as exc:  # said once (unless the state directory's notice said it already)
        storage.report("log", f"The log {path} could not be opened ({storage.describe(exc)}): "
                              "nothing is logged this session.")
        path = None
        handler = logging.NullHandler()
    handler.setFormatter(storage.MaskingFormatter("%(asctime)s %(levelname)s %(name)s [%(threadName)s] %(message)s"))
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    logging.raiseExceptions = False  # a failing log write must never print onto the screen
    for note in notes:
        logging.getLogger("dashfloat").info("private files: %s", note)
    return path


def check_state(new_session: bool) -> str | None:
    """None when DashFloat can write in its state directory; else why not, said once (the
    log, the history and the journal then stay quiet about it: dashfloat/storage.py).
    Before the log is set up, so that its failure is not said apart."""
    from dashfloat import storage
    from dashfloat.config import state_dir

    state = state_dir(os.environ)
    why = storage.probe(state)
    if why is not None:
        covers = storage.STATE_KINDS if new_session else tuple(k for k in storage.STATE_KINDS if k != "journal")
        storage.report("state", storage.unwritable(state, why, journal=new_session), covers=covers)
    return why


def unwritten(journal, why: str | None):
    """A new session's journal when the state directory cannot be written: marked as not
    written from the start (no second notice at the first prompt; /undo keeps its bytes in
    memory)."""
    if journal is not None and why is not None and not journal.started:
        journal.failed = why
    return journal


def main(argv: list[str] | None = None) -> int:
    """The `dashfloat` command. A reader that goes away before the output is written
    (`dashfloat --show-config | head -1`) ends it quietly, with status 141 as for a program
    that SIGPIPE ended, and no traceback."""
    # start-up makes ~35,000 objects that live as long as the process, and the collector
    # would walk them some 60 times before the first frame (~2 ms of the ~43 ms of CPU it
    # takes): off until then (the TUI: App's first frame; -p: before its run; the rest on
    # the way out), when they are frozen out of its sight (ui/app.py settle)
    gc.disable()
    try:
        try:
            code = _main(argv)
        except SystemExit:  # argparse: --help, --version, a usage error
            sys.stdout.flush()
            sys.stderr.flush()
            raise
        sys.stdout.flush()
        sys.stderr.flush()
        return code
    except BrokenPipeError:
        _quiet_after_broken_pipe()
        return EXIT_PIPE
    except KeyboardInterrupt:  # Ctrl-C while starting, before a front end handles it
        return EXIT_INTERRUPTED
    finally:
        gc.enable()


def _quiet_after_broken_pipe() -> None:
    """Point stdout and stderr at /dev/null, so the interpreter's last flush of what is still
    buffered does not print "Exception ignored ... BrokenPipeError" either."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        os.close(devnull)
    except OSError:
        pass


HEADLESS_ONLY = (("output_format", "--output-format"), ("verbose", "--verbose"), ("approvals", "--approvals"),
                 ("approval_timeout", "--approval-timeout"))
PROMPT_MAX = 16 * 1024 * 1024  # bytes of a prompt read from stdin


def ensure_std_fds() -> None:
    """Give a closed stdin, stdout or stderr /dev/null, so that no file DashFloat opens
    later gets descriptor 0, 1 or 2 (output meant for stdout would land in it)."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            try:
                null = os.open(os.devnull, os.O_RDWR)
                if null != fd:
                    os.dup2(null, fd)
                    os.close(null)
            except OSError:
                pass
    if sys.stderr is None:
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
    if sys.stdout is None:
        sys.stdout = open(1, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115


def _main(argv: list[str] | None) -> int:
    ensure_std_fds()
    parser = build_parser()
    args = parser.parse_intermixed_args(argv)
    words = list(args.command)
    headless = args.print_ is not None
    if not headless:
        given = [flag for name, flag in HEADLESS_ONLY if getattr(args, name) not in (None, False)]
        if given:
            parser.error(f"{', '.join(given)} go{'es' if len(given) == 1 else ''} with -p (headless mode): "
                         "dashfloat -p PROMPT")
    elif words or args.show_config or args.reset_terminal or args.all or args.man:
        parser.error("-p runs a prompt: not with policy, sessions, --show-config, --reset-terminal or --man")
    if words[:1] == ["sessions"]:
        if len(words) > 1:
            parser.error(f"sessions takes no arguments, got {' '.join(map(repr, words[1:]))} (--all lists every directory's)")
        return sessions_command(args)
    if args.all:
        parser.error("--all goes with 'sessions' (dashfloat sessions --all)")
    if words:
        example = "e.g. dashfloat policy check 'execute_command(git status)'"
        if words[0] != "policy" or len(words) < 2 or words[1] not in ("check", "list"):
            parser.error(f"unexpected arguments {' '.join(map(repr, words))}; the only "
                         f"command is {POLICY_USAGE} ({example})")
        if words[1] == "check" and len(words) < 3:
            parser.error(f"policy check needs at least one CALL ({example})")
        if words[1] == "list" and len(words) > 2:
            parser.error(f"policy list takes no arguments, got {' '.join(map(repr, words[2:]))}")
    if args.reset_terminal:
        return reset_terminal()
    if args.man:
        from dashfloat.mantext import show

        return show()

    from dashfloat.deferred import defer_startup

    defer_startup()  # asyncio, ssl, secrets: loaded only if something uses them
    from dashfloat.config import ConfigError, load_config, state_dir

    session = None
    if args.continue_ or args.resume:
        if words or args.show_config:
            parser.error("--continue and --resume start a session: not with policy or --show-config")
        try:
            session = find_session(args)
        except ValueError as exc:
            _err(str(exc))
            return EXIT_USAGE
        args.root = session.cwd
    cli = {
        "root": args.root,
        "base_url": args.base_url,
        "model": args.model,
        "colors": args.colors,
        "ascii": args.ascii,
        "connect_timeout": args.connect_timeout,
        "read_timeout": args.read_timeout,
        "permission_mode": args.permission_mode,
        "allow": args.allow,
        "ask": args.ask,
        "deny": args.deny,
        "journal": args.journal,
        "max_turns": args.max_turns,
        "max_tokens": args.max_tokens,
        "max_cost": args.max_cost,
    }
    try:
        config = load_config(cli, os.environ, os.getcwd())
    except ConfigError as exc:
        _err(str(exc))
        return EXIT_USAGE
    from dashfloat import masking

    masking.register(masking.collect(config.api_key, config.headers))

    if words:
        return policy_command(config, words[1], words[2:])

    if args.show_config:
        from dashfloat.config import describe

        _out("\n".join(describe(config)))
        return EXIT_OK

    if headless:
        gc.enable()  # (off for start-up: main) a run makes and drops objects from here on
        return headless_command(args, config, session)

    term = os.environ.get("TERM", "")
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        _err("needs an interactive terminal (stdin and stdout must be a tty); for scripts, "
             "dashfloat -p PROMPT runs without one (HEADLESS MODE in the man page).")
        return EXIT_USAGE
    if term in DUMB_TERMS:
        _err(f"TERM={term or '(unset)'} cannot drive a full-screen program; set TERM (e.g. xterm-256color).")
        return EXIT_USAGE

    try:
        os.chdir(config.root)
    except OSError as exc:
        _err(f"cannot enter {config.root}: {exc.strerror}")
        return EXIT_USAGE

    journal = None
    if session is not None:
        journal = session_journal(session, config)
        if journal is None:
            return EXIT_USAGE

    early = show_early_frame(config)
    try:
        problem = check_state(new_session=journal is None and config.journal)
        log_path = setup_logging(state_dir(os.environ))
        return run_ui(config, log_path, early, journal, state_problem=problem)
    except BaseException:
        if early is not None:
            early.abort()
        raise


def session_journal(session, config):
    """The journal of the session --continue or --resume names, locked; None (said why)."""
    if not config.journal:
        _err("--continue and --resume add to the session's journal, and the journal is off "
             f"({config.sources.get('journal', 'journal = false')}); turn it on to resume")
        return None
    from dashfloat.journal import Busy

    try:
        return open_journal(session.path, config)
    except Busy as exc:
        _err(f"{exc}. Without --continue or --resume, a new session starts.")
    except OSError as exc:
        if os.access(session.path, os.R_OK):  # a read-only or full disk: resumed all the same, unrecorded
            return unrecorded_journal(session, config, exc)
        _err(f"cannot open the session's journal {session.path}: {exc.strerror or exc}")
    return None


def unrecorded_journal(session, config, exc: OSError):
    """A session's journal that can be read but not appended to (a read-only or full
    disk): the session is resumed from it, and what follows is not recorded (said once)."""
    from dashfloat import masking, storage
    from dashfloat.journal import Journal

    why = storage.describe(exc)
    journal = Journal(session.path, {"id": session.id}, secrets=masking.registered(),
                      undo_max=config.undo_store_mb * 1024 * 1024)
    journal.failed = why
    storage.report("journal", f"The session's journal {session.path} cannot be written ({why}): the session "
                              "is resumed from it, but nothing that follows is recorded (/undo works from memory).")
    return journal


def load_resumed(journal, config):
    """Read a locked session's journal: (config with the session's model, sessions.Loaded).
    Raises sessions.SessionError (the journal is closed then)."""
    from dashfloat import sessions

    try:
        resumed = sessions.load(journal.path)
    except sessions.SessionError:
        journal.close("unreadable")
        raise
    journal.seq = resumed.next_seq
    journal.header.update(resumed.header)
    if resumed.model and not config.sources.get("model", "").startswith("command line"):
        config = config.replace(model=resumed.model)  # the session's model
    import logging

    logging.getLogger("dashfloat").info("resuming session %s (%d bytes, %d turns)", journal.id, resumed.size,
                                        resumed.turns)
    return config, resumed


def read_prompt(args) -> str:
    """The prompt of a headless run: -p PROMPT, or all of stdin (-p alone); ValueError why not."""
    if args.print_:
        prompt = args.print_
    else:
        if args.approvals == "stdin":
            raise ValueError("--approvals stdin reads the answers from stdin: give the prompt as -p PROMPT")
        try:
            if os.isatty(0):
                raise ValueError("-p without a PROMPT reads the prompt from stdin, and stdin is a terminal: "
                                 "dashfloat -p 'PROMPT', or pipe the prompt in")
            data = _read_limited(0, PROMPT_MAX)
        except OSError as exc:
            raise ValueError(f"cannot read the prompt from stdin: {exc.strerror or exc}") from None
        if len(data) > PROMPT_MAX:
            raise ValueError(f"the prompt on stdin is longer than {PROMPT_MAX // (1024 * 1024)} MiB")
        try:
            prompt = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"the prompt on stdin is not UTF-8 (byte {exc.start} is {data[exc.start]:#04x})") from None
    if not prompt.strip():
        raise ValueError("the prompt is empty" + ("" if args.print_ else " (nothing on stdin)"))
    return prompt


def _read_limited(fd: int, limit: int) -> bytes:
    chunks, total = [], 0
    while total <= limit:
        chunk = os.read(fd, 1024 * 1024)
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def headless_command(args, config, session) -> int:
    """`dashfloat -p`: check what the run needs, then run it (dashfloat/headless.py)."""
    from dashfloat import approvals, commands
    from dashfloat.config import state_dir

    try:
        mode, program = approvals.parse_mode(args.approvals)
        timeout = approvals.parse_timeout(args.approval_timeout)
        prompt = read_prompt(args)
    except ValueError as exc:
        _err(str(exc))
        return EXIT_USAGE
    command = commands.parse(prompt)
    if command is not None and commands.lookup(command[0]) is None:
        _err(commands.unknown_text(command[0]))
        return EXIT_USAGE
    try:
        os.chdir(config.root)
    except OSError as exc:
        _err(f"cannot enter {config.root}: {exc.strerror}")
        return EXIT_USAGE
    problem = check_state(new_session=session is None and config.journal)
    setup_logging(state_dir(os.environ))
    journal = resumed = None
    if session is not None:
        journal = session_journal(session, config)
        if journal is None:
            return EXIT_USAGE
        from dashfloat import sessions

        try:
            config, resumed = load_resumed(journal, config)
        except sessions.SessionError as exc:
            _err(str(exc))
            return EXIT_USAGE
    elif config.journal:
        journal = unwritten(new_journal(config), problem)
    from dashfloat import headless

    opts = headless.Options(prompt, output_format=args.output_format or "text", verbose=args.verbose,
                            approvals=mode, program=program, approval_timeout=timeout)
    import logging

    logging.getLogger("dashfloat").info("starting dashfloat %s headless: base_url=%s model=%s", __version__,
                                        config.base_url, config.model)
    return headless.run(config, opts, journal=journal, resumed=resumed)


def find_session(args):
    """The session --continue or --resume names (sessions.Info); ValueError saying why not.
    It runs in its own working directory: -C, if given, must be that directory."""
    from dashfloat import sessions

    given = os.path.realpath(args.root) if args.root else None
    if args.resume:
        try:
            info = sessions.find(os.environ, args.resume)
        except sessions.SessionError as exc:
            raise ValueError(str(exc)) from None
        if given is not None and given != info.cwd:
            raise ValueError(f"session {info.id} belongs to {info.cwd}, not {given}: leave out -C "
                             "(it resumes in its own directory)")
    else:
        here = given or os.path.realpath(os.getcwd())
        info = sessions.latest(os.environ, here)
        if info is None:
            raise ValueError(f"there is no session to continue in {here}; `dashfloat sessions --all` "
                             "lists the sessions of every directory")
    if not os.path.isdir(info.cwd):
        raise ValueError(f"session {info.id} belongs to {info.cwd}, which no longer exists")
    return info


def open_journal(path, config):
    """An existing session's journal, locked for appending (journal.Busy when another
    DashFloat has it)."""
    from dashfloat import masking
    from dashfloat.journal import Journal
    from dashfloat.sessions import read_info

    info = read_info(path)
    header = {"id": info.id if info else path.stem}
    return Journal(path, header, secrets=masking.registered(), undo_max=config.undo_store_mb * 1024 * 1024,
                   existing=True)


def new_journal(config):
    """The journal of a new session (its file is created at the first prompt)."""
    from urllib.parse import urlsplit

    from dashfloat import masking
    from dashfloat.journal import Journal, new_id, project_dir

    real = os.path.realpath(config.root)
    sid = new_id()
    header = {"id": sid, "cwd": real, "model": config.model, "host": urlsplit(config.base_url).hostname or "",
              "dashfloat": __version__}
    return Journal(project_dir(os.environ, real) / f"{sid}.jsonl", header,
                   secrets=masking.registered(), undo_max=config.undo_store_mb * 1024 * 1024)


def sessions_command(args) -> int:
    """`dashfloat sessions [--all]`: id, start, last activity, turns, tokens, first prompt
    (and directory, with --all), newest first; each file's header and tail only."""
    from dashfloat import sessions

    here = os.path.realpath(args.root or os.getcwd())
    infos = sessions.list_sessions(os.environ, None if args.all else here)
    if not infos:
        where = "" if args.all else f" in {here}"
        more = "" if args.all else " (`dashfloat sessions --all` lists every directory's)"
        _out(f"No sessions{where}{more}.")
        return EXIT_OK
    text = sessions.format_listing(infos, with_dirs=args.all)
    if not args.all:
        text = f"Sessions in {here}, newest activity first:\n{text}"
    from dashfloat.manpage import self_command

    me = self_command()  # `python3 dashfloat.pyz` or the single executable's path, as typed
    tail = f"\n{me} --resume ID resumes one (a unique prefix of the ID is enough)" + (
        f"; {me} --continue the latest." if not args.all else ".")
    _out(text + tail)
    return EXIT_OK


def policy_command(config, action: str, calls: list[str]) -> int:
    """`dashfloat policy check CALL...` / `dashfloat policy list`: judge, never execute.

    Uses the same configuration files, environment and options as a real run; needs no
    terminal. Exit 0 whatever the decisions; 2 for a malformed CALL (nothing is printed to
    stdout then).
    """
    from dashfloat.tools import pipeline, rules
    from dashfloat.tools.permissions import Policy, one_line

    policy = Policy.from_config(config)
    if action == "list":
        _out("\n".join(policy.describe()))
        return EXIT_OK
    parsed = []
    for text in calls:
        try:
            parsed.append(rules.parse_call(text))
        except rules.RuleError as exc:
            _err(f"policy check: {one_line(str(exc))}")
            return EXIT_USAGE
    out = []
    for name, call_args in parsed:
        decision = pipeline.judge(name, call_args, str(config.root), policy)
        out.append(f"{decision.decision:<6} {one_line(rules.format_call(name, call_args))}")
        out.append(f"  decided by: {one_line(decision.who)}")
        out.append(f"  reason: {one_line(decision.reason)}")
        out.append(f"  mode: {policy.mode}")
    _out("\n".join(out))
    return EXIT_OK


def show_early_frame(config):
    """Paint the initial screen before urwid loads (see ui/early.py); None if it cannot."""
    from dashfloat.ui import theme
    from dashfloat.ui.early import EarlyFrame
    from dashfloat.ui.statusline import status_markup

    glyphs = theme.ASCII if theme.choose_ascii(config.ascii, theme.startup_environ()) else theme.UNICODE
    try:
        cols = os.get_terminal_size(sys.stdout.fileno()).columns
        status = "".join(
            text for _attr, text in status_markup(
                phase="idle", spinner=" ", model=config.model, tokens=None, position=None,
                notice="", width=cols, sep=glyphs.sep, dot=glyphs.system,
            )
        )
        if theme.choose_ascii(config.ascii, theme.startup_environ()):
            status = status.encode("ascii", "replace").decode("ascii")
        early = EarlyFrame(sys.stdin.fileno(), sys.stdout.fileno())
        early.show(status, glyphs.user)
        return early
    except (OSError, ValueError):
        return None


def run_ui(config, log_path: str | None, early=None, journal=None, state_problem: str | None = None) -> int:
    import logging

    log = logging.getLogger("dashfloat")
    from dashfloat.agent import Agent, options_from
    from dashfloat.config import state_dir
    from dashfloat.history import History
    from dashfloat.llm.endpoint import Endpoint
    from dashfloat.ui import theme

    use_ascii = theme.choose_ascii(config.ascii, theme.startup_environ())
    if use_ascii:
        theme.use_ascii_encoding()
    from dashfloat.ui.app import App
    from dashfloat.ui.bridge import Outbox

    endpoint = Endpoint(
        base_url=config.base_url,
        api_key=config.api_key,
        api_key_env=config.api_key_env,
        headers=dict(config.headers),
        connect_timeout=config.connect_timeout,
        read_timeout=config.read_timeout,
        is_default=config.base_url_is_default,
    )
    from dashfloat.ui.app import QUIET_KINDS

    outbox = Outbox(QUIET_KINDS)
    from dashfloat.tools.permissions import Policy

    resumed = None
    if journal is not None:  # --continue / --resume: the journal is locked; read it now
        from dashfloat import sessions

        try:
            config, resumed = load_resumed(journal, config)
        except sessions.SessionError as exc:
            if early is not None:
                early.abort()
            _err(str(exc))
            return EXIT_USAGE
    elif config.journal:
        journal = unwritten(new_journal(config), state_problem)
    # the policy is built here, not at first use: the full-screen app shows its mode at once
    agent = Agent(endpoint, config.model, outbox.post, journal=journal, resumed=resumed,
                  **{**options_from(config), "policy": Policy.from_config(config)})
    from dashfloat import masking

    # the configured key in a prompt is masked in the history file (Up shows the mask then)
    history = History(state_dir(os.environ) / "history", secrets=masking.registered())
    history.read_only = state_problem is not None  # what is there is still read; new prompts stay in memory
    history.load()
    from dashfloat.ui.screen import DashScreen

    screen = DashScreen(bracketed_paste_mode=True)
    term_colors = theme.terminfo_colors(os.environ.get("TERM", "")) if config.colors == "auto" else None
    depth = theme.choose_depth(config.colors, screen.colors, term_colors)
    if os.environ.get("DASHFLOAT_NO_SCROLL_REGIONS"):
        screen.scroll_optimisation = False  # for terminals that mishandle DECSTBM margins
    if os.environ.get("DASHFLOAT_NO_FRAME_CLOCK"):
        screen.clock.enabled = False  # frames as fast as they come (for comparisons)
    app = App(agent=agent, outbox=outbox, model_name=config.model, ascii=use_ascii, depth=depth,
              history=history, log_path=log_path, base_url=config.base_url)
    from dashfloat import messages, storage

    storage.attach(lambda text: outbox.post(messages.system("warn", text)))  # what could not be written
    log.info("starting dashfloat %s: base_url=%s model=%s depth=%d ascii=%s", __version__,
             config.base_url, config.model, depth, use_ascii)

    # stray writes to stderr (a library's warning, a last-resort traceback) must not land
    # on the live screen: point fd 2 at the log while the UI runs
    saved_stderr = _redirect_stderr(log_path)
    python_stderr, sys.stderr = sys.stderr, masking.MaskingStream(sys.stderr)
    crash: BaseException | None = None
    try:
        app.build_loop(screen)
        if resumed is not None:  # the transcript as it was
            from dashfloat.sessions import ui_messages

            app.replay(ui_messages(resumed))
        if early is not None:  # urwid takes over: what was typed meanwhile is replayed
            screen.early_input = early.finish()
        app.run()
    except KeyboardInterrupt:
        pass
    except Exception as exc:  # urwid has restored the terminal by now
        from dashfloat.hangup import hung_up

        if hung_up(exc, sys.stdin.fileno()):
            # an ssh drop or a closed terminal window: the man page's quiet exit, status 0
            log.info("terminal closed (hangup)")
        else:
            crash = exc
            log.exception("dashfloat crashed")
    finally:
        sys.stderr = python_stderr
        _restore_stderr(saved_stderr)
    agent.join(timeout=1.0)
    if crash is not None:
        import traceback

        summary = traceback.format_exception_only(type(crash), crash)[-1].strip()
        _err(f"crashed: {summary}")
        if log_path:
            _err(f"the full traceback is in {log_path}")
        return EXIT_RUNTIME
    return EXIT_OK


def _redirect_stderr(log_path: str | None):
    try:
        saved = os.dup(2)
        target = os.open(log_path or os.devnull, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        os.dup2(target, 2)
        os.close(target)
        return saved
    except OSError:
        return None


def _restore_stderr(saved) -> None:
    if saved is None:
        return
    try:
        os.dup2(saved, 2)
        os.close(saved)
    except OSError:
        pass


if __name__ == "__main__":
    sys.exit(main())
