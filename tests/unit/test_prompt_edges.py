"""The system message's edges (dashfloat/prompt.py), exact to the character: the sizes and
the start-up entry, the directories from the git root down, the user's file (shown with ~,
an override that is not a file, a directory in its place, XDG_CONFIG_HOME without HOME),
the bounded reads (limit + 1 bytes across chunks, what is left unread counted in the cut),
the 32 KiB cut at its exact edges (a body that just fits, one cut inside, one cut to nothing,
a character cut in two), the project file that is a dangling link or a directory, a working
directory that does not exist, and the built-in prompt line by line (the OS line, what
/bin/sh is, the tools that run at once and those that ask).

`make mutation` (tests/mutation/run_mutation.py) found these cases untested."""

from __future__ import annotations

import io
import os
import threading
from types import SimpleNamespace

import pytest

from dashfloat import prompt
from dashfloat.prompt import INSTRUCTIONS_MAX, Instructions
from tests.unit.test_prompt import tree

HEADER = ("# Project instructions (AGENTS.md)\n\nFrom the user's and the project's instruction files; "
          "a later (more specific) file wins over an earlier one, and the user's own requests win "
          "over both.\n\n")
USER = "~/.config/dashfloat/AGENTS.md"


# ---- sizes and the entry ----------------------------------------------------------------------


@pytest.mark.parametrize(("n", "shown"), [(0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (1536, "1.5 KiB"),
                                          (32768, "32.0 KiB")])
def test_sizes_are_bytes_below_a_kib_then_kib_to_a_tenth(n, shown):
    assert prompt._size(n) == shown


def test_the_entry_names_every_file_its_size_the_cut_and_each_problem():
    found = Instructions(files=[("~/a/AGENTS.md", 10), ("AGENTS.md", 2048)], cut=3000,
                         problems=["x/AGENTS.md: Permission denied", "y: not a regular file"])
    assert found.entry() == (
        "Instructions loaded: ~/a/AGENTS.md (10 B), AGENTS.md (2.0 KiB); cut at 32 KiB, 2.9 KiB left out.\n"
        "Instructions not loaded: x/AGENTS.md: Permission denied.\n"
        "Instructions not loaded: y: not a regular file.")
    assert Instructions(files=[("AGENTS.md", 5)]).entry() == "Instructions loaded: AGENTS.md (5 B)."
    assert Instructions(problems=["p"]).entry() == "Instructions not loaded: p."


# ---- where the files are ----------------------------------------------------------------------


def test_project_dirs_go_from_the_git_root_down_to_the_working_directory(tmp_path):
    _env, repo = tree(tmp_path, {"repo/src/app/x": ""})
    assert prompt.project_dirs(str(repo / "src" / "app")) == (str(repo), [".", "src", os.path.join("src", "app")])
    assert prompt.project_dirs(str(repo)) == (str(repo), ["."])
    (tmp_path / "plain").mkdir()
    assert prompt.project_dirs(str(tmp_path / "plain")) == (str(tmp_path / "plain"), ["."])


def test_the_user_directory_is_under_xdg_config_home_and_none_without_a_home(tmp_path, monkeypatch):
    assert prompt.user_file({"HOME": "/h"}) == "/h/.config/dashfloat"
    assert prompt.user_file({"HOME": "/h", "XDG_CONFIG_HOME": "/x"}) == "/x/dashfloat"
    import pwd

    def no_entry(uid):
        raise KeyError(uid)

    monkeypatch.setattr(pwd, "getpwuid", no_entry)
    assert prompt.user_file({}) is None


# ---- reading ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("size", "limit", "got"), [(100, 10, 11), (11, 10, 11), (5, 10, 5),
                                                     (200_000, 65_536, 65_537), (200_000, 150_000, 150_001)])
def test_a_read_takes_at_most_the_limit_and_one_byte_across_chunks(tmp_path, size, limit, got):
    path = tmp_path / "f"
    path.write_bytes(b"x" * size)
    fd = os.open(path, os.O_RDONLY)
    try:
        data, unread = prompt._read_fd(fd, limit)
    finally:
        os.close(fd)
    assert (len(data), unread) == (got, size - got)


