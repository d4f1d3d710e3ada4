"""`dashfloat --man` without man: the roff-to-text renderer and how the page is shown."""

from __future__ import annotations

import os
import pty
import shutil
import subprocess
import sys

import pytest

from dashfloat import manpage, mantext

PAGE = manpage.generate()
CAT = shutil.which("cat")  # the fake programs run with a PATH of their own


def test_every_macro_and_escape_of_the_page_is_known():
    mantext.render(PAGE)  # raises RoffError on anything it does not know


def test_unknown_macros_and_escapes_are_refused_not_dropped():
    with pytest.raises(mantext.RoffError, match=r"\.UR"):
        mantext.render(".SH X\n.UR http://x\n")
    with pytest.raises(mantext.RoffError, match=r"\\\(co"):
        mantext.render("a \\(co b\n")


@pytest.mark.skipif(not shutil.which("groff"), reason="groff not installed: nothing to compare with")
def test_the_text_has_the_same_characters_as_groffs_rendering():
    """Every character groff prints (hyphenation off), in the same order; only the spacing
    and where lines break may differ."""
    groff = subprocess.run(["groff", "-man", "-Tascii", "-rHY=0", "-rcR=1"], input=PAGE, capture_output=True,
                           text=True, check=True).stdout
    # col -b: an overstruck character is "X\bX" (bold) or "_\bX" (underlined): keep the last
    plain = []
    i = 0
    while i < len(groff):
        if groff[i + 1:i + 2] == "\b":
            i += 2
            continue
        plain.append(groff[i])
        i += 1
    expected = "".join("".join(plain).split())
    assert "".join(mantext.render(PAGE).split()) == expected


def test_filled_lines_fit_the_width_and_keep_the_indents():
    text = mantext.render(PAGE, 60)
    lines = text.splitlines()
    assert lines[0].startswith("DASHFLOAT(1)") and lines[0].endswith("DASHFLOAT(1)")
    assert lines[-1].startswith("dashfloat ") and lines[-1].endswith("DASHFLOAT(1)")
    assert "NAME" in lines and "SYNOPSIS" in lines and "OPTIONS" in lines
    # a section's body is indented 7, a .TP body 14, a subsection heading 3
    i = lines.index("OPTIONS")
    assert lines[i + 1].startswith("       -C DIR Start in DIR.")  # a short tag shares its line
    assert lines[i + 2].startswith("              ")
    assert "   Rules" in lines
    # filled text fits (a no-fill block, an example, may be wider, as with man)
    nofill = set()
    for block in PAGE.split(".nf\n")[1:]:
        nofill.update(mantext.unescape(x).strip() for x in block.split(".fi\n")[0].splitlines())
    for line in lines[1:-1]:
        if line.strip() not in nofill and " " in line.strip():
            assert len(line) <= 60, line


def test_a_long_tag_is_filled_on_its_own_lines_above_the_body():
    text = mantext.render(".SH X\n.TP\n" + " ".join(f"word{i}" for i in range(30)) + "\nbody text\n", 40)
    lines = text.strip("\n").splitlines()
    assert lines[0] == "X"
    assert all(len(line) <= 40 for line in lines)
    assert lines[1].startswith("       word0 word1")
    assert lines[-1] == "              body text"


def test_blocks_and_lists():
    roff = (".SH S\nIntro\n.IP 1. 4\nfirst item\n.PP\n.RS\n.nf\nkeep   this\n  and this\n.fi\n.RE\n"
            ".PP\nafter \\- done \\fBbold\\fR \\(lqq\\(rq\n.B rm\\ *\n.BR \"a b\" c\n")
    assert mantext.render(roff).splitlines() == [
        "S",
        "       Intro",
        "",
        "       1.  first item",
        "",
        "              keep   this",
        "                and this",
        "",
        '       after - done bold "q" rm * a bc',
    ]


def test_arguments_quotes_and_escaped_spaces():
    assert mantext.arguments('a "b c" "say ""hi""" d\\ e') == ["a", "b c", 'say "hi"', "d\\\u00a0e"]


def _fake(tmp_path, name, script):
    path = tmp_path / "bin" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)
    return path


class _Out:
    def __init__(self, fd):
        self.fd = fd
        self.data = []

    def fileno(self):
        return self.fd

    def write(self, text):
        os.write(self.fd, text.encode())

    def flush(self):
        pass


def test_man_is_used_when_it_exists(tmp_path):
    _fake(tmp_path, "man", f'echo "$@" > {tmp_path}/args; {CAT} > {tmp_path}/stdin\n')
    out = tmp_path / "out"
    with open(out, "w") as f:
        code = mantext.show({"PATH": str(tmp_path / "bin")}, f)
    assert code == 0
    assert (tmp_path / "args").read_text().split() == ["-l", "-"]
    assert (tmp_path / "stdin").read_text() == PAGE
    assert out.read_text() == ""


def test_without_man_the_text_goes_straight_to_a_pipe_or_file(tmp_path):
    _fake(tmp_path, "less", f"{CAT} > {tmp_path}/paged\n")
    with open(tmp_path / "out", "w") as f:
        assert mantext.show({"PATH": str(tmp_path / "bin"), "PAGER": "less"}, f) == 0
    assert (tmp_path / "out").read_text() == mantext.render(PAGE)
    assert not (tmp_path / "paged").exists()  # no pager for a file


def test_the_man_of_a_minimized_ubuntu_is_not_used(tmp_path):
    """Ubuntu's minimized images replace man with a script that prints a notice and exits 0."""
    _fake(tmp_path, "man", "echo 'This system has been minimized by removing packages and content that are'\n"
                           "echo 'not required on a system that users do not log into.'\n"
                           "echo 'To restore this content, including manpages, you can run the 'unminimize''\n")
    with open(tmp_path / "out", "w") as f:
        assert mantext.show({"PATH": str(tmp_path / "bin")}, f) == 0
    assert (tmp_path / "out").read_text() == mantext.render(PAGE)


