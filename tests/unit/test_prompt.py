"""The system message (dashfloat/prompt.py): the built-in prompt and the AGENTS.md files
(discovery order, the override, empty files, the 32 KiB cap and its marker, links that lead
out of the project, files that are not regular)."""

from __future__ import annotations

import os
import threading

import pytest

from dashfloat import context, prompt
from dashfloat.tools.catalogue import READ_ONLY, TOOLS

NAMES = [t["function"]["name"] for t in TOOLS]


def tree(tmp_path, files: dict[str, str]):
    """A home with a user config dir, a git work tree `repo` with `files` (relative to it)."""
    home = tmp_path / "home"
    (home / ".config" / "dashfloat").mkdir(parents=True)
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return {"HOME": str(home)}, repo


def test_the_files_come_in_order_user_then_git_root_down_to_the_working_directory(tmp_path):
    env, repo = tree(tmp_path, {
        "home/.config/dashfloat/AGENTS.md": "USER rule",
        "repo/AGENTS.md": "ROOT rule",
        "repo/src/AGENTS.md": "SRC rule",
        "repo/src/app/AGENTS.md": "APP rule",
        "repo/other/AGENTS.md": "OTHER rule (not on the way)",
        "AGENTS.md": "ABOVE the git root",
    })
    found = prompt.load_instructions(str(repo / "src" / "app"), env)
    text = found.text
    order = [text.index(w) for w in ("USER rule", "ROOT rule", "SRC rule", "APP rule")]
    assert order == sorted(order)
    assert "OTHER" not in text and "ABOVE" not in text
    assert [p for p, _n in found.files] == ["~/.config/dashfloat/AGENTS.md", "../../AGENTS.md", "../AGENTS.md",
                                           "AGENTS.md"]
    assert found.entry().startswith("Instructions loaded: ~/.config/dashfloat/AGENTS.md (")
    assert found.problems == [] and found.cut == 0


def test_the_override_wins_in_its_directory_and_empty_files_are_skipped(tmp_path):
    env, repo = tree(tmp_path, {
        "repo/AGENTS.md": "plain root",
        "repo/AGENTS.override.md": "OVERRIDE root",
        "repo/sub/AGENTS.override.md": "  \n\n",  # empty: the plain file of that directory counts
        "repo/sub/AGENTS.md": "plain sub",
    })
    found = prompt.load_instructions(str(repo / "sub"), env)
    assert "OVERRIDE root" in found.text and "plain root" not in found.text
    assert "plain sub" in found.text
    assert [p for p, _n in found.files] == ["../AGENTS.override.md", "AGENTS.md"]


def test_outside_a_git_work_tree_only_the_working_directory_counts(tmp_path):
    env, _repo = tree(tmp_path, {"plain/AGENTS.md": "HERE", "AGENTS.md": "PARENT"})
    found = prompt.load_instructions(str(tmp_path / "plain"), env)
    assert "HERE" in found.text and "PARENT" not in found.text


def test_no_files_no_text_no_entry(tmp_path):
    env, repo = tree(tmp_path, {})
    found = prompt.load_instructions(str(repo), env)
    assert found.text == "" and found.entry() == ""
    msg = prompt.system_message("PROMPT", found)
    assert msg == {"role": "system", "content": "PROMPT"}


def test_32_kib_in_all_with_a_marker_the_model_and_the_user_see(tmp_path):
    big = "x" * 20000 + "\n"
    env, repo = tree(tmp_path, {
        "home/.config/dashfloat/AGENTS.md": big,
        "repo/AGENTS.md": big,
        "repo/sub/AGENTS.md": "LAST " * 100,
    })
    found = prompt.load_instructions(str(repo / "sub"), env)
    body = found.text.split("\n\n", 2)[2]
    assert sum(n for _p, n in found.files) <= prompt.INSTRUCTIONS_MAX
    assert "[DashFloat: the instructions were cut here:" in found.text
    assert "LAST" not in found.text, "what comes after the cut is left out"
    assert found.cut == 20001 * 2 + len("LAST " * 100 + "\n") - prompt.INSTRUCTIONS_MAX
    assert "cut at 32 KiB" in found.entry()
    assert len(body.encode()) < prompt.INSTRUCTIONS_MAX + 1000