def test_a_file_that_grew_after_its_size_was_taken_has_nothing_unread(tmp_path, monkeypatch):
    path = tmp_path / "f"
    path.write_bytes(b"x" * 8)
    real = os.fstat

    def smaller(fd):  # the size as it was before a writer appended 5 bytes
        st = real(fd)
        return os.stat_result((st.st_mode, st.st_ino, st.st_dev, st.st_nlink, st.st_uid, st.st_gid, 3,
                               st.st_atime, st.st_mtime, st.st_ctime))

    monkeypatch.setattr(os, "fstat", smaller)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert prompt._read_fd(fd, 100) == (b"x" * 8, 0)
    finally:
        os.close(fd)


def test_a_file_over_the_limit_is_counted_whole_in_what_is_left_out(tmp_path):
    """The cut says how much was left out of the files, not of the bytes it read."""
    env, repo = tree(tmp_path, {"repo/AGENTS.md": "x" * 100_000})
    found = prompt.load_instructions(str(repo), env)
    assert found.files == [("AGENTS.md", INSTRUCTIONS_MAX)]
    assert found.cut == 100_001 - INSTRUCTIONS_MAX  # the file and the newline its body ends with
    assert found.entry() == "Instructions loaded: AGENTS.md (32.0 KiB); cut at 32 KiB, 65.7 KiB left out."
    assert found.text.endswith("\n[DashFloat: the instructions were cut here: 65.7 KiB more of AGENTS.md "
                               "not loaded (32 KiB limit)]\n")


def test_the_user_file_is_shown_under_home_with_a_tilde(tmp_path):
    env, repo = tree(tmp_path, {"home/.config/dashfloat/AGENTS.md": "U"})
    found = prompt.load_instructions(str(repo), {"HOME": env["HOME"] + "/"})
    assert found.files == [(USER, 2)]
    # a home that is only a prefix of the name is not the user's home
    found = prompt.load_instructions(str(repo), {"HOME": env["HOME"][:-1], "XDG_CONFIG_HOME": env["HOME"] + "/.config"})
    assert found.files == [(env["HOME"] + "/.config/dashfloat/AGENTS.md", 2)]
    found = prompt.load_instructions(str(repo), {"XDG_CONFIG_HOME": env["HOME"] + "/.config"})
    assert found.files == [(env["HOME"] + "/.config/dashfloat/AGENTS.md", 2)]


def test_the_user_override_wins_and_an_empty_one_falls_back(tmp_path):
    env, repo = tree(tmp_path, {"home/.config/dashfloat/AGENTS.override.md": "OVER",
                                "home/.config/dashfloat/AGENTS.md": "PLAIN"})
    found = prompt.load_instructions(str(repo), env)
    assert found.files == [("~/.config/dashfloat/AGENTS.override.md", 5)]
    assert found.text == HEADER + "## ~/.config/dashfloat/AGENTS.override.md\n\nOVER\n"
    (repo.parent / "home/.config/dashfloat/AGENTS.override.md").write_text("\n \n")
    assert prompt.load_instructions(str(repo), env).files == [(USER, 6)]


def test_a_user_override_that_is_not_a_file_is_named_and_the_plain_file_still_read(tmp_path):
    env, repo = tree(tmp_path, {"home/.config/dashfloat/AGENTS.md": "PLAIN"})
    (repo.parent / "home/.config/dashfloat/AGENTS.override.md").mkdir()
    found = prompt.load_instructions(str(repo), env)
    assert found.problems == ["~/.config/dashfloat/AGENTS.override.md: AGENTS.override.md is not a regular file"]
    assert found.files == [(USER, 6)]


def test_a_user_fifo_does_not_block(tmp_path):
    env, repo = tree(tmp_path, {})
    fifo = repo.parent / "home/.config/dashfloat/AGENTS.md"
    os.mkfifo(fifo)
    done = []
    t = threading.Thread(target=lambda: done.append(prompt.load_instructions(str(repo), env)), daemon=True)
    t.start()
    t.join(5)
    if not done:  # release the blocked open before failing
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    assert done and done[0].problems == [f"{USER}: AGENTS.md is not a regular file"]