def test_a_man_that_fails_falls_back_to_the_text(tmp_path):
    _fake(tmp_path, "man", "echo 'man: invalid option -- l' >&2; exit 1\n")
    with open(tmp_path / "out", "w") as f:
        assert mantext.show({"PATH": str(tmp_path / "bin")}, f) == 0
    assert (tmp_path / "out").read_text() == mantext.render(PAGE)


@pytest.mark.parametrize("pager_env", ["mypager -x", None])
def test_without_man_a_terminal_gets_the_text_through_the_pager(tmp_path, pager_env):
    name = "mypager" if pager_env else "less"
    _fake(tmp_path, name, f'echo "$@" > {tmp_path}/args; {CAT} > {tmp_path}/paged\n')
    env = {"PATH": str(tmp_path / "bin"), "MANWIDTH": "72"}
    if pager_env:
        env["PAGER"] = pager_env
    master, slave = pty.openpty()
    try:
        assert mantext.show(env, _Out(slave)) == 0
    finally:
        os.close(slave)
        os.close(master)
    assert (tmp_path / "paged").read_text() == mantext.render(PAGE, 70)
    assert (tmp_path / "args").read_text().split() == (["-x"] if pager_env else [])


def test_a_terminal_without_man_or_pager_gets_the_text_written(tmp_path):
    (tmp_path / "bin").mkdir()
    master, slave = pty.openpty()
    got = b""
    try:
        import threading

        def read():
            nonlocal got
            while True:
                try:
                    chunk = os.read(master, 65536)
                except OSError:
                    return
                if not chunk:
                    return
                got += chunk

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        assert mantext.show({"PATH": str(tmp_path / "bin"), "COLUMNS": "80"}, _Out(slave)) == 0
    finally:
        os.close(slave)
        reader.join(5)
        os.close(master)
    assert b"NAME" in got and b"SEE ALSO" in got


def test_the_man_flag_runs_from_the_command_line(tmp_path):
    env = {"PATH": str(tmp_path), "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "dashfloat", "--man"], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == mantext.render(PAGE)


def test_help_names_the_man_flag_when_no_page_is_installed():
    assert manpage.man_command({"PATH": "/nonexistent"}, exists=lambda p: False, command="dashfloat") == "dashfloat --man"
    assert manpage.self_command(pyz="") == "dashfloat"


def test_from_a_pyz_the_command_is_python3_and_the_path_as_typed(tmp_path):
    pyz = tmp_path / "dashfloat.pyz"
    pyz.write_bytes(b"")
    os.chdir(tmp_path)
    env = {"PATH": "/nonexistent"}
    assert manpage.self_command("dashfloat.pyz", str(pyz), env) == "python3 dashfloat.pyz"
    assert manpage.self_command("/elsewhere/x", str(pyz), env) == f"python3 {pyz}"


def test_a_pyz_installed_as_dashfloat_on_the_path_is_dashfloat(tmp_path):
    (tmp_path / "bin").mkdir()
    pyz = tmp_path / "bin" / "dashfloat"
    pyz.write_bytes(b"")
    pyz.chmod(0o755)
    assert manpage.self_command(str(pyz), str(pyz), {"PATH": str(tmp_path / "bin")}) == "dashfloat"
    assert manpage.self_command(str(pyz), str(pyz), {"PATH": "/nonexistent"}) == f"python3 {pyz}"


def test_from_the_single_executable_the_command_is_its_path_as_typed(tmp_path):
    """make exe: no python3 in front; `dashfloat` when it is installed under that name."""
    (tmp_path / "bin").mkdir()
    exe = tmp_path / "dashfloat-x86_64"
    exe.write_bytes(b"")
    os.chdir(tmp_path)
    env = {"PATH": "/nonexistent"}
    assert manpage.self_command("./dashfloat-x86_64", "", env, exe=str(exe)) == "./dashfloat-x86_64"
    assert manpage.self_command("/elsewhere/x", "", env, exe=str(exe)) == str(exe)
    installed = tmp_path / "bin" / "dashfloat"
    installed.write_bytes(b"")
    installed.chmod(0o755)
    assert manpage.self_command(str(installed), "", {"PATH": str(tmp_path / "bin")}, exe=str(installed)) == "dashfloat"
    assert manpage.man_command(env, exists=lambda p: False, command=None) == "dashfloat --man"  # not frozen here


def test_man_is_not_a_headless_option(tmp_path):
    done = subprocess.run([sys.executable, "-m", "dashfloat", "-p", "hi", "--man"], capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}, timeout=60)
    assert done.returncode == 2
    assert "not with policy, sessions, --show-config, --reset-terminal or --man" in done.stderr


def test_help_names_how_to_open_the_manual():
    """build_parser leaves the description to --help (man_command stats every man directory):
    --help must still say how to open the manual."""
    from dashfloat import cli, manpage

    text = cli.build_parser().format_help()
    assert f"or {manpage.man_command()}." in " ".join(text.split())


@pytest.mark.parametrize("columns", [None, "50", "200", "0", "-3", "wide"])
def test_help_is_as_wide_as_shutil_would_make_it(monkeypatch, columns):
    """The parser's formatter finds its width without shutil (start-up time): the same
    width shutil.get_terminal_size() gives, for every $COLUMNS."""
    import shutil

    from dashfloat import cli

    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    monkeypatch.delenv("LINES", raising=False)
    assert cli._terminal_columns() == shutil.get_terminal_size().columns
    assert cli.build_parser()._get_formatter()._width == shutil.get_terminal_size().columns - 2