def test_a_project_link_that_leads_outside_is_refused_not_sent(tmp_path):
    env, repo = tree(tmp_path, {"secret.txt": "AWS_SECRET=abc"})
    os.symlink(tmp_path / "secret.txt", repo / "AGENTS.md")
    found = prompt.load_instructions(str(repo), env)
    assert "AWS_SECRET" not in found.text
    assert any("leads outside the project" in p for p in found.problems)
    assert "Instructions not loaded: AGENTS.md: a symbolic link that leads outside the project." in found.entry()


def test_a_directory_link_that_leads_outside_is_named_even_without_a_file_behind_it(tmp_path):
    """The working directory reached through a link out of the project: the files under it
    are refused whether they exist or not (the lstat shortcut for a missing file never
    skips a link)."""
    env, repo = tree(tmp_path, {"outside/notes.txt": "x"})
    os.symlink(tmp_path / "outside", repo / "sub")
    found = prompt.load_instructions(str(repo / "sub"), env)
    assert any("leads outside the project" in p for p in found.problems), found.problems


def test_without_instruction_files_openat2_is_not_probed(tmp_path):
    """A project without AGENTS.md files is read with lstat alone: safeopen's openat2 (and
    ctypes with it, ~2 ms before the first request) is not loaded for it."""
    import subprocess
    import sys

    env, repo = tree(tmp_path, {"repo/sub/README": "x"})
    code = ("import sys\nfrom dashfloat import prompt\n"
            f"found = prompt.load_instructions({str(repo / 'sub')!r}, {env!r})\n"
            "print(found.text == '' and not found.problems, 'ctypes' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["True", "False"], out.stderr


def test_a_link_inside_the_project_is_followed(tmp_path):
    env, repo = tree(tmp_path, {"repo/docs/agents.md": "LINKED rules"})
    os.symlink("docs/agents.md", repo / "AGENTS.md")
    assert "LINKED rules" in prompt.load_instructions(str(repo), env).text


def test_a_fifo_does_not_block_start_up(tmp_path):
    env, repo = tree(tmp_path, {})
    os.mkfifo(repo / "AGENTS.md")
    done = []
    t = threading.Thread(target=lambda: done.append(prompt.load_instructions(str(repo), env)), daemon=True)
    t.start()
    t.join(5)
    assert done, "reading a FIFO blocked"
    assert any("not a regular file" in p for p in done[0].problems)


def test_the_built_in_prompt_says_where_and_how_and_is_short():
    text = prompt.system_prompt("/srv/proj", NAMES, READ_ONLY, today="2030-01-02 (Wednesday)",
                                os_line="Debian 12, Linux 6.1 (x86_64)", shell="/bin/sh (dash)")
    assert "Working directory: /srv/proj" in text
    assert "Today: 2030-01-02" in text and "Debian 12" in text and "/bin/sh (dash)" in text
    for name in NAMES:
        assert name in text
    assert "approve" in text and "rejected" in text  # writes and commands wait and may be refused
    assert "say briefly what you changed" in text  # how to report
    assert "search_workspace finds text" in text
    fewer = prompt.system_prompt("/srv/proj", [n for n in NAMES if n != "search_workspace"], READ_ONLY,
                                 today="2030-01-02 (Wednesday)", os_line="Debian 12", shell="/bin/sh")
    assert "search_workspace" not in fewer, "advice only for the tools the request offers"
    # every token is paid on every request
    assert context.estimate_tokens([{"role": "system", "content": text}]) < 600


def test_advice_follows_the_tools_offered():
    text = prompt.system_prompt("/p", [*NAMES, "search_workspace"], {*READ_ONLY, "search_workspace"})
    assert "search_workspace finds text" in text
    assert prompt.system_prompt("/p", [], set()).count("Tools:") == 0


@pytest.mark.parametrize("shell", ["dash", "bash"])
def test_the_shell_line_names_what_sh_is(monkeypatch, shell):
    monkeypatch.setattr(os.path, "realpath", lambda p: f"/usr/bin/{shell}")
    line = prompt._shell_line()
    assert line.startswith("/bin/sh") and shell in line