def test_a_user_directory_that_is_a_file_or_missing_or_none_reads_nothing(tmp_path):
    env, repo = tree(tmp_path, {"home/.config/dashfloat/AGENTS.md": "U", "afile": "x"})
    for user_dir in (str(tmp_path / "afile"), str(tmp_path / "missing"), None, ""):
        found = prompt.load_instructions(str(repo), env, user_dir=user_dir)
        assert (found.files, found.problems, found.text) == ([], [], ""), user_dir
    assert prompt.load_instructions(str(repo), env).files == [(USER, 2)]  # the default looks


def test_a_project_override_that_fails_falls_back_to_the_plain_file(tmp_path):
    env, repo = tree(tmp_path, {"repo/AGENTS.md": "PLAIN", "secret": "S"})
    os.symlink(tmp_path / "secret", repo / "AGENTS.override.md")
    found = prompt.load_instructions(str(repo), env)
    assert found.problems == ["AGENTS.override.md: a symbolic link that leads outside the project"]
    assert found.files == [("AGENTS.md", 6)]
    os.unlink(repo / "AGENTS.override.md")
    (repo / "AGENTS.override.md").mkdir()
    found = prompt.load_instructions(str(repo), env)
    assert found.problems == ["AGENTS.override.md: not a regular file"]
    assert found.files == [("AGENTS.md", 6)]


def test_a_dangling_link_and_a_link_to_a_file_on_the_way_are_absent_files(tmp_path):
    env, repo = tree(tmp_path, {"repo/notes": "n"})
    os.symlink("missing.md", repo / "AGENTS.md")
    os.symlink("notes", repo / "sub")  # sub/AGENTS.md: a file where a directory should be
    found = prompt.load_instructions(str(repo), env)
    assert (found.files, found.problems) == ([], [])
    assert prompt._read_beneath(SimpleNamespace(given=str(repo).encode(), open=_open_in(repo)),
                                os.path.join("sub", "AGENTS.md"), 10) is None


def _open_in(repo):
    return lambda rel, flags: os.open(os.path.join(repo, rel), flags)


def test_surely_absent_only_when_lstat_says_missing_without_a_link(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "f").write_text("x")
    os.symlink("d", tmp_path / "link")
    assert prompt._surely_absent(str(tmp_path), "AGENTS.md") is True
    assert prompt._surely_absent(str(tmp_path), os.path.join("d", "AGENTS.md")) is True
    assert prompt._surely_absent(str(tmp_path), os.path.join("f", "AGENTS.md")) is True  # not a directory
    assert prompt._surely_absent(str(tmp_path), "f") is False  # there: safeopen decides
    assert prompt._surely_absent(str(tmp_path), os.path.join("link", "AGENTS.md")) is False
    assert prompt._surely_absent(str(tmp_path), "n" * 300) is False  # an error: safeopen decides


def test_a_working_directory_that_is_gone_is_named(tmp_path):
    env, _repo = tree(tmp_path, {"home/.config/dashfloat/AGENTS.md": "U"})
    gone = tmp_path / "gone"
    found = prompt.load_instructions(str(gone), env)
    assert found.problems == [f"{gone}: No such file or directory"]
    assert found.files == [(USER, 2)] and found.text == HEADER + f"## {USER}\n\nU\n"


def test_a_byte_order_mark_goes_and_bad_bytes_are_replaced(tmp_path):
    env, repo = tree(tmp_path, {})
    (repo / "AGENTS.md").write_bytes(b"\xef\xbb\xbfrule \xff\n")
    assert prompt.load_instructions(str(repo), env).text == HEADER + "## AGENTS.md\n\nrule \ufffd\n"


# ---- the cut, at its edges --------------------------------------------------------------------


def test_bodies_that_fill_the_limit_exactly_are_not_cut(tmp_path):
    env, repo = tree(tmp_path, {"home/.config/dashfloat/AGENTS.md": "a" * 1000, "repo/AGENTS.md": "b" * 1046})
    found = prompt.load_instructions(str(repo), env, limit=2048)
    assert found.text == HEADER + f"## {USER}\n\n{'a' * 1000}\n\n## AGENTS.md\n\n{'b' * 1046}\n"
    assert (found.files, found.cut) == ([(USER, 1001), ("AGENTS.md", 1047)], 0)


def test_a_body_cut_inside_keeps_what_fits_and_the_marker_names_the_rest(tmp_path):
    env, repo = tree(tmp_path, {"home/.config/dashfloat/AGENTS.md": "a" * 1000, "repo/AGENTS.md": "b" * 2000,
                                "repo/sub/AGENTS.md": "c" * 10})
    found = prompt.load_instructions(str(repo / "sub"), env, limit=2048)
    assert found.files == [(USER, 1001), ("../AGENTS.md", 1047)]
    assert found.cut == 1001 + 2001 + 11 - 2048
    assert found.text == (HEADER + f"## {USER}\n\n{'a' * 1000}\n\n## ../AGENTS.md\n\n{'b' * 1047}\n\n"
                          "[DashFloat: the instructions were cut here: 965 B more of ../AGENTS.md, AGENTS.md "
                          "not loaded (2 KiB limit)]\n")
    assert found.entry() == f"Instructions loaded: {USER} (1001 B), ../AGENTS.md (1.0 KiB); cut at 32 KiB, 965 B left out."


def test_a_body_cut_to_nothing_is_not_listed(tmp_path):
    env, repo = tree(tmp_path, {"home/.config/dashfloat/AGENTS.md": "a" * 2047, "repo/AGENTS.md": "x"})
    found = prompt.load_instructions(str(repo), env, limit=2048)
    assert (found.files, found.cut) == ([(USER, 2048)], 2)
    assert found.text == (HEADER + f"## {USER}\n\n{'a' * 2047}\n\n"
                          "[DashFloat: the instructions were cut here: 2 B more of AGENTS.md not loaded (2 KiB limit)]\n")


def test_a_character_cut_in_two_is_left_out_whole(tmp_path):
    env, repo = tree(tmp_path, {"repo/AGENTS.md": "é" * 1100})
    found = prompt.load_instructions(str(repo), env, limit=2047)
    assert found.files == [("AGENTS.md", 2046)]
    assert found.cut == 2201 - 2046
    assert found.text == (HEADER + "## AGENTS.md\n\n" + "é" * 1023 + "\n\n[DashFloat: the instructions were cut "
                          "here: 155 B more of AGENTS.md not loaded (1 KiB limit)]\n")


def test_every_file_read_is_closed(tmp_path):
    env, repo = tree(tmp_path, {"home/.config/dashfloat/AGENTS.md": "U", "repo/AGENTS.md": "R",
                                "repo/sub/AGENTS.md": "S"})
    before = sorted(os.listdir("/proc/self/fd"))
    found = prompt.load_instructions(str(repo / "sub"), env)
    assert [n for _p, n in found.files] == [2, 2, 2]
    assert sorted(os.listdir("/proc/self/fd")) == before


# ---- the built-in prompt ----------------------------------------------------------------------


def _os_release(monkeypatch, text):
    def fake_open(path, *a, **k):
        assert path == "/etc/os-release"
        if text is None:
            raise FileNotFoundError(path)
        return io.StringIO(text)

    monkeypatch.setattr(prompt, "open", fake_open, raising=False)
    monkeypatch.setattr(os, "uname", lambda: SimpleNamespace(sysname="Linux", release="6.1.0", machine="x86_64"))


@pytest.mark.parametrize(("release", "line"), [
    ('NAME="Debian"\nPRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\n',
     "Debian GNU/Linux 12 (bookworm), Linux 6.1.0 (x86_64)"),
    ("PRETTY_NAME=Alpine=edge\n", "Alpine=edge, Linux 6.1.0 (x86_64)"),
    ('PRETTY_NAME=""\n', "Linux 6.1.0 (x86_64)"),
    ("NAME=x\n", "Linux 6.1.0 (x86_64)"),
    (None, "Linux 6.1.0 (x86_64)"),
])
def test_the_os_line_is_the_pretty_name_and_the_kernel(monkeypatch, release, line):
    _os_release(monkeypatch, release)
    assert prompt._os_line() == line


@pytest.mark.parametrize(("real", "line"), [
    ("/usr/bin/dash", "/bin/sh (which is dash: POSIX sh, no bash features)"),
    ("/usr/bin/bash", "/bin/sh (which is bash)"),
    ("/usr/bin/sh", "/bin/sh"),
    ("/", "/bin/sh"),
])
def test_the_shell_line_exactly(monkeypatch, real, line):
    monkeypatch.setattr(os.path, "realpath", lambda p: real)
    assert prompt._shell_line() == line


def test_the_built_in_prompt_line_by_line():
    text = prompt.system_prompt("/srv/p", ["read_file", "edit_file", "execute_command", "list_directory"],
                                {"read_file", "list_directory", "search_workspace"},
                                today="2030-01-02 (Wednesday)", os_line="OS", shell="SH")
    advice = prompt.TOOL_ADVICE
    assert text.split("\n") == [
        "You are DashFloat, a coding agent in a terminal, working on the user's machine through tools.",
        "",
        "- Working directory: /srv/p. Every path is relative to it; tools cannot reach outside it.",
        "- System: OS. Commands run with SH.",
        "- Today: 2030-01-02 (Wednesday).",
        "",
        "Tools:",
        "- read_file, list_directory run at once; several in one answer run together.",
        "- edit_file, execute_command usually wait for the user to approve a preview, and may be rejected: a "
        "rejected call did nothing. Do not repeat it; change the plan or ask.",
        "- " + advice["list_directory"],
        "- " + advice["edit_file"],
        "- " + advice["execute_command"],
        "- After a change, check it (run the tests or the build when the project has them).",
        "",
        "Older tool outputs may be replaced by short stubs, and older turns by a summary, to fit the context "
        "window: read a file again rather than guess at what a stub left out.",
        "",
        "When you are done, say briefly what you changed (which files) and how you checked it, or what failed "
        "and why. Never claim something ran or passed when it did not. If the request is ambiguous or risky, "
        "ask first.",
    ]


def test_only_the_kinds_of_tools_offered_are_described():
    free = prompt.system_prompt("/p", ["read_file"], {"read_file"}, today="T", os_line="O", shell="S")
    assert "run at once" in free and "usually wait" not in free
    asks = prompt.system_prompt("/p", ["write_file"], set(), today="T", os_line="O", shell="S")
    assert "- write_file usually wait" in asks and "run at once" not in asks
    assert [line for line in asks.split("\n") if line.startswith("- ")][3:] == [
        "- write_file usually wait for the user to approve a preview, and may be rejected: a rejected call "
        "did nothing. Do not repeat it; change the plan or ask.",
        "- After a change, check it (run the tests or the build when the project has them)."]


def test_the_prompt_defaults_to_today_this_system_and_this_shell(monkeypatch):
    _os_release(monkeypatch, 'PRETTY_NAME="Test OS"\n')
    monkeypatch.setattr(os.path, "realpath", lambda p: "/usr/bin/bash")
    monkeypatch.setattr(prompt.time, "strftime", lambda fmt: {"%Y-%m-%d (%A)": "2031-05-06 (Tuesday)"}[fmt])
    lines = prompt.system_prompt("/p", []).split("\n")
    assert lines[3:6] == ["- System: Test OS, Linux 6.1.0 (x86_64). Commands run with /bin/sh (which is bash).",
                          "- Today: 2031-05-06 (Tuesday).", ""]


def test_the_system_message_is_the_prompt_then_the_instructions():
    assert prompt.system_message("P", Instructions(text="I")) == {"role": "system", "content": "P\n\nI"}
    assert prompt.system_message("P", Instructions()) == {"role": "system", "content": "P"}
    assert prompt.system_message("P", None) == {"role": "system", "content": "P"}
