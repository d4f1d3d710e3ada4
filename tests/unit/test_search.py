"""search_workspace (issue 10 section 4), with each backend: ripgrep (skipped when rg is not
installed), git grep (in a git work tree) and the Python walker. The same tree, the same
answers: what is found, what is skipped (binary, .git, node_modules, virtualenvs,
.gitignore), the bounds (results, 500 characters a line, 32 KiB in all, time) with honest
counts, symbolic links never followed, the program's environment and process group."""

from __future__ import annotations

import gc
import itertools
import json
import logging
import os
import random
import re
import shutil
import stat
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from dashfloat.tools import pathpolicy, pipeline, results, runner, search
from dashfloat.tools.exec import Cancel
from dashfloat.tools.permissions import Policy
from dashfloat.tools.rules import parse_rule

HAVE_RG = shutil.which("rg") is not None
BACKENDS = [
    pytest.param("rg", marks=pytest.mark.skipif(not HAVE_RG, reason="ripgrep (rg) is not installed")),
    "git",
    "python",
]
GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, env=GIT_ENV, capture_output=True)


def write(root: Path, rel: str, data: str | bytes) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        p.write_text(data)
    else:
        p.write_bytes(data)
    return p


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A git work tree with what a search must find and what it must skip."""
    root = tmp_path / "proj"
    root.mkdir()
    write(root, "a.py", "import os\nneedle = 1\nprint(needle)\n")
    write(root, "src/b.txt", "no\nthe needle here\n")
    write(root, "src/deep/c.md", "needle in a doc\n")
    write(root, ".hidden/h.cfg", "needle hidden\n")
    write(root, "node_modules/pkg/index.js", "needle in node_modules\n")
    write(root, ".venv/lib/x.py", "needle in .venv\n")
    write(root, "venv/lib/y.py", "needle in venv\n")
    write(root, "myenv/pyvenv.cfg", "home = /usr/bin\n")
    write(root, "myenv/lib/z.py", "needle in a virtualenv by its pyvenv.cfg\n")
    write(root, "build/out.txt", "needle in an ignored dir\n")
    write(root, "debug.log", "needle in an ignored file\n")
    write(root, "src/keep.log", "needle kept by a negation\n")
    write(root, ".gitignore", "build/\n*.log\n!src/keep.log\n")
    write(root, "src/deep/.gitignore", "secret*.md\n")
    write(root, "src/deep/secret1.md", "needle ignored by a nested .gitignore\n")
    write(root, "blob.bin", b"\x00\x01needle in a binary file\n")
    git(root, "init", "-q", ".")
    git(root, "add", "a.py", "src/b.txt", ".gitignore")
    git(root, "commit", "-q", "-m", "x")
    write(root, ".git/needle_in_git.txt", "needle inside .git\n")
    return root


EXPECTED = {".hidden/h.cfg": 1, "a.py": 2, "src/b.txt": 1, "src/deep/c.md": 1, "src/keep.log": 1}
EXPECTED_LINES = [
    ".hidden/h.cfg:1: needle hidden", "a.py:2: needle = 1", "a.py:3: print(needle)",
    "src/b.txt:2: the needle here", "src/deep/c.md:1: needle in a doc", "src/keep.log:1: needle kept by a negation",
]


def find(root, backend, *, runs=None, **args):
    """search_workspace with `backend`, which is the one that runs (for git, the root is made
    a work tree if it is not one), or `runs` when the search falls back to another."""
    args.setdefault("path", ".")
    args.setdefault("regex", False)
    args.setdefault("max_results", 100)
    if backend == "git" and not (Path(root) / ".git").exists():
        git(Path(root), "init", "-q", ".")
    got = search.search_workspace(str(root), args, backend=backend)
    assert got.get("backend") in (None, search.BACKEND_NAMES[runs or backend])
    return got


# ---- what is found and what is skipped ---------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_finds_the_lines_and_skips_binary_vcs_node_modules_virtualenvs_and_ignored(tree, backend):
    got = find(tree, backend, pattern="needle")
    assert got["ok"], got
    assert got["files"] == EXPECTED
    assert got["total_matches"] == 6 and got["total_files"] == 5 and got["shown"] == 6
    assert got["truncated"] is False and "note" not in got
    lines = got["matches"].split("\n")
    assert sorted(lines) == EXPECTED_LINES
    assert got["backend"] == search.BACKEND_NAMES[backend]
    row = runner.result_row("c1", "search_workspace", got)
    assert row["status"] == "ok" and row["text"] == "ok: 6 matching lines in 5 files"
    assert row["excerpt"][0] in lines


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_subdirectory_or_one_file_is_searched_and_paths_stay_relative_to_the_root(tree, backend):
    got = find(tree, backend, pattern="needle", path="src")
    assert got["files"] == {"src/b.txt": 1, "src/deep/c.md": 1, "src/keep.log": 1}
    got = find(tree, backend, pattern="needle", path="src/b.txt")
    assert got["files"] == {"src/b.txt": 1} and got["matches"] == "src/b.txt:2: the needle here"
    ignored = "python" if backend == "git" else None  # (git grep would find nothing there)
    got = find(tree, backend, pattern="needle", path="src/deep/secret1.md", runs=ignored)  # explicit: searched
    assert got["files"] == {"src/deep/secret1.md": 1}
    assert got["matches"] == "src/deep/secret1.md:1: needle ignored by a nested .gitignore"
    got = find(tree, backend, pattern="needle", path="node_modules")  # explicit: searched
    assert got["files"] == {"node_modules/pkg/index.js": 1}
    write(tree, "build/sub/x.log", "needle in a log of an ignored dir\n")
    got = find(tree, backend, pattern="needle", path="build", runs=ignored)  # explicit: searched, its rules hold
    assert got["files"] == {"build/out.txt": 1}


@pytest.mark.parametrize("backend", BACKENDS)
def test_literal_by_default_and_a_regular_expression_when_asked(tree, backend):
    write(tree, "lit.txt", "call f(a.b) here\ncall fxaxb) not\n")
    assert find(tree, backend, pattern="f(a.b)")["files"] == {"lit.txt": 1}
    got = find(tree, backend, pattern=r"f\(a.b\)", regex=True)
    assert got["files"] == {"lit.txt": 1}
    assert find(tree, backend, pattern=r"ne+dle\b", regex=True)["total_matches"] == 6
    assert find(tree, backend, pattern="NEEDLE")["total_matches"] == 0  # case-sensitive
    assert find(tree, backend, pattern="-e")["ok"]  # a pattern that looks like an option
    bad = find(tree, backend, pattern="a(b", regex=True)
    assert bad["ok"] is False and bad["code"] == "bad_arguments" and "regular expression" in bad["error"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_glob_narrows_by_file_name_or_by_path(tree, backend):
    assert find(tree, backend, pattern="needle", glob="*.py")["files"] == {"a.py": 2}
    assert find(tree, backend, pattern="needle", glob="src/**/*.md")["files"] == {"src/deep/c.md": 1}
    assert find(tree, backend, pattern="needle", glob="src/")["files"] == {
        "src/b.txt": 1, "src/deep/c.md": 1, "src/keep.log": 1}
    assert find(tree, backend, pattern="needle", glob="deep/*", path="src")["files"] == {"src/deep/c.md": 1}
    assert find(tree, backend, pattern="needle", glob="*.nothing")["total_matches"] == 0
    bad = find(tree, backend, pattern="needle", glob="!*.py")
    assert bad["code"] == "bad_arguments" and "negated" in bad["error"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_glob_takes_braces_classes_and_escapes_the_same_with_every_backend(tree, backend):
    """{a,b} alternatives (nested too, as ripgrep does not), [:classes:] (which ripgrep does
    not know), escapes, ./ before a hidden name: every backend keeps the same files, and a
    glob that cannot mean anything is refused with the reason, never "invalid regular
    expression" from ripgrep."""
    write(tree, "src/d.ts", "needle ts\n")
    write(tree, "src/e.tsx", "needle tsx\n")
    write(tree, "n1.txt", "needle one\n")
    write(tree, "[x].txt", "needle bracket\n")
    write(tree, "q{r}.txt", "needle brace\n")
    files = lambda glob, **kw: sorted(find(tree, backend, pattern="needle", glob=glob, **kw)["files"])  # noqa: E731
    assert files("*.{ts,tsx}") == ["src/d.ts", "src/e.tsx"]
    assert files("*.{py,{ts,tsx}}") == ["a.py", "src/d.ts", "src/e.tsx"]
    assert files("{src/*.ts,*.md}") == ["src/d.ts", "src/deep/c.md"]
    assert files("*[[:digit:]].txt") == ["n1.txt"]
    assert files("\\[x].txt") == ["[x].txt"]
    assert files("q\\{r}.txt") == ["q{r}.txt"]
    assert files("./.hidden/*") == [".hidden/h.cfg"]
    assert files("./src/*.ts") == ["src/d.ts"]
    for glob, why in (("[x", "a '[' without its ']'"), ("*[[:bogus:]]", "an unknown [:class:]"),
                      ("*.{ts", "a '{' without its '}' (write \\{ for a literal {)"),
                      ("x\\", "it ends in a lone \\"),
                      ("{" + ",".join("abcdefghi") + "}{" + ",".join("abcdefghi") + "}",
                       "its {a,b} groups make more than 64 patterns")):
        bad = find(tree, backend, pattern="needle", glob=glob)
        assert bad["ok"] is False and bad["code"] == "bad_arguments", (glob, bad)
        assert bad["error"].startswith(f"search_workspace: glob {glob!r}: ") and why in bad["error"], bad


def test_a_glob_ripgrep_refuses_is_said_to_be_the_glob(tree):
    """Should ripgrep refuse a glob the exact test accepted, the error names the glob, not
    the pattern."""
    s = search._Search(dir_fd=-1, target=None, pattern="needle", regex=False, glob="x", deadline=0.0)
    s.rc, s.stderr = 2, b"error parsing glob 'x': something\n"
    with pytest.raises(search._Failed) as failed:
        search._rg_stderr(s)
    assert failed.value.code == "bad_arguments" and str(failed.value) == (
        "ripgrep refused the glob: error parsing glob 'x': something")
    s.stderr = b"regex parse error: unclosed group\n"
    with pytest.raises(search._Failed) as failed:
        search._rg_stderr(s)
    assert str(failed.value) == "invalid regular expression (ripgrep's syntax): regex parse error: unclosed group"


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_glob_is_tested_on_the_file_path_and_stars_cross_directories_only_between_slashes(tree, backend):
    """Unlike a .gitignore line, a glob keeps files by their own path (a directory it names
    does not bring its files); two stars or more cross directories between slashes, and
    right after the text before the first wildcard, as git reads them (git's own pathspec
    ':(glob)src/d**' keeps src/deep/c.md too)."""
    files = lambda glob: sorted(find(tree, backend, pattern="needle", glob=glob)["files"])  # noqa: E731
    assert files("src/d**") == ["src/deep/c.md"] and files("src/d*") == [] and files("src/[d]**") == []
    assert files("src/***/*.md") == ["src/deep/c.md"] and files("src/**c.md") == []
    assert files("**.md") == ["src/deep/c.md"] and files("**/c.md") == ["src/deep/c.md"]
    assert files("src/**") == ["src/b.txt", "src/deep/c.md", "src/keep.log"]
    # a file-name glob keeps the .gitignore files' word (ripgrep's own --glob would override it)
    assert files("*.md") == ["src/deep/c.md"] and files("*.log") == ["src/keep.log"]
    assert files("*.{md,log}") == ["src/deep/c.md", "src/keep.log"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_nested_gitignore_anchors_its_patterns_at_its_own_directory(tmp_path, backend):
    root = tmp_path / "p"
    for rel in ("pkg/top.txt", "pkg/a/top.txt", "pkg/sub/x.txt", "pkg/a/sub/x.txt", "top.txt"):
        write(root, rel, "needle\n")
    write(root, "pkg/.gitignore", "/top.txt\nsub/x.txt\n")
    git(root, "init", "-q", ".")
    assert sorted(find(root, backend, pattern="needle")["files"]) == ["pkg/a/sub/x.txt", "pkg/a/top.txt", "top.txt"]


@pytest.mark.parametrize("glob, alternatives", [
    ("*.{ts,tsx}", ["*.ts", "*.tsx"]),
    ("{a,{b,c}}", ["a", "b", "c"]),
    ("x{a,b}y{c,d}", ["xayc", "xbyc", "xayd", "xbyd"]),
    ("{a}", ["a"]),
    ("{,a}", ["", "a"]),
    ("a}", ["a}"]),
    ("a,b", ["a,b"]),
    ("\\{{a,b}", ["\\{a", "\\{b"]),
    ("\\,{a,b}", ["\\,a", "\\,b"]),
    ("[{]{a,b}", ["[{]a", "[{]b"]),
    ("[{]", ["[{]"]),
    ("a[]{]b", ["a[]{]b"]),  # "]" first in a class is a member
])
def test_braces_expand_to_alternatives(glob, alternatives):
    assert search._alternatives(glob) == alternatives


@pytest.mark.parametrize("name, for_rg", [
    ("x}y", "x\\}y"),
    ("[}]}", "[}]\\}"),
    ("[]}]}", "[]}]\\}"),
    ("a\\}b}", "a\\}b\\}"),
    ("[}", "[\\}"),
    ("[!}]}", "[!}]\\}"),
])
def test_a_stray_closing_brace_is_escaped_for_ripgrep(name, for_rg):
    assert search._stray_braces_escaped(name) == for_rg


def test_a_glob_names_a_file_even_where_a_gitignore_line_would_not():
    """A leading # or ! in an alternative is part of the name (a .gitignore would read a
    comment or a negation); an empty alternative is left out."""
    for glob, name in (("#x", b"#x"), ("{!a,b}", b"!a"), ("{,b}", b"b"), ("\\#x", b"#x")):
        g = search.compile_glob(glob)
        assert g.matches(name, False) and not g.matches(b"x" if glob != "{,b}" else b"", False), glob
    assert not search.compile_glob("{!a,b}").matches(b"a", False)
    assert search.compile_glob("{,}") == "glob '{,}' matches nothing"
    assert search.compile_glob("{ ,a}") == "glob '{ ,a}': it matches nothing"  # (a blank alternative)


def test_a_glob_that_cannot_be_one_is_refused_with_why():
    assert search.compile_glob("  ") == "glob is empty; leave it out to search every file"
    assert search.compile_glob("a\nb") == search.compile_glob("a\x00b") == "glob must be one line"
    assert "negated" in search.compile_glob("!a")
    assert search.compile_glob("{a,b") == "glob '{a,b': a '{' without its '}' (write \\{ for a literal {)"
    assert search.compile_glob("x\\") == "glob 'x\\\\': it ends in a lone \\ (write \\\\ for a literal \\)"
    assert search.compile_glob("[a]x\\").endswith("it ends in a lone \\ (write \\\\ for a literal \\)")
    assert search.compile_glob("\\[a[b").endswith("a '[' without its ']', or an unknown [:class:] (write \\[ for a literal [)")
    assert search.compile_glob("a\\[b").__class__ is search.Glob
    bracket = "a '[' without its ']', or an unknown [:class:] (write \\[ for a literal [)"
    assert search.compile_glob("[a\\").endswith(bracket) and search.compile_glob("\\\\[").endswith(bracket)
    assert search.compile_glob("\\[\\").endswith("it ends in a lone \\ (write \\\\ for a literal \\)")
    eight = "{" + ",".join("abcdefgh") + "}"
    assert len(search.compile_glob(eight + eight).patterns) == 64
    assert search.compile_glob(eight + eight + "{x,y}") == (
        f"glob {eight + eight + '{x,y}'!r}: its {{a,b}} groups make more than 64 patterns")


@pytest.mark.parametrize("backend", BACKENDS)
def test_dot_slash_anchors_a_glob_where_the_search_is(tree, backend):
    files = lambda glob: sorted(find(tree, backend, pattern="needle", glob=glob)["files"])  # noqa: E731
    assert files("./a.py") == ["a.py"] and files("./c.md") == [] and files("c.md") == ["src/deep/c.md"]
    assert files("././a.py") == ["a.py"] and files("./") == sorted(EXPECTED)


def test_the_backends_narrow_with_file_name_globs_they_read_the_same_way():
    """ripgrep gets each alternative as a file type (not --glob, which would override the
    .gitignore files), git grep each as a pathspec; neither gets a glob with a /, and
    ripgrep none with a [:class:]; what they keep is tested again by ours."""
    def argv(glob, rg):
        s = search._Search(dir_fd=-1, target=None, pattern="x", regex=False, deadline=0.0,
                           glob=search.compile_glob(glob))
        return search._rg_argv(s, "rg", False) if rg else search._git_argv(s, "git", False)

    rg = argv("*.{ts,tsx}", True)
    assert rg[rg.index("--type-add"):rg.index("--type-add") + 6] == [
        "--type-add", "dashfloat:*.ts", "--type-add", "dashfloat:*.tsx", "--type", "dashfloat"]
    assert "--glob" not in rg[rg.index("--type-add"):]
    assert argv("*.{ts,tsx}", False)[-2:] == ["**.ts", "**.tsx"]
    assert argv("x}y", True)[argv("x}y", True).index("--type-add") + 1] == "dashfloat:x\\}y"
    for glob in ("src/*.ts", "{a,src/b}"):
        assert "--type-add" not in argv(glob, True) and argv(glob, False)[-1].startswith(":(exclude")
    assert "--type-add" not in argv("*[[:digit:]]", True) and argv("*[[:digit:]]", False)[-1] == "**[[:digit:]]"


@pytest.mark.parametrize("backend", BACKENDS)
def test_symbolic_links_are_never_followed_and_a_path_through_one_outside_is_refused(tree, tmp_path, backend):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("needle outside the root\n")
    (tree / "out_dir").symlink_to(outside)
    (tree / "out_file.txt").symlink_to(outside / "secret.txt")
    (tree / "in_link.txt").symlink_to(tree / "a.py")
    got = find(tree, backend, pattern="needle")
    assert "outside" not in got["matches"] and got["files"] == EXPECTED
    refused = find(tree, backend, pattern="needle", path="out_dir")
    assert refused["ok"] is False and refused["code"] == "path_escape"
    refused = find(tree, backend, pattern="needle", path="out_file.txt")
    assert refused["code"] == "path_escape"
    assert find(tree, backend, pattern="needle", path="../outside")["code"] == "path_escape"
    assert find(tree, backend, pattern="needle", path="nope")["code"] == "not_found"


def test_a_file_a_backend_reports_through_a_directory_now_leading_outside_is_dropped(tree, tmp_path, monkeypatch):
    """The second look beneath the root: a hit whose directory became a link to the outside
    (swapped during the search) is never shown."""
    outside = tmp_path / "outside2"
    (outside / "deep").mkdir(parents=True)
    (outside / "deep" / "c.md").write_text("needle outside\n")
    lines, counts = search._BACKENDS["git"]

    def swapped(s):
        for hit in lines(s):
            if hit.path.startswith(b"src/deep/") and not (tree / "src" / "deep").is_symlink():
                shutil.rmtree(tree / "src" / "deep")
                (tree / "src" / "deep").symlink_to(outside / "deep")
            yield hit

    monkeypatch.setitem(search._BACKENDS, "git", (swapped, counts))
    got = find(tree, "git", pattern="needle")
    assert "src/deep/c.md" not in got["files"] and "outside" not in got["matches"]
    assert got["skipped_outside"] == 1 and "left out" in got["note"]


# ---- bounds and honest counts ---------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_max_results_shows_the_first_lines_and_still_counts_every_match(tmp_path, backend):
    root = tmp_path / "many"
    for i in range(30):
        write(root, f"f{i:02}.txt", "hit\n" * 10)
    got = find(root, backend, pattern="hit", max_results=25)
    assert got["shown"] == 25 and got["total_matches"] == 300 and got["total_files"] == 30
    assert got["truncated"] is True and got["truncated_by"] == ["max_results"]
    assert got["matches"].split("\n")[:11] == [f"f00.txt:{n}: hit" for n in range(1, 11)] + ["f01.txt:1: hit"]
    assert got["files"] == {f"f{i:02}.txt": 10 for i in range(30)}
    assert "showing 25 of 300 matching lines in 30 files" in got["note"] and "max_results" in got["note"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_long_line_is_cut_to_500_characters_around_its_match(tmp_path, backend):
    root = tmp_path / "long"
    write(root, "min.js", "x" * 5000 + "NEEDLE" + "y" * 5000 + "\n" + "short NEEDLE\n")
    got = find(root, backend, pattern="NEEDLE")
    first, second = got["matches"].split("\n")
    text = first.split(": ", 1)[1]
    assert text == "…" + ("x" * 5000 + "NEEDLE" + "y" * 5000)[4900:5400] + "…"  # (a fifth of it before the match)
    assert len(text) == search.LINE_CHARS + 2
    assert second == "min.js:2: short NEEDLE"
    assert got["lines_cut"] == 1 and "cut to 500 characters" in got["note"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_whole_result_stays_within_32_kib_and_says_what_it_left_out(tmp_path, backend):
    root = tmp_path / "big"
    for i in range(400):  # long names and long lines: both the lines and the counts overflow
        write(root, f"{'d' * 60}/{'n' * 100}{i:04}.txt", ("match " + "z" * 480 + "\n") * 3)
    got = find(root, backend, pattern="match", max_results=1000)
    encoded = results.encode(got).encode()
    assert len(encoded) <= search.OUTPUT_BYTES
    assert got["total_matches"] == 1200 and got["total_files"] == 400
    assert 0 < got["shown"] < 1000 and "output_bytes" in got["truncated_by"]
    assert "files_listed" in got["truncated_by"]
    assert len(got["files"]) + got["files_not_listed"] == 400
    assert "counted but not listed" in got["note"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_out_of_time_says_so_and_is_not_an_error(tree, backend):
    got = search.search_workspace(str(tree), {"pattern": "needle"}, backend=backend, timeout=0)
    assert got["ok"] is True and got["complete"] is False and "time" in got["truncated_by"]
    assert "stopped after 0 s" in got["note"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_cancelled_search_is_a_cancelled_result(tree, backend):
    cancel = Cancel()
    cancel.cancel()
    got = search.search_workspace(str(tree), {"pattern": "needle"}, backend=backend, cancel=cancel)
    assert got["ok"] is False and got["cancelled"] is True


@pytest.mark.parametrize("backend", BACKENDS)
def test_names_that_are_not_utf8_are_written_with_escapes(tmp_path, backend):
    root = tmp_path / "names"
    root.mkdir()
    (root / os.fsdecode(b"caf\xe9.txt")).write_text("needle\n")
    got = find(root, backend, pattern="needle")
    assert got["files"] == {"caf\\xe9.txt": 1} and got["matches"] == "caf\\xe9.txt:1: needle"
    assert "names_escaped" in got


# ---- what runs: the programs' environment and process group -----------------------------------------


def test_a_repository_config_can_neither_run_a_program_nor_change_git_grep_output(tree, tmp_path):
    marker = tmp_path / "ran"
    hook = tmp_path / "fsmonitor.sh"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n")
    hook.chmod(0o755)
    for key, value in (("core.fsmonitor", str(hook)), ("grep.column", "true"), ("grep.fullName", "true"),
                       ("grep.patternType", "perl"), ("grep.lineNumber", "false"), ("color.grep", "always"),
                       ("core.quotePath", "true"), ("grep.fallbackToNoIndex", "true")):
        git(tree, "config", key, value)
    subprocess.run(["git", "status"], cwd=tree, env=GIT_ENV, capture_output=True)
    assert marker.exists(), "the test's fsmonitor must run under a plain git (else it proves nothing)"
    marker.unlink()
    got = find(tree, "git", pattern="needle")
    assert got["files"] == EXPECTED and not marker.exists()
    assert sorted(got["matches"].split("\n")) == EXPECTED_LINES
    got = find(tree, "git", pattern="needle", path="src")
    assert got["files"] == {"src/b.txt": 1, "src/deep/c.md": 1, "src/keep.log": 1}


@pytest.mark.skipif(not HAVE_RG, reason="ripgrep (rg) is not installed")
def test_ripgrep_reads_no_config_file(tree, tmp_path, monkeypatch):
    config = tmp_path / "rgrc"
    config.write_text("--glob=!*.py\n--ignore-case\n")
    monkeypatch.setenv("RIPGREP_CONFIG_PATH", str(config))
    got = find(tree, "rg", pattern="needle")
    assert got["files"] == EXPECTED
    assert "RIPGREP_CONFIG_PATH" not in search.child_env()


def test_the_environment_holds_no_git_variable_of_the_user(monkeypatch):
    monkeypatch.setenv("GIT_DIR", "/elsewhere/.git")
    monkeypatch.setenv("GIT_WORK_TREE", "/elsewhere")
    env = search.child_env()
    assert "GIT_DIR" not in env and "GIT_WORK_TREE" not in env
    keys = {env[k]: env[k.replace("KEY", "VALUE")] for k in env if k.startswith("GIT_CONFIG_KEY_")}
    assert keys["core.fsmonitor"] == "false" and keys["core.hookspath"] == os.devnull
    assert keys["grep.column"] == "false"
    assert {k: env[k] for k in ("GIT_OPTIONAL_LOCKS", "GIT_TERMINAL_PROMPT", "GIT_PAGER", "PAGER")} == {
        "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat", "PAGER": "cat"}


@pytest.mark.parametrize("backend", ["rg", "git"])
def test_without_proc_the_program_starts_in_the_searched_directory_by_its_descriptor(tree, backend, monkeypatch):
    """Where /proc/self/fd is missing, the child changes to the directory's descriptor
    between fork and exec: the same files, relative to the same place."""
    if backend == "rg" and not HAVE_RG:
        pytest.skip("ripgrep (rg) is not installed")
    real = os.path.isdir
    monkeypatch.setattr(os.path, "isdir", lambda p: False if p == "/proc/self/fd" else real(p))
    assert find(tree, backend, pattern="needle", path="src")["files"] == {
        "src/b.txt": 1, "src/deep/c.md": 1, "src/keep.log": 1}


def test_a_program_that_cannot_start_is_a_search_failure(tree, tmp_path, monkeypatch):
    _fake_rg(tmp_path, monkeypatch, "", interpreter="/nonexistent/interpreter")
    got = search.search_workspace(str(tree), {"pattern": "needle"}, backend="rg")
    assert got["code"] == "search_failed" and got["error"] == (
        f"could not run {tmp_path / 'bin' / 'rg'}: No such file or directory")


def test_a_program_that_runs_too_long_is_killed_with_its_whole_group(tree, tmp_path, monkeypatch):
    """A stand-in rg that prints one hit, then waits with a child in its group: the search
    ends at its time limit, and neither process outlives it."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    pids = tmp_path / "pids"
    fake = bindir / "rg"
    fake.write_text(f"#!/bin/sh\nsleep 60 &\necho $$ $! > {pids}\nprintf 'a.py\\0002:needle = 1\\n'\nwait\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    start = time.monotonic()
    got = search.search_workspace(str(tree), {"pattern": "needle"}, backend="rg", timeout=1.0)
    assert time.monotonic() - start < 5
    assert got["ok"] and got["complete"] is False and got["matches"] == "a.py:2: needle = 1"
    for pid in map(int, pids.read_text().split()):
        assert not _alive(pid), f"process {pid} outlived the search"


def test_kill_all_stops_a_running_search(tree, tmp_path, monkeypatch):
    import threading

    bindir = tmp_path / "bin"
    bindir.mkdir()
    started = tmp_path / "started"
    fake = bindir / "rg"
    fake.write_text(f"#!/bin/sh\necho $$ > {started}\nexec sleep 60\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    box = {}
    t = threading.Thread(target=lambda: box.update(r=search.search_workspace(
        str(tree), {"pattern": "needle"}, backend="rg", timeout=30)))
    t.start()
    deadline = time.monotonic() + 5
    while not (started.exists() and started.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.01)
    runner.kill_all()
    t.join(5)
    assert not t.is_alive()
    assert not _alive(int(started.read_text()))


def _alive(pid: int) -> bool:
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return False
        except FileNotFoundError:
            return False
        time.sleep(0.02)
    return True


# ---- choosing the backend; the tool in the catalogue and the policy ---------------------------------


def test_the_backend_is_rg_when_installed_else_git_in_a_work_tree_else_python(tree, tmp_path, monkeypatch):
    import dashfloat.tools.safeopen as so

    plain = tmp_path / "plain"
    plain.mkdir()
    with so.Root(str(tree)) as r:
        fd = r.open_dir(".", read=True)
        try:
            assert search.choose(fd) == ("rg" if HAVE_RG else "git")
            monkeypatch.setattr(shutil, "which", lambda name: None if name == "rg" else "/usr/bin/" + name)
            assert search.choose(fd) == "git"
            assert search.choose(fd, b"debug.log") == "python"  # ignored: git grep would not see it
        finally:
            os.close(fd)
    with so.Root(str(plain)) as r:
        fd = r.open_dir(".", read=True)
        try:
            assert search.choose(fd) == "python"
        finally:
            os.close(fd)


def test_search_workspace_runs_without_asking_and_reads_only(tree):
    assert "search_workspace" in runner.READ_ONLY and not runner.needs_confirmation("search_workspace")
    ctx = pipeline.CallContext(call_id="c1", name="search_workspace",
                               raw={"id": "c1", "name": "search_workspace", "args": {"pattern": "needle"}},
                               root=str(tree), policy=Policy())
    verdict = pipeline.pre_execute(ctx)
    assert verdict == ("run", None)
    assert ctx.args == {"pattern": "needle", "path": ".", "regex": False, "max_results": 100}


def test_null_for_an_optional_argument_counts_as_left_out():
    from dashfloat.tools.catalogue import validate

    args, err = validate("search_workspace", {"pattern": "x", "glob": None, "max_results": None, "regex": None})
    assert err is None and args == {"pattern": "x", "path": ".", "regex": False, "max_results": 100}
    _, err = validate("search_workspace", {"pattern": None})
    assert err["code"] == "bad_arguments" and "'pattern' expected a string, got null" in err["error"]
    _, err = validate("search_workspace", {"pattern": "x", "regex": "yes"})
    assert "'regex' expected true or false" in err["error"]
    _, err = validate("search_workspace", {"pattern": "x", "max_results": 1001})
    assert "out of range" in err["error"]


def test_a_rule_that_keeps_read_file_from_a_file_keeps_search_out_of_it(tree):
    write(tree, ".env", "needle=the key\n")
    write(tree, "src/.env", "needle=another key\n")
    policy = Policy(layers=[("user config", [parse_rule("read_file(**/.env)", "deny", "user config"),
                                             parse_rule("read_file(src/b.txt)", "ask", "user config")])])
    got = runner.execute("search_workspace", {"pattern": "needle", "path": "."}, str(tree), None, policy=policy)
    assert got["ok"] and ".env" not in got["matches"] and "the key" not in got["matches"]
    assert "src/b.txt" not in got["files"]
    assert got["skipped_by_rules"] == 3 and "permission rule" in got["note"]
    no_rules = runner.execute("search_workspace", {"pattern": "needle", "path": "."}, str(tree), None,
                              policy=Policy())
    assert ".env" in no_rules["files"]


def test_rules_that_never_keep_read_file_out_cost_the_search_nothing(tree):
    """Only a read_file rule that is not an allow can keep search_workspace out of a file:
    with none (allow rules for read_file, rules for other tools) no file is judged."""
    assert runner.readable_by(None, str(tree)) is None
    policy = Policy(layers=[("user config", [parse_rule("execute_command(rm *)", "deny", "user config"),
                                             parse_rule("write_file(*.md)", "ask", "user config"),
                                             parse_rule("read_file(docs/**)", "allow", "user config")])])
    assert runner.readable_by(policy, str(tree)) is None
    policy.allow_exact("read_file", {"path": "src/b.txt"}, str(tree))
    assert runner.readable_by(policy, str(tree)) is None
    strict = Policy(layers=[("user config", [parse_rule("read_file(*.key)", "ask", "user config")])])
    readable = runner.readable_by(strict, str(tree))
    assert readable("src/b.txt") is True and readable("a.key") is False


def test_a_deny_rule_on_search_workspace_itself_is_obeyed(tree):
    policy = Policy(layers=[("user config", [parse_rule("search_workspace(src/**)", "deny", "user config")])])
    ctx = pipeline.CallContext(call_id="c1", name="search_workspace",
                               raw={"id": "c1", "name": "search_workspace",
                                    "args": {"pattern": "needle", "path": "src/deep"}},
                               root=str(tree), policy=policy)
    kind, result = pipeline.pre_execute(ctx)
    assert kind == "done" and result["code"] == "denied"


def test_bad_patterns_are_refused_before_any_search(tree):
    for pattern, needle in (("", "empty"), ("a\nb", "one line"), ("a\x00", "NUL")):
        got = find(tree, "python", pattern=pattern)
        assert got["code"] == "bad_arguments" and needle in got["error"]


# ---- the .gitignore patterns of the walker -----------------------------------------------------------


@pytest.mark.parametrize("line, path, is_dir, expected", [
    ("*.log", "a/b/x.log", False, True),
    ("*.log", "x.log.txt", False, False),
    ("/top.txt", "top.txt", False, True),
    ("/top.txt", "a/top.txt", False, False),
    ("doc/*.md", "doc/a.md", False, True),
    ("doc/*.md", "x/doc/a.md", False, False),
    ("doc/*.md", "doc/sub/a.md", False, False),
    ("**/tmp", "a/b/tmp", True, True),
    ("a/**/b", "a/b", False, True),
    ("a/**/b", "a/x/y/b", False, True),
    ("out/", "out", False, False),
    ("out/", "x/out", True, True),
    ("a?c", "abc", False, True),
    ("a[0-9]", "a5", False, True),
    ("a[!0-9]", "a5", False, False),
    ("\\#lit", "#lit", False, True),
    ("\\!lit", "!lit", False, True),
    ("a\\ ", "a ", False, True),  # an escaped trailing blank stays
    ("b  ", "b", False, True),  # the others go
    ("b  ", "b ", False, False),
    ("# comment", "# comment", False, False),
])
def test_gitignore_patterns(line, path, is_dir, expected):
    p = search.compile_pattern(line)
    got = p is not None and p.matches(path.encode(), is_dir)
    assert got is expected


def _git_ignores(tmp_path: Path, line: str, paths: list[str]) -> set[str]:
    """The paths git itself ignores with `line` as the only line of a .gitignore (a path is
    ignored when it or one of its leading directories matches)."""
    repo = tmp_path / "oracle"
    if not (repo / ".git").exists():
        git(tmp_path, "init", "-q", str(repo))
    (repo / ".gitignore").write_text(line + "\n")
    out = subprocess.run(["git", "check-ignore", "--no-index", "--stdin", "-z"], cwd=repo, env=GIT_ENV,
                         input="\0".join(paths) + "\0", capture_output=True, text=True).stdout
    return {p for p in out.split("\0") if p}


def _we_ignore(pattern, path: str) -> bool:
    parts = path.split("/")
    leading = ["/".join(parts[:k]) for k in range(1, len(parts))]
    return pattern is not None and (any(pattern.matches(d.encode(), True) for d in leading)
                                    or pattern.matches(path.encode(), False))


@pytest.mark.parametrize("tokens", [
    list("ab/*?[]!^-\\."),
    list("ab/*?[]!^-\\.") + ["[:alpha:]", "[:digit:]", "[:upper:]", "[:punct:]", "[:bogus:]", "[:", ":]", "1", "A", ":"],
], ids=["wildcards", "classes"])
def test_gitignore_patterns_match_what_git_matches(tmp_path, tokens):
    """git check-ignore is the oracle: random patterns of wildcards, brackets (never closed,
    negated, ranges, escapes, [:classes:]), slashes (leading, doubled, trailing) over random
    paths. A pattern git reads as matching nothing (an unclosed "[", an unknown class, a
    lone trailing backslash) matches nothing here either."""
    rng = random.Random(len(tokens))
    names = "ab.-[]!^*?1A:"
    lines = ["*//", "//a", "a//", "/a/", "[", "[a", "a\\", "[]a]", "[!]a]", "[a-]", "[z-a]", "[bz-a]",
             "[\\]]", "[]-b]", "[[:alpha:]]", "[[:a]b:]]", "[[:bogus:]]", "[:alpha:]", "[[:alpha:]-b]",
             "a[^b]", "**/a", "a/**", "a/**/b", "**", "*a*", "a?", "\\*", "a/***/b", "a/**\\/b", "***",
             "a***", "b/a**", "a/**b", "**a", "a**/b"]
    for k in range(200):
        line = lines[k] if k < len(lines) else "".join(rng.choice(tokens) for _ in range(rng.randint(1, 6)))
        if line.startswith(("#", "!")) or not line.strip():
            continue
        paths = sorted({"/".join("".join(rng.choice(names) for _ in range(rng.randint(1, 3)))
                                 for _ in range(rng.randint(1, 3))) for _ in range(40)})
        paths = [p for p in paths if not p.startswith(":")  # (git reads those as pathspec magic)
                 and not {".", ".."} & set(p.split("/"))]
        ignored = _git_ignores(tmp_path, line, paths)
        pattern = search.compile_pattern(line)
        for path in paths:
            assert _we_ignore(pattern, path) == (path in ignored), (line, path)


BRACKETS = [
    "[[:]a]", "[[:]]", "[[::]]", "[[:alpha]", "[[:alphab", "[[:alpha::", "[[:a:]]", "[[:alpha:]]",
    "[[:alpha:]a]", "[b[:digit:]]", "[[:digit:]-a]", "[a-[:digit:]]", "[[:upper:][:digit:]]", "[]-a]",
    "[!]-a]", "[a-]", "[-a]", "[!-a]", "[\\]a]", "[a\\-b]", "[a-\\b]", "[a-\\]", "[a-", "[a\\", "[\\",
    "[!", "[!]", "[^]", "[]]", "[]", "[b-a]", "[1b-a]", "[1-A]", "[A-1]", "[--a]", "[a--]", "[a-b-A]",
    "[:]", "[:a:]", "a[!b]", "a[^b]", "[!a-b]", "[[]", "[[]]", "[]a]", "[!]]", "\\[a]", "[a]]", "[[:]:]",
    "[1-\\b]", "[a-\\", "[!-\\]]",  # an escaped end of a range; a range cut at its escape
]


@pytest.mark.parametrize("line", BRACKETS)
def test_brackets_match_what_git_matches_on_every_short_name(tmp_path, line):
    """git check-ignore as the oracle of one bracket expression each (the [:class:] forms,
    ranges at their ends, escapes, a "]" or "-" first, never closed) over every name of one
    to three characters these are made of."""
    chars = "ab:[]-\\^!1A"
    paths = [a + b + c for a in chars for b in ["", *chars] for c in ["", *chars] if b or not c]
    paths = [p for p in paths if not p.startswith(":")]  # (git reads those as pathspec magic)
    ignored = _git_ignores(tmp_path, line, paths)
    pattern = search.compile_pattern(line)
    assert [p for p in paths if _we_ignore(pattern, p) != (p in ignored)] == [], line


STARS = ["*/a", "/*/a", "a/*/b", "*\\/a", "a/*", "*/*", "*/**/a", "**/*/a", "a/**", "a/**/", "**/a", "/**/a",
         "a/**/b", "a/**\\/b", "**\\/a", "**", "a**", "**a", "a/**b", "b**/a", "a/***", "x/a/**/**/b"]


@pytest.mark.parametrize("line", STARS)
def test_stars_match_what_git_matches_on_every_short_path(tmp_path, line):
    """git check-ignore as the oracle of "*" and "**" (between slashes, at the ends, before an
    escaped slash, or next to a name) over every path of one to four names of a, b and x."""
    paths = ["/".join(names) for depth in range(1, 5) for names in itertools.product("abx", repeat=depth)]
    ignored = _git_ignores(tmp_path, line, paths)
    pattern = search.compile_pattern(line)
    assert [p for p in paths if _we_ignore(pattern, p) != (p in ignored)] == [], line


def test_a_pattern_of_a_subdirectory_matches_nothing_outside_it():
    pattern = search.compile_pattern("x", b"sub")
    assert pattern.matches(b"sub/x", False) is True and pattern.matches(b"x", False) is False
    assert pattern.matches(b"subx/x", False) is False and pattern.matches(b"other/sub/x", False) is False
    assert search.Ignores().with_file(b"x\n", b"sub").ignored(b"x", False) is False


def test_the_last_matching_gitignore_line_wins_and_deeper_files_come_later():
    ign = search.Ignores().with_file(b"*.log\n!keep.log\n", b"")
    assert ign.ignored(b"x.log", False) and not ign.ignored(b"keep.log", False)
    ign = ign.with_file(b"keep.log\n", b"sub")
    assert ign.ignored(b"sub/keep.log", False) and not ign.ignored(b"keep.log", False)


def test_the_result_is_compact_json_the_model_reads(tree):
    got = find(tree, "python", pattern="needle")
    assert json.loads(results.encode(got)) == got


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))


# ---- the bounds at their edges ------------------------------------------------------------------


def _flat(root: Path, names: list[str], text: str = "needle\n") -> None:
    root.mkdir()
    for name in names:
        (root / name).write_text(text)


def test_the_per_file_counts_take_at_most_8_kib(tmp_path):
    """Each listed file costs its JSON name, its count and 2 bytes: 512 files of 16 bytes fill
    8,192 bytes exactly and are all listed; one byte more and the last is counted only."""
    assert search.FILES_BYTES == 8 * 1024
    names = [f"f{i:06d}.txt" for i in range(512)]  # "f000000.txt": 13 + 1 + 2 = 16 bytes
    _flat(tmp_path / "fit", names)
    got = find(tmp_path / "fit", "python", pattern="needle", max_results=1)
    assert len(got["files"]) == 512 and "files_not_listed" not in got and got["total_files"] == 512
    _flat(tmp_path / "over", names[:-1] + ["f9999999.txt"])  # the last one costs 17
    got = find(tmp_path / "over", "python", pattern="needle", max_results=1)
    assert len(got["files"]) == 511 and got["files_not_listed"] == 1 and got["total_files"] == 512
    assert "files_listed" in got["truncated_by"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_lines_take_what_the_counts_and_the_other_fields_leave(tmp_path, backend):
    """32 KiB in all, less 8 KiB for the counts and 1 KiB for the other fields: 23,552 bytes of
    lines (each its JSON text less its quotes, plus a newline). 46 lines of 512 bytes fit
    exactly; one byte more (in the last file's name) and the last is left out."""
    assert search.OUTPUT_BYTES - search.FILES_BYTES - search._RESERVED == 23_552
    for name, extra in (("fit", 0), ("over", 1)):
        root = tmp_path / name
        root.mkdir()
        for i in range(46):  # "f00.txt:1: " + text: 11 + 500 characters, 512 bytes with the newline
            (root / f"f{i:02d}{'x' * extra if i == 45 else ''}.txt").write_text("needle" + "x" * 494 + "\n")
        got = find(root, backend, pattern="needle", max_results=200)
        assert got["total_matches"] == 46
        if extra:
            assert got["shown"] == 45 and got["truncated_by"] == ["output_bytes"]
        else:
            assert got["shown"] == 46 and got["truncated"] is False and "lines_cut" not in got


def test_a_nul_byte_in_the_first_8_kib_makes_a_file_binary(tmp_path):
    root = tmp_path / "p"
    root.mkdir()
    (root / "bin.dat").write_bytes(b"needle\n" + b"x" * (8 * 1024 - 8) + b"\0")  # the NUL is byte 8,191
    (root / "text.dat").write_bytes(b"needle\n" + b"x" * (8 * 1024 - 7) + b"\0")  # byte 8,192
    assert find(root, "python", pattern="needle")["files"] == {"text.dat": 1}


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_line_is_kept_up_to_64_kib_and_its_window_is_cut_from_that(tmp_path, backend):
    """A line of 65,536 bytes is kept whole: the window shows its match at the end. One byte
    longer, its head is kept and the match, past it, is not: the window is the head."""
    root = tmp_path / "p"
    root.mkdir()
    (root / "a.txt").write_text("y" * (65536 - 6) + "needle\n")
    (root / "b.txt").write_text("y" * (65537 - 6) + "needle\n")
    got = find(root, backend, pattern="needle")
    assert got["matches"].split("\n") == ["a.txt:1: …" + "y" * 494 + "needle", "b.txt:1: " + "y" * 500 + "…"]
    assert got["lines_cut"] == 2


def test_lines_across_the_walkers_1_mib_reads_are_whole(tmp_path):
    """The walker reads 1 MiB at a time: a matching line across that boundary is found once,
    whole, with its number."""
    root = tmp_path / "p"
    root.mkdir()
    head = ("z" * 99 + "\n") * (1024 * 1024 // 100)  # 10,485 lines, 1,048,500 bytes
    (root / "big.txt").write_text(head + "a" * 50 + "needle" + "b" * 50 + "\nneedle\n")
    got = find(root, "python", pattern="needle")
    assert got["matches"].split("\n") == [f"big.txt:{10486}: " + "a" * 50 + "needle" + "b" * 50,
                                          f"big.txt:{10487}: needle"]


def test_a_gitignore_is_read_up_to_1_mib(tmp_path):
    """The walker reads a .gitignore's first 1 MiB: a line that ends at its last byte holds;
    one past it is not read."""
    root = tmp_path / "p"
    root.mkdir()
    (root / "in.txt").write_text("needle\n")
    (root / "out.txt").write_text("needle\n")
    filler = "# " + "c" * 97 + "\n"  # 100 bytes
    body = filler * ((1024 * 1024 - 7) // 100)
    body += "#" * (1024 * 1024 - 7 - len(body) - 1) + "\n" + "in.txt" + "\n" + "out.txt\n"
    assert body.index("in.txt") + len("in.txt") + 1 == 1024 * 1024
    (root / ".gitignore").write_text(body)
    assert find(root, "python", pattern="needle")["files"] == {"out.txt": 1}


def test_git_is_asked_where_the_search_is_for_at_most_3_seconds(tmp_path, monkeypatch):
    import subprocess as sp

    seen = {}

    def run(argv, **kw):
        seen.update(kw)
        raise sp.TimeoutExpired(argv, kw["timeout"])

    monkeypatch.setattr(sp, "run", run)
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        assert search.git_place(fd) == "none" and seen["timeout"] == 3.0
    finally:
        os.close(fd)


def test_a_programs_error_output_is_kept_up_to_4_kib(tree, tmp_path, monkeypatch):
    _fake_rg(tmp_path, monkeypatch, "head -c 5000 /dev/zero | tr '\\0' e >&2\nexit 2\n")
    got = search.search_workspace(str(tree), {"pattern": "needle"}, backend="rg")
    assert got["error"] == "invalid regular expression (ripgrep's syntax): " + "e" * 4096


def test_a_search_cancelled_while_its_program_runs_stops_at_once(tree, tmp_path, monkeypatch):
    """Esc during a search: the program is killed at the next look (every 0.1 s), not left to
    its time limit."""
    import threading

    started = tmp_path / "started"
    _fake_rg(tmp_path, monkeypatch, f"printf 'a.py\\0002:needle = 1\\n'\necho $$ > {started}\nexec sleep 60\n")
    cancel = Cancel()

    def cancel_once_it_runs():
        deadline = time.monotonic() + 10
        while not (started.exists() and started.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.01)
        cancel.cancel()

    threading.Thread(target=cancel_once_it_runs, daemon=True).start()
    start = time.monotonic()
    got = search.search_workspace(str(tree), {"pattern": "needle"}, backend="rg", cancel=cancel, timeout=30.0)
    assert got["ok"] is False and got["cancelled"] is True
    assert time.monotonic() - start < 15, "it waited for the time limit"
    assert not _alive(int(started.read_text())), "the program outlived the cancel"


# ---- the programs' output, as it streams ----------------------------------------------------------


def _reference(stream: bytes, sep: bytes) -> list[search.Hit]:
    """The records of a whole output read at once: path NUL line SEP text LF."""
    hits, i = [], 0
    while True:
        nul = stream.find(b"\0", i)
        num_end = stream.find(sep, nul + 1) if nul >= 0 else -1
        end = stream.find(b"\n", num_end + 1) if num_end >= 0 else -1
        if end < 0:
            return hits
        text = stream[num_end + 1:end]
        path = stream[i:nul]
        hits.append(search.Hit(path[2:] if path.startswith(b"./") else path, int(stream[nul + 1:num_end]),
                               text[:search.LINE_KEEP], len(text) > search.LINE_KEEP))
        i = end + 1


def _chunked(stream: bytes, rng: random.Random, smallest: int):
    i = 0
    while i < len(stream):
        n = rng.randint(smallest, 3 * smallest + 70_000 * (rng.random() < 0.3))
        yield stream[i:i + n]
        i += n


@pytest.mark.parametrize("sep", [b":", b"\0"], ids=["rg", "git"])
def test_the_output_is_read_the_same_however_it_is_cut_into_chunks(sep):
    """Paths with newlines and the separator in them, ./ before them, texts empty, short,
    exactly 64 KiB, one byte more and far more: every way of cutting the stream gives the
    records of the whole stream read at once."""
    rng = random.Random(sep[0])
    keep = search.LINE_KEEP
    records = []
    for k in range(60):
        path = rng.choice([b"a.py", b"./src/b.txt", b"we\nird:name", b"./x:1:y", "é.md".encode(), b"", b"e\n"])
        sizes = [0, 1, 10, 300, keep - 1, keep, keep + 1, 3 * keep]
        size = sizes[k // 3 % len(sizes)] if k % 3 == 0 else rng.randint(0, 80)
        text = bytes(rng.choice(b"ab:\0 \t") for _ in range(min(size, 50))) + b"t" * max(0, size - 50)
        records.append(path + b"\0" + str(rng.randint(1, 10**6)).encode() + sep + text.replace(b"\n", b"") + b"\n")
    stream = b"".join(records)
    expected = _reference(stream, sep)
    assert len(expected) == 60 and sum(h.long for h in expected) >= 3
    for smallest in (1000, 5000, 65_536):
        for _ in range(3):
            assert list(search._records(_chunked(stream, rng, smallest), sep)) == expected
    small = b"".join(r for r in records if len(r) < 200)
    assert list(search._records(iter([small[i:i + 1] for i in range(len(small))]), sep)) == _reference(small, sep)


def test_a_cut_off_record_at_the_end_is_dropped_and_a_long_one_is_kept():
    """A program killed mid-record: a record without its newline is not a hit, unless its
    text is already past 64 KiB (then it is a long line, kept cut)."""
    keep = search.LINE_KEEP
    assert list(search._records(iter([b"a.py\x001:abc"]), b":")) == []
    got = list(search._records(iter([b"a.py\x001:" + b"x" * (keep + 1)]), b":"))
    assert got == [search.Hit(b"a.py", 1, b"x" * keep, True)]
    got = list(search._records(iter([b"a.py\x001:" + b"x" * keep]), b":"))
    assert got == []


def test_output_not_in_the_programs_format_is_a_search_failure():
    bound = 4 * 4096
    assert list(search._records(iter([b"a" * bound]), b":")) == []  # (a path may be that long)
    for stream in (b"a" * (bound + 1), b"a.py\x00x1:text\n"):
        with pytest.raises(search._Failed) as failed:
            list(search._records(iter([stream]), b":"))
        assert failed.value.code == "search_failed" and "not in its format" in str(failed.value)
    with pytest.raises(search._Failed):
        list(search._count_records(iter([b"a.py\x00many\n"])))


def test_the_counts_are_read_the_same_however_they_are_cut():
    rng = random.Random(5)
    pairs = [(rng.choice([b"a", b"./b/c", b"d\ne", b"f:g", b"", b"h\n"]), rng.randint(0, 10**9)) for _ in range(200)]
    stream = b"".join(p + b"\0" + str(n).encode() + b"\n" for p, n in pairs)
    expected = [(p[2:] if p.startswith(b"./") else p, n) for p, n in pairs]
    for _ in range(5):
        cuts = sorted(rng.sample(range(1, len(stream)), 40))
        chunks = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True)]
        assert list(search._count_records(iter(chunks))) == expected


def _fake_rg(tmp_path: Path, monkeypatch, script: str, interpreter: str = "/bin/sh", name: str = "rg") -> None:
    """A stand-in rg (or `name`) first on PATH, running `script`."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    (bindir / name).write_text(f"#!{interpreter}\n" + script)
    (bindir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")


def test_a_program_that_is_not_installed_is_said_to_be_missing(tree, tmp_path, monkeypatch):
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    for backend, program in (("rg", "ripgrep (rg)"), ("git", "git")):
        s = search._Search(dir_fd=-1, target=None, pattern="x", regex=False, glob=None, deadline=time.monotonic() + 5)
        hits, _ = search._BACKENDS[backend]
        with pytest.raises(search._Failed) as failed:
            list(hits(s))
        assert (failed.value.code, str(failed.value)) == ("search_failed", f"{program} is not installed")
    got = search.search_workspace(str(tree), {"pattern": "needle"}, backend="rg")
    assert (got["code"], got["error"]) == ("search_failed", "ripgrep (rg) is not installed")
    fd = os.open(tree, os.O_RDONLY)
    try:
        assert search.git_place(fd) == "none"
    finally:
        os.close(fd)


def test_git_says_whether_the_place_is_a_work_tree_or_ignored_in_one_and_writes_nothing(tree, tmp_path, capfd):
    (tmp_path / "plain").mkdir()
    for where, target, place in ((tree, None, "git"), (tree, b"src/b.txt", "git"), (tree / "build", None, "ignored"),
                                 (tree, b"debug.log", "ignored"), (tmp_path / "plain", None, "none")):
        fd = os.open(where, os.O_RDONLY)
        try:
            assert search.git_place(fd, target) == place, (where, target)
        finally:
            os.close(fd)
    assert capfd.readouterr() == ("", "")  # (git's "fatal: not a git repository" is not on the screen)


def test_the_programs_run_in_a_session_of_their_own(tree, tmp_path, monkeypatch):
    """Neither git's probe nor the search program shares the terminal's session (a Ctrl-C,
    a hangup or /dev/tty are not theirs)."""
    sids = tmp_path / "sids"
    for name in ("git", "rg"):
        _fake_rg(tmp_path, monkeypatch, f"cut -d' ' -f6 /proc/$$/stat >> {sids}\nexit 1\n", name=name)
    fd = os.open(tree, os.O_RDONLY)
    try:
        assert search.git_place(fd) == "git"
    finally:
        os.close(fd)
    search.search_workspace(str(tree), {"pattern": "needle"}, backend="rg")
    seen = sids.read_text().split()
    assert len(seen) == 2 and str(os.getsid(0)) not in seen


def test_warnings_before_the_time_limit_are_not_an_error(tree, tmp_path, monkeypatch):
    _fake_rg(tmp_path, monkeypatch, "printf 'a.py\\0002:needle = 1\\n'\necho 'rg: ./x: Permission denied' >&2\n"
                                    "exec sleep 60\n")
    got = search.search_workspace(str(tree), {"pattern": "needle"}, backend="rg", timeout=1.0)
    assert got["ok"] and got["complete"] is False and got["matches"] == "a.py:2: needle = 1"


@pytest.mark.parametrize("regex", [False, True])
def test_git_grep_failing_for_another_reason_is_a_search_failure(tree, tmp_path, monkeypatch, regex):
    real_git = shutil.which("git")
    _fake_rg(tmp_path, monkeypatch, f'[ "$1" = grep ] || exec {real_git} "$@"\n'
                                    "echo 'fatal: unable to read tree (deadbeef)' >&2\nexit 128\n", name="git")
    got = find(tree, "git", pattern="needle", regex=regex)
    assert (got["code"], got["error"]) == ("search_failed", "git grep failed: fatal: unable to read tree (deadbeef)")


def test_a_program_that_closes_its_output_but_lives_on_is_timed_out_and_leaves_nothing_open(
        tree, tmp_path, monkeypatch):
    """The hit it wrote is kept, the result says incomplete, and after the search no pipe is
    left open and no program is left in the list kill_all() would signal."""
    _fake_rg(tmp_path, monkeypatch, "printf 'a.py\\0002:needle = 1\\n'\nexec >&- 2>&-\nexec sleep 60\n")
    fds = len(os.listdir("/proc/self/fd"))
    got = search.search_workspace(str(tree), {"pattern": "needle"}, backend="rg", timeout=1.0)
    assert got["ok"] and got["complete"] is False and got["matches"] == "a.py:2: needle = 1"
    assert len(os.listdir("/proc/self/fd")) == fds and not search._procs


def test_error_output_in_pieces_is_kept_up_to_4_kib_in_all(tree, tmp_path, monkeypatch):
    _fake_rg(tmp_path, monkeypatch, "head -c 1000 /dev/zero | tr '\\0' e >&2\nsleep 0.2\n"
                                    "head -c 5000 /dev/zero | tr '\\0' f >&2\nexit 2\n")
    got = search.search_workspace(str(tree), {"pattern": "needle"}, backend="rg")
    assert got["error"] == "invalid regular expression (ripgrep's syntax): " + "e" * 1000 + "f" * 3096


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_search_leaves_no_descriptor_open(tree, backend):
    """Every directory, .gitignore, virtualenv probe, file and pipe a search opens is closed
    when it ends: whole, counted, narrowed to one file, cut short by max_results, or refused."""
    write(tree, "src/deep/.gitignore", "*.tmp\n")
    write(tree, "src/deep/x.tmp", "needle\n")
    before = sorted(os.listdir("/proc/self/fd"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for args in ({"pattern": "needle"}, {"pattern": "needle", "max_results": 1},
                     {"pattern": "needle", "path": "a.py"}, {"pattern": "nothing"},
                     {"pattern": "needle", "glob": "*.md"}, {"pattern": "(", "regex": True}):
            find(tree, backend, **args)
        gc.collect()
    assert sorted(os.listdir("/proc/self/fd")) == before
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []  # (closed, not collected)


@pytest.mark.parametrize("regex, patterns", [
    (False, ["a", "ab", "b a", " ", "é"]),
    (True, ["a", "^b", "b$", "^$", "a.b", "[ab]{2}", "a*", "(?:ab|ba)", "^", "$", "é|^a"]),
], ids=["literal", "regex"])
def test_the_walker_finds_and_counts_the_lines_a_line_by_line_search_finds(regex, patterns):
    """The walker's matcher against the plain reading: every line searched on its own.
    Random blocks of whole lines (with and without their last newline, empty lines, fewer
    and more than 64 matching lines) give the same lines and the same count."""
    rng = random.Random(7 + regex)
    for pattern in patterns:
        matcher = search._Matcher(pattern, regex)
        rx = re.compile(pattern if regex else re.escape(pattern))
        for _ in range(40):
            lines = ["".join(rng.choice("ab cé") for _ in range(rng.randint(0, 5))) for _ in range(rng.choice([0, 1, 3, 60, 200]))]
            block = "\n".join(lines) + ("\n" if lines and rng.random() < 0.7 else "")
            data = block.encode()
            lines = block.split("\n")[:-1] if block.endswith("\n") or not block else block.split("\n")
            expected = [(i, line.encode()) for i, line in enumerate(lines) if rx.search(line)]
            assert list(matcher.lines(data)) == expected, (pattern, block)
            assert matcher.count(data) == len(expected), (pattern, block)


@pytest.mark.parametrize("backend", BACKENDS)
def test_no_line_after_the_last_newline_nor_in_an_empty_file(tmp_path, backend):
    """"^$" finds the empty lines there are, not one after a file's last newline (the walker
    reported "one.txt:2: ") nor one in an empty file."""
    root = tmp_path / "p"
    for name, text in (("empty.txt", ""), ("one.txt", "x\n"), ("blank.txt", "x\n\ny"), ("bare.txt", "x")):
        write(root, name, text)
    got = find(root, backend, pattern="^$", regex=True)
    assert got["matches"] == "blank.txt:2: " and got["total_matches"] == 1
    assert find(root, backend, pattern="x$", regex=True)["files"] == {"bare.txt": 1, "blank.txt": 1, "one.txt": 1}
    got = find(root, backend, pattern="^", regex=True, max_results=1)  # (counted by a second pass)
    assert got["files"] == {"blank.txt": 3, "one.txt": 1, "bare.txt": 1} and got["total_matches"] == 5


# ---- the walker: what it opens, and how it reads -----------------------------------------------


def _walk_in_a_thread(root: Path, **args) -> dict:
    """find(root, "python") that must end within 20 s (an open that blocks would not)."""
    import threading

    box: dict = {}
    t = threading.Thread(target=lambda: box.update(r=find(root, "python", **args)), daemon=True)
    t.start()
    t.join(20)
    assert not t.is_alive(), "the walker blocked"
    return box["r"]


def test_the_walker_neither_follows_nor_blocks_on_ignore_files_that_are_not_files(tmp_path):
    """A .gitignore (here, above the searched directory, or .git/info/exclude) that is a FIFO
    with no writer, or a link to a file elsewhere, is not read: no open blocks, nothing
    outside the tree decides."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "rules").write_text("*\n")
    for where in (".gitignore", "src/.gitignore", "src/deep/.gitignore", ".git/info/exclude"):
        for kind in ("fifo", "link"):
            root = tmp_path / f"{kind}{where.replace('/', '_')}"
            write(root, "src/deep/a.txt", "needle\n")
            (root / ".git/info").mkdir(parents=True)
            if kind == "fifo":
                os.mkfifo(root / where)
            else:
                (root / where).symlink_to(elsewhere / "rules")
            assert _walk_in_a_thread(root, pattern="needle")["files"] == {"src/deep/a.txt": 1}, (kind, where)
            assert _walk_in_a_thread(root, pattern="needle", path="src/deep")["files"] == {"src/deep/a.txt": 1}


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_ignore_files_above_a_searched_subdirectory_apply_deepest_last(tmp_path, backend):
    root = tmp_path / "p"
    for rel in ("a/b/c/keep.md", "a/b/c/drop.md", "a/b/c/x.txt", "a/b/c/y.txt"):
        write(root, rel, "needle\n")
    write(root, ".gitignore", "*.md\nx.txt\n")
    write(root, "a/.gitignore", "!*.md\n")
    write(root, "a/b/.gitignore", "drop.md\n")
    expected = {"a/b/c/keep.md": 1, "a/b/c/y.txt": 1}
    assert find(root, backend, pattern="needle", path="a/b/c")["files"] == expected
    assert find(root, backend, pattern="needle", path="a/b")["files"] == expected
    assert find(root, backend, pattern="needle")["files"] == expected


@pytest.mark.parametrize("backend", BACKENDS)
def test_symbolic_links_are_not_followed(tmp_path, backend):
    root = tmp_path / "p"
    write(root, "a.txt", "needle\n")
    write(tmp_path / "elsewhere", "secret.txt", "needle outside\n")
    (root / "inside.txt").symlink_to("a.txt")
    (root / "outside.txt").symlink_to(tmp_path / "elsewhere" / "secret.txt")
    (root / "outdir").symlink_to(tmp_path / "elsewhere")
    assert find(root, backend, pattern="needle")["files"] == {"a.txt": 1}


def test_the_walker_goes_on_past_an_entry_that_vanished(tmp_path, monkeypatch):
    """A file or directory removed between the listing and its stat or open is passed over,
    not the end of the directory."""
    root = tmp_path / "p"
    for rel in ("b/x.txt", "c.txt", "d/y.txt"):
        write(root, rel, "needle\n")
    real = os.scandir

    class Gone:
        def __init__(self, name, mode):
            self.name, self.mode = name, mode

        def stat(self, follow_symlinks=True):
            if self.mode is None:
                raise FileNotFoundError(2, "gone", self.name)
            return os.stat_result((self.mode, 0, 0, 0, 0, 0, 0, 0, 0, 0))

    class Listing:
        def __init__(self, fd):
            self.it = real(fd)

        def __enter__(self):
            return iter([Gone("a-gone", None), Gone("a-gone-dir", stat.S_IFDIR | 0o755), *self.it])

        def __exit__(self, *exc):
            self.it.close()

    monkeypatch.setattr(search.os, "scandir", Listing)
    got = find(root, "python", pattern="needle")
    assert got["files"] == {"b/x.txt": 1, "c.txt": 1, "d/y.txt": 1} and "note" not in got


def test_the_walker_notes_entries_it_may_list_but_not_look_at(tmp_path, monkeypatch):
    """A directory the user may list but not enter (mode r--): its names come, their stat is
    refused (the listing still tells a directory); a directory that cannot be listed, also
    the searched one. Each is noted (a directory with its /), but a name the ignore rules
    leave out, as what the listing says it is."""
    root = tmp_path / "p"
    write(root, ".gitignore", "*.log\nsecret/\n")
    for rel in ("a/x.txt", "b/y.txt", "c.txt"):
        write(root, rel, "needle\n")
    real = os.scandir

    class Refused:
        def __init__(self, name, is_dir=False):
            self.name, self.dir = name, is_dir

        def stat(self, follow_symlinks=True):
            raise PermissionError(13, "Permission denied", self.name)

        def is_dir(self, follow_symlinks=True):
            if self.dir is None:
                raise PermissionError(13, "Permission denied", self.name)
            return self.dir

    class Listing:
        def __init__(self, fd):
            if os.readlink(f"/proc/self/fd/{fd}").endswith("/b"):
                raise PermissionError(13, "Permission denied")
            self.it = real(fd)

        def __enter__(self):
            return iter([Refused("hidden.log"), Refused("secret", True), Refused("sub", True),
                         Refused("0.txt", None), *self.it])

        def __exit__(self, *exc):
            self.it.close()

    monkeypatch.setattr(search.os, "scandir", Listing)
    got = find(root, "python", pattern="needle")
    assert got["files"] == {"a/x.txt": 1, "c.txt": 1}
    assert got["not_searched"] == 5  # 0.txt, a/0.txt, a/sub/, b/, sub/
    assert got["note"] == "5 files could not be read and were not searched (0.txt: Permission denied)"
    got = find(root, "python", pattern="needle", path="b")
    assert got["files"] == {} and got["note"] == "1 file could not be read and was not searched (b: Permission denied)"


@pytest.mark.parametrize("failing", ["fstat", "read"])
def test_a_file_the_walker_opens_but_cannot_read_is_noted(tmp_path, monkeypatch, failing):
    """An input/output error (a failing disk, a file on a network mount gone away) on a
    file's stat or read: the file is noted, the rest searched."""
    root = tmp_path / "p"
    write(root, "bad.txt", "needle\n")
    write(root, "good.txt", "needle\n")
    real = getattr(os, failing)

    def broken(fd, *args):
        if os.readlink(f"/proc/self/fd/{fd}").endswith("/bad.txt"):
            raise OSError(5, "Input/output error")
        return real(fd, *args)

    monkeypatch.setattr(search.os, failing, broken)
    got = find(root, "python", pattern="needle")
    assert got["files"] == {"good.txt": 1}
    assert got["note"] == "1 file could not be read and was not searched (bad.txt: Input/output error)"


def test_a_virtualenv_is_known_by_its_pyvenv_cfg_whatever_that_is(tmp_path):
    (tmp_path / "dangling").symlink_to(tmp_path / "nothing")
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        assert search._has(b"dangling", fd) is True and search._has(b"missing", fd) is False
    finally:
        os.close(fd)


@pytest.mark.parametrize("backend", ["git", "python"])
def test_a_nul_byte_past_the_first_8_kib_leaves_a_file_text_whatever_its_size(tmp_path, backend):
    """Only the first 8 KiB are sniffed (as git grep does), also in a file read in several
    1 MiB pieces: a NUL in a later piece is text."""
    root = tmp_path / "p"
    write(root, "big.txt", b"x\n" * (search.READ_CHUNK // 2 + 5) + b"\0needle\n")
    assert find(root, backend, pattern="needle")["matches"] == f"big.txt:{search.READ_CHUNK // 2 + 6}: \x00needle"


def test_a_line_longer_than_four_times_64_kib_is_searched_in_its_head_only():
    """A 1 MiB piece with no newline at all is kept to its first 256 KiB: a match ending at
    its last byte is found, one a byte further is not (the memory of a search is bounded).
    What follows a newline in the piece is searched whole."""
    head = 4 * search.LINE_KEEP
    s = search._Search(dir_fd=-1, target=None, pattern="needle", regex=False, glob=None,
                       deadline=time.monotonic() + 60)
    matcher = search._Matcher("needle", False)
    for rest, found in ((0, True), (1, False)):
        for first in (b"", b"\n"):  # after a newline in the same 1 MiB piece, the rest is whole
            data = first + b"x" * (head - 6 + rest) + b"needle" + b"y" * 10
            lines = [before + i for before, block in _blocks_of(data, s) for i, _ in matcher.lines(block)]
            assert lines == ([len(first)] if found or first else []), (rest, first)
    # with its newline in the same 1 MiB piece, the line is whole, and so is the next one
    data = b"x" * (head + 1) + b"needle\nneedle\n"
    assert [before + i for before, block in _blocks_of(data, s) for i, _ in matcher.lines(block)] == [0, 1]


@pytest.mark.parametrize("max_results", [100, 1])
def test_a_line_searched_in_its_head_is_never_joined_to_its_end_and_is_noted(tmp_path, max_results):
    """The walker keeps the first 256 KiB of a line with no newline in a 1 MiB piece and skips
    the rest of that line: its head and its end never make one text (here "nee" + "dle", a
    match that is in no line of the file), the lines after it keep their numbers, and the
    result says which line was searched in part (also from the counting pass)."""
    head = 4 * search.LINE_KEEP
    line = b"x" * (head - 3) + b"nee" + b"y" * (search.READ_CHUNK - head) + b"dle" + b"z" * 5
    write(tmp_path / "p", "big.txt", line + b"\nneedle\n" + line + b"\nneedle\n")
    write(tmp_path / "p", "small.txt", "needle\n")
    got = find(tmp_path / "p", "python", pattern="needle", max_results=max_results)
    assert got["files"] == {"big.txt": 2, "small.txt": 1}
    assert got["matches"] == "\n".join(["big.txt:2: needle", "big.txt:4: needle", "small.txt:1: needle"][:max_results])
    assert got["lines_searched_in_part"] == 1  # (line 3 ends in the piece after the one it starts in)
    assert got["note"].endswith("1 line longer than 256 KiB was searched in its first 256 KiB only (big.txt:1)")
    assert runner.result_row("c1", "search_workspace", got)["text"].endswith(", 1 long line searched in part")
    got = find(tmp_path / "p", "python", pattern="needle", path="big.txt")
    assert got["files"] == {"big.txt": 2} and got["note"].endswith("(big.txt:1)")
    # a line as long that ends in the piece after the one it starts in is searched whole
    write(tmp_path / "q", "big.txt", b"\n" + line + b"\n")
    got = find(tmp_path / "q", "python", pattern="needle")
    assert got["matches"] == "" and "note" not in got
    write(tmp_path / "q", "big.txt", b"\n" + line.replace(b"nee", b"nee" + b"dle", 1) + b"\n")
    got = find(tmp_path / "q", "python", pattern="needle")
    assert got["files"] == {"big.txt": 1} and "lines_searched_in_part" not in got
    assert got["note"] == f"1 long line is cut to {search.LINE_CHARS} characters around the match (read_file shows it whole)"


def test_a_long_line_is_skipped_to_its_very_end_and_what_follows_is_searched_whole(tmp_path):
    """A line over three 1 MiB pieces whose newline is the first byte of the fourth, then
    lines read on: the one across the next piece's edge with its match after the edge, one
    whose newline ends a line the walker's head of another line would make a match with,
    and a last line of exactly 256 KiB with no newline, which is whole."""
    chunk, head = search.READ_CHUNK, 4 * search.LINE_KEEP
    fill = b"".join(b"y" * 999 + b"\n" for _ in range(chunk // 1000))
    edge = b"x" * (3 * chunk) + b"\nneedle\n" + fill + b"y" * 2000 + b"zz needle\n"
    write(tmp_path / "p", "edge.txt", edge)
    join = b"x" * (head - 5) + b"needl" + b"y" * chunk + b"e\nneedle\n"  # "needl" + "e": in no line
    write(tmp_path / "p", "join.txt", join)
    write(tmp_path / "p", "last.txt", b"x" * (head - 6) + b"needle")  # one read, no newline
    got = find(tmp_path / "p", "python", pattern="needle")
    crossing = edge.count(b"\n", 0, edge.index(b"zz needle")) + 1
    assert [m.split(": ")[0] for m in got["matches"].split("\n")] == [
        "edge.txt:2", f"edge.txt:{crossing}", "join.txt:2", "last.txt:1"]
    assert got["lines_searched_in_part"] == 2
    assert got["note"].endswith("2 lines longer than 256 KiB were searched in their first 256 KiB only (edge.txt:1)")
    assert runner.result_row("c1", "search_workspace", got)["text"] == (
        "ok: 4 matching lines in 3 files, 2 long lines searched in part")


def _blocks_of(data: bytes, s) -> list:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        Path(d, "f").write_bytes(data)
        fd = os.open(d, os.O_RDONLY)
        try:
            return list(search._blocks(b"f", b"f", fd, s))
        finally:
            os.close(fd)


@pytest.mark.parametrize("backend", BACKENDS)
def test_lines_across_the_walkers_1_mib_pieces_are_whole_and_numbered(tmp_path, backend):
    rng = random.Random(3)
    lines, size = [], 0
    while size < 2.5 * search.READ_CHUNK:
        line = "x" * rng.randint(0, 3000) + ("needle" if rng.random() < 0.01 else "") + "y" * rng.randint(0, 10)
        lines.append(line)
        size += len(line) + 1
    for piece in (1, 2):  # a match on the line that crosses each piece's end
        at = next(i for i, n in enumerate(itertools.accumulate(len(x) + 1 for x in lines)) if n > piece * search.READ_CHUNK)
        lines[at] = "needle" + lines[at]
    write(tmp_path / "p", "big.txt", "\n".join(lines) + "\n")
    expected = [f"big.txt:{i + 1}: {line}" for i, line in enumerate(lines) if "needle" in line]
    got = find(tmp_path / "p", backend, pattern="needle", max_results=1000)
    assert got["total_matches"] == len(expected) and got["files"] == {"big.txt": len(expected)}
    windows = [m.split(": ", 1)[0] for m in got["matches"].split("\n")]
    assert windows == [e.split(": ", 1)[0] for e in expected]


# ---- the result: windows, budgets, notes, errors -----------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("pattern, regex", [("N(E", False), ("N[(]E", True), ("N.E", True)])
def test_the_window_of_a_long_line_is_around_its_match_for_a_literal_or_a_regex(tmp_path, backend, pattern, regex):
    root = tmp_path / "long"
    line = "x" * 1000 + "N(E" + "y" * 1000
    write(root, "min.js", line + "\n" + "z" * (search.LINE_KEEP + 100) + "N(E\n")
    got = find(root, backend, pattern=pattern, regex=regex)
    first, second = (m.split(": ", 1)[1] for m in got["matches"].split("\n"))
    assert first == "…" + line[900:1400] + "…"
    assert second == "z" * 500 + "…"  # (the match is past the 64 KiB kept: the window is the head)


@pytest.mark.skipif(not HAVE_RG, reason="ripgrep (rg) is not installed")
def test_a_regex_only_ripgrep_reads_shows_the_head_of_a_long_line(tmp_path):
    write(tmp_path / "p", "min.js", "x" * 1000 + "needle" + "y" * 1000 + "\n")
    got = find(tmp_path / "p", "rg", pattern=r"needl[\p{Ll}]", regex=True)  # (Python's re has no \p)
    assert got["matches"] == "min.js:1: " + "x" * 500 + "…"


def _stalling_rg(tmp_path, monkeypatch, lines: str, counts: str, stall_lines: bool, stall_counts: bool) -> None:
    """A stand-in rg: the lines pass prints `lines`, the --count pass `counts`; either then
    sleeps (an endless search) or exits."""
    def part(out, stall):
        return f"printf '{out}'\n" + ("exec sleep 60\n" if stall else "exit 0\n")
    _fake_rg(tmp_path, monkeypatch, 'for a in "$@"; do [ "$a" = --count ] && counting=1; done\n'
                                    f'if [ -n "$counting" ]; then\n{part(counts, stall_counts)}fi\n'
                                    + part(lines, stall_lines))


@pytest.mark.parametrize("why, line, max_results", [("max_results", "short", 2), ("output_bytes", "z" * 900, 1000)])
def test_the_program_is_stopped_once_the_lines_are_full_and_the_counts_come_from_a_second_pass(
        tree, tmp_path, monkeypatch, why, line, max_results):
    """The lines pass is stopped as soon as a line does not fit (not read to its end, which
    here never comes: the totals would be cut by the time limit), then every file is counted."""
    records = "".join(f"a.py\\000{n}:needle {line}\\n" for n in range(1, 61))
    _stalling_rg(tmp_path, monkeypatch, records, "a.py\\00060\\n", stall_lines=True, stall_counts=False)
    got = search.search_workspace(str(tree), {"pattern": "needle", "max_results": max_results}, backend="rg",
                                  timeout=5.0)
    assert got["truncated_by"] == [why] and "complete" not in got, got.get("note")
    assert got["total_matches"] == 60 and got["files"] == {"a.py": 60}


def test_counts_cut_by_the_time_limit_are_merged_with_the_lines_seen_and_said_incomplete(tree, tmp_path, monkeypatch):
    _stalling_rg(tmp_path, monkeypatch, "a.py\\0001:needle\\na.py\\0002:needle\\na.py\\0003:needle\\n",
                 "src/b.txt\\0005\\n.hidden/h.cfg\\0002\\n", stall_lines=False, stall_counts=True)
    got = search.search_workspace(str(tree), {"pattern": "needle", "max_results": 2}, backend="rg", timeout=1.0)
    assert got["complete"] is False and "the counts are those found by then" in got["note"]
    assert list(got["files"].items()) == [(".hidden/h.cfg", 2), ("a.py", 3), ("src/b.txt", 5)]
    assert got["total_matches"] == 10 and "at least 10 matching lines in at least 3 files" in got["note"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_budgets_count_bytes_as_the_result_is_written_not_escaped(tmp_path, backend):
    """The result is JSON with its UTF-8 as it is (not \\u escapes): 46 lines of 512 bytes with
    é in them fit in the lines' 23,552 bytes, and 512 names of 16 bytes in the counts' 8 KiB."""
    root = tmp_path / "lines"
    for i in range(46):  # "f00.txt:1: " + 500 bytes of text (490 characters)
        write(root, f"f{i:02d}.txt", "needle" + "é" * 10 + "x" * 474 + "\n")
    got = find(root, backend, pattern="needle", max_results=200)
    assert got["shown"] == 46 and got["truncated"] is False
    root = tmp_path / "names"
    for i in range(512):  # "é00000.txt": 11 bytes + 2 quotes + 1 + 2
        write(root, f"é{i:05d}.txt", "needle\n")
    got = find(root, backend, pattern="needle", max_results=1)
    assert len(got["files"]) == 512 and "files_not_listed" not in got


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_note_says_what_was_left_out_and_offers_max_results_only_when_it_helps(tmp_path, backend):
    root = tmp_path / "p"
    for i in range(520):  # every line shown, but the counts of 520 files overflow 8 KiB
        write(root, f"f{i:06d}.txt", "needle\n")
    got = find(root, backend, pattern="needle", max_results=1000)
    assert got["shown"] == 520 and got["truncated_by"] == ["files_listed"]
    assert got["note"] == "8 more files with matches are counted but not listed"
    got = find(root, backend, pattern="needle", max_results=1000 - 1)
    assert got["shown"] == 520 and "raise max_results" not in got["note"]
    write(root, "many.txt", "needle\n" * 600)
    got = find(root, backend, pattern="needle", max_results=1000)
    assert "max_results" in got["truncated_by"] and "raise max_results" not in got["note"]
    got = find(root, backend, pattern="needle", max_results=999)
    assert got["note"].startswith("showing 999 of 1,120 matching lines in 521 files; narrow the search with "
                                  "path or glob, or raise max_results (up to 1000)")
    write(tmp_path / "wide", "w.txt", ("needle" + "w" * 480 + "\n") * 60)
    got = find(tmp_path / "wide", backend, pattern="needle", max_results=100)
    assert got["truncated_by"] == ["output_bytes"] and "raise max_results" not in got["note"]


@pytest.mark.parametrize("backend", ["rg", "git"])
def test_a_file_in_a_virtualenv_found_by_a_program_is_left_out_however_deep(tmp_path, backend):
    if backend == "rg" and not HAVE_RG:
        pytest.skip("ripgrep (rg) is not installed")
    root = tmp_path / "p"
    for rel in ("env/pyvenv.cfg", "env/z.py", "env2/lib/deep/y.py", "a.py"):
        write(root, rel, "needle\n" if rel.endswith(".py") else "home = /usr\n")
    write(root, "env2/pyvenv.cfg", "home = /usr\n")
    assert find(root, backend, pattern="needle")["files"] == {"a.py": 1}


@pytest.mark.parametrize("backend", BACKENDS)
def test_files_left_out_by_the_rules_are_counted_once_each_and_a_failing_check_leaves_out(tree, backend, caplog):
    write(tree, "secret.txt", "needle\nneedle\nneedle\n")

    def readable(path):
        if path == "a.py":
            raise RuntimeError("the check broke")
        return path != "secret.txt"

    got = search.search_workspace(str(tree), {"pattern": "needle", "path": ".", "regex": False, "max_results": 100},
                                  readable=readable, backend=backend)
    assert "secret.txt" not in got["files"] and "a.py" not in got["files"]
    assert got["skipped_by_rules"] == 2 and "2 files with matches are left out" in got["note"]
    assert "the read rule check failed for 'a.py'" in caplog.text


def test_arguments_left_out_take_their_defaults_and_an_unknown_backend_is_refused(tree):
    write(tree, "dots.txt", "a.b\naxb\n")
    got = search.search_workspace(str(tree), {"pattern": "a.b"}, backend="python")
    assert got["files"] == {"dots.txt": 1}  # (a literal)
    got = search.search_workspace(str(tree), {"pattern": "a.b"}, backend="bogus")
    assert (got["code"], got["error"]) == ("bad_arguments", "unknown search backend 'bogus'")


@pytest.mark.parametrize("step, path", [("Root", "."), ("stat", "src"), ("open_dir", "src"), ("parent", "a.py"),
                                        ("search", "src")])
def test_a_directory_that_fails_between_the_check_and_the_search_is_an_error_result(tree, monkeypatch, step, path):
    """Whatever fails after the path was checked (the root, the stat, the open, the search
    itself) is a result naming it, never an exception."""
    from dashfloat.tools import safeopen

    def fail(*a, **kw):
        raise PermissionError(13, "Permission denied")

    def break_it():
        if step == "Root":
            monkeypatch.setattr(safeopen, "Root", fail)
        elif step == "search":
            monkeypatch.setitem(search._BACKENDS, "python", (fail, fail))
        else:  # (Root.stat opens the parent itself: the call that fails is search's own, after it)
            real, calls = getattr(safeopen.Root, step), []

            def fail_after_stat(self, rel, **kw):
                calls.append(rel)
                if kw.get("read") or len(calls) > 1:
                    fail()
                return real(self, rel, **kw)

            monkeypatch.setattr(safeopen.Root, step, fail if step == "stat" else fail_after_stat)

    real_resolve = pathpolicy.resolve

    def resolve_then_break(*args, **kw):  # (the path policy's own check passes: what fails is after it)
        res = real_resolve(*args, **kw)
        break_it()
        return res

    monkeypatch.setattr(pathpolicy, "resolve", resolve_then_break)
    got = search.search_workspace(str(tree), {"pattern": "needle", "path": path}, backend="python")
    if step == "Root":
        assert got == {"ok": False, "code": "io_error", "error": "cannot open the working directory: Permission denied"}
    else:
        assert got == {"ok": False, "code": "permission_denied", "error": f"permission denied: search {path}"}


def test_a_place_swapped_for_something_else_after_the_check_is_refused(tree, monkeypatch):
    from dashfloat.tools import safeopen

    for mode, expected in ((stat.S_IFIFO | 0o644, ("special_file", "refusing a FIFO (named pipe): src (only regular "
                                                                    "files and directories are allowed)")),
                           (stat.S_IFLNK | 0o777, ("not_a_file", "not a file or directory: src"))):
        monkeypatch.setattr(safeopen.Root, "stat", lambda self, rel, m=mode: os.stat_result((m,) + (0,) * 9))
        got = search.search_workspace(str(tree), {"pattern": "needle", "path": "src"}, backend="python")
        assert (got["code"], got["error"]) == expected


@pytest.mark.parametrize("result, shown", [
    ({}, "no matches"),
    ({"total_matches": 0, "total_files": 0}, "no matches"),
    ({"total_matches": 1, "total_files": 1}, "1 matching line in 1 file"),
    ({"total_matches": 1200, "total_files": 3, "truncated": True, "shown": 40}, "1,200 matching lines in 3 files, 40 shown"),
    ({"total_matches": 2}, "2 matching lines in 0 files"),
])
def test_the_result_row_says_how_many(result, shown):
    assert search.shown_count(result) == shown


def test_files_ripgrep_cannot_read_are_a_note_and_the_hits_stay(tree, tmp_path, monkeypatch):
    """rg exits 2 when a file is unreadable (a user's search over a tree with a file of mode
    000): that is no bad pattern. The hits stay and the note says how many were not searched;
    a pattern rg refuses is still refused, whatever else it says."""
    _fake_rg(tmp_path, monkeypatch, "printf 'a.py\\0002:needle = 1\\n'\n"
                                    "echo './secret.txt: Permission denied (os error 13)' >&2\n"
                                    "echo 'rg: ./sub/x: Permission denied (os error 13)' >&2\nexit 2\n")
    got = search.search_workspace(str(tree), {"pattern": "needle"}, backend="rg")
    assert got["ok"] and got["matches"] == "a.py:2: needle = 1"
    assert got["note"] == "2 files could not be read and were not searched (secret.txt: Permission denied (os error 13))"
    shutil.rmtree(tmp_path / "bin")
    _fake_rg(tmp_path, monkeypatch, "echo './secret.txt: Permission denied (os error 13)' >&2\n"
                                    "printf 'regex parse error:\\n    ./a(\\n       ^\\nerror: unclosed group\\nmore\\n' >&2\n"
                                    "exit 2\n")
    got = search.search_workspace(str(tree), {"pattern": "./a(", "regex": True}, backend="rg")
    assert got["code"] == "bad_arguments"
    assert got["error"] == "invalid regular expression (ripgrep's syntax): regex parse error: ./a( ^ error: unclosed group"


_UNREADABLE_STAND_IN = """
import os, subprocess, sys
real, top, hidden, name = REAL, TOP, HIDDEN, NAME
if name == "git" and sys.argv[1:2] != ["grep"]:
    os.execv(real, [real] + sys.argv[1:])
proc = subprocess.run([real] + sys.argv[1:], capture_output=True)
here = os.path.relpath(os.getcwd(), top)

def under(rel):  # a hidden path, or one in a hidden directory
    return any(rel == h.rstrip("/") or h.endswith("/") and rel.startswith(h) for h in hidden)

kept = [r for r in proc.stdout.splitlines(True) if not under(os.path.normpath(os.path.join(here, os.fsdecode(r.split(b"\\0")[0]))))]
sys.stdout.buffer.write(b"".join(kept))
said = [h for h in sorted(hidden) if here == "." or h.startswith(here + "/")]
if name == "rg":  # named from where it runs, and exit status 2
    for h in said:
        p = "./" + os.path.relpath(os.path.join(top, h), os.getcwd())
        print(f"{p}: IO error for operation on {p}: Permission denied (os error 13)" if h.endswith("/") else
              f"{p}: Permission denied (os error 13)", file=sys.stderr)
    sys.exit(2 if said else proc.returncode)
gittop = subprocess.run([real, "rev-parse", "--show-toplevel"], capture_output=True, text=True).stdout.strip()
for h in said:  # named from the top of the work tree (twice, for a file), and the exit status is kept
    p = os.path.relpath(os.path.join(top, h), gittop) + ("/" if h.endswith("/") else "")
    print(f"warning: could not open directory '{p}': Permission denied" if h.endswith("/") else
          f"error: failed to stat '{p}': Permission denied\\n" * 2, end="" if not h.endswith("/") else "\\n",
          file=sys.stderr)
sys.exit(proc.returncode)
"""


def _unreadable_here(tmp_path, monkeypatch, backend: str, hidden: set[str]) -> None:
    """Make the files and directories `hidden` (paths beneath tmp_path/proj; a directory's
    ends with /) unreadable to `backend` as they are to a user who may not read them (the
    tests run as root, who reads anything). rg and git: a stand-in runs the real program,
    drops what it found in them, and prints the messages the program prints for them (as
    measured with the real one, run as an unprivileged user), with its exit status; the
    walker: os.open refuses them."""
    top = str(tmp_path / "proj")
    if backend == "python":
        real_open = os.open

        def refusing_open(path, flags, mode=0o777, *, dir_fd=None):
            if dir_fd is not None:
                where = os.path.relpath(os.readlink(f"/proc/self/fd/{dir_fd}") + "/" + os.fsdecode(path), top)
                if where in {h.rstrip("/") for h in hidden}:
                    raise PermissionError(13, "Permission denied")
            return real_open(path, flags, mode, dir_fd=dir_fd)

        monkeypatch.setattr(search.os, "open", refusing_open)
        return
    script = (_UNREADABLE_STAND_IN.replace("REAL", repr(shutil.which(backend))).replace("TOP", repr(top))
              .replace("HIDDEN", repr(sorted(hidden))).replace("NAME", repr(backend)))
    _fake_rg(tmp_path, monkeypatch, script, interpreter=sys.executable, name=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_what_a_backend_cannot_read_is_a_note_and_the_hits_stay(tree, tmp_path, monkeypatch, backend):
    """A tree with a file and a directory the user may not read: every backend finds the
    rest, says how many it could not search and names the first (from the working directory,
    as hits are named; a directory with its /), and the result counts them."""
    write(tree, "locked/k.txt", "needle\n")
    write(tree, "src/no.txt", "needle\n")
    if backend == "git":
        git(tree, "add", "-A")
    _unreadable_here(tmp_path, monkeypatch, backend, {"locked/", "src/no.txt"})
    got = find(tree, backend, pattern="needle")
    assert got["files"] == {"a.py": 2, "src/b.txt": 1, "src/deep/c.md": 1, "src/keep.log": 1, ".hidden/h.cfg": 1}
    shown = "locked" if backend == "rg" else "locked/"
    because = "Permission denied (os error 13)" if backend == "rg" else "Permission denied"
    assert got["not_searched"] == 2
    assert got["note"] == f"2 files could not be read and were not searched ({shown}: {because})"
    assert runner.result_row("c1", "search_workspace", got)["text"] == (
        "ok: 6 matching lines in 5 files, 2 not readable")
    # searched from a directory beneath: still named from the working directory
    got = find(tree, backend, pattern="needle", path="src")
    assert got["files"] == {"src/b.txt": 1, "src/deep/c.md": 1, "src/keep.log": 1}
    assert got["note"] == f"1 file could not be read and was not searched (src/no.txt: {because})"


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_unreadable_file_a_rule_hides_or_a_glob_leaves_out_is_not_named(tree, tmp_path, monkeypatch, backend):
    write(tree, "src/no.txt", "needle\n")
    if backend == "git":
        git(tree, "add", "-A")
    _unreadable_here(tmp_path, monkeypatch, backend, {"src/no.txt"})
    got = search.search_workspace(str(tree), {"pattern": "needle", "path": "src"}, backend=backend,
                                  readable=lambda path: path != "src/no.txt")
    assert got["files"] == {"src/b.txt": 1, "src/deep/c.md": 1, "src/keep.log": 1} and "note" not in got and "not_searched" not in got
    if backend == "python":  # (rg and git are given the glob: they never open the file)
        got = find(tree, backend, pattern="needle", path="src", glob="*.md")
        assert got["files"] == {"src/deep/c.md": 1} and "note" not in got


@pytest.mark.parametrize("backend, said", [
    ("rg", "echo './secret.txt: Permission denied (os error 13)' >&2\n"),
    ("git", "echo \"error: failed to stat 'secret.txt': Permission denied\" >&2\n"),
])
def test_unreadable_files_said_before_the_time_limit_are_at_least_those(tree, tmp_path, monkeypatch, backend, said):
    """A search stopped by its time limit still says the files the program could not read
    by then (at least those), with the hits found by then; for rg, what it said is no
    refusal of the pattern though its status would be 2."""
    if backend == "git":
        said = f'[ "$1" = grep ] || exec {shutil.which("git")} "$@"\n' + said
    line = "a.py\\0002:needle = 1\\n" if backend == "rg" else "a.py\\0002\\0needle = 1\\n"
    _fake_rg(tmp_path, monkeypatch, said + f"printf '{line}'\nexec sleep 60\n", name=backend)
    got = search.search_workspace(str(tree), {"pattern": "needle"}, backend=backend, timeout=1.0)
    assert got["matches"] == "a.py:2: needle = 1" and got["complete"] is False
    assert got["note"].endswith("; at least 1 file could not be read and was not searched (secret.txt: "
                                f"Permission denied{' (os error 13)' if backend == 'rg' else ''})")


def test_unreadable_files_are_named_in_order_whatever_order_the_program_said_them(tree, tmp_path, monkeypatch):
    """rg's threads meet the files in any order: the note names the first by name. A line
    that names a path but no reason still counts."""
    _fake_rg(tmp_path, monkeypatch, "echo './zeta: Permission denied (os error 13)' >&2\n"
                                    "echo './aaa odd' >&2\n"
                                    "echo './beta: Permission denied (os error 13)' >&2\nexit 2\n")
    got = search.search_workspace(str(tree), {"pattern": "needle"}, backend="rg")
    assert got["not_searched"] == 3
    assert got["note"] == "3 files could not be read and were not searched (aaa odd: unreadable)"


@pytest.mark.parametrize("size, said", [(4095, "1 file could not be read"), (4096, "at least 1 file could not be read")])
def test_what_git_could_not_read_is_at_least_that_when_its_error_output_was_full(tree, tmp_path, monkeypatch,
                                                                                 size, said):
    head, tail = "error: failed to stat '", "': Permission denied"
    line = head + "a" * (size - len(head) - len(tail) - 1) + tail
    _fake_rg(tmp_path, monkeypatch, f'[ "$1" = grep ] || exec {shutil.which("git")} "$@"\n'
                                    f"printf 'a.py\\0002\\000needle = 1\\n'\necho \"{line}\" >&2\n", name="git")
    got = search.search_workspace(str(tree), {"pattern": "needle"}, backend="git")
    assert len(line) + 1 == size and got["matches"] == "a.py:2: needle = 1"
    assert got["note"].startswith(said + " and ")


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_unreadable_file_in_a_virtualenv_is_not_named(tree, tmp_path, monkeypatch, backend):
    """The search leaves out a virtualenv (by its pyvenv.cfg): what could not be read there
    is not said either."""
    write(tree, "myenv/lib/w.py", "needle\n")
    if backend == "git":
        git(tree, "add", "-A")
    _unreadable_here(tmp_path, monkeypatch, backend, {"myenv/lib/w.py"})
    got = find(tree, backend, pattern="needle")
    assert "myenv/lib/w.py" not in got["files"] and "note" not in got


def test_a_rule_check_that_fails_names_no_unreadable_file_and_is_logged(tree, tmp_path, monkeypatch, caplog):
    write(tree, "src/no.txt", "needle\n")
    _unreadable_here(tmp_path, monkeypatch, "python", {"src/no.txt"})

    def readable(path):
        if path == "src/no.txt":
            raise RuntimeError("the rule check broke")
        return True

    with caplog.at_level(logging.ERROR, logger="dashfloat.tools.search"):
        got = search.search_workspace(str(tree), {"pattern": "needle", "path": "src"}, backend="python",
                                      readable=readable)
    assert got["files"] == {"src/b.txt": 1, "src/deep/c.md": 1, "src/keep.log": 1} and "note" not in got
    assert "the read rule check failed for 'src/no.txt'" in caplog.text


def test_what_the_counting_pass_finds_unsearched_is_said_when_the_lines_pass_stopped_first(tmp_path, monkeypatch):
    """The lines pass stops at max_results before the files that could not be searched;
    the counting pass, which reads every file, says them: a long line searched in part (the
    walker) and an error output that was full (at least)."""
    root = tmp_path / "p"
    write(root, "a.txt", "needle\nneedle\n")
    write(root, "z.txt", b"x" * (search.READ_CHUNK + 10) + b"\nneedle\n")
    got = find(root, "python", pattern="needle", max_results=1)
    assert got["total_matches"] == 3
    assert got["note"].endswith("; 1 line longer than 256 KiB was searched in its first 256 KiB only (z.txt:1)")
    suffix = ": Permission denied (os error 13)"
    line = "./" + "a" * (search.STDERR_MAX - 3 - len(suffix)) + suffix  # with its newline: the 4 KiB kept
    _stalling_rg(tmp_path, monkeypatch, "a.txt\\0001:needle\\na.txt\\0002:needle\\n", "a.txt\\0002\\n",
                 stall_lines=True, stall_counts=False)
    rg = tmp_path / "bin" / "rg"
    rg.write_text(rg.read_text().replace("exit 0\nfi", f"echo '{line}' >&2\nexit 2\nfi", 1))
    got = search.search_workspace(str(root), {"pattern": "needle", "max_results": 1}, backend="rg")
    assert got["total_matches"] == 2 and got["note"].endswith(
        f"; at least 1 file could not be read and was not searched ({line[2:]})")


def test_git_names_what_it_cannot_read_from_the_top_of_the_work_tree(tmp_path, monkeypatch):
    """The working directory may lie beneath the repository's top: git's messages name
    paths from that top, the result from the working directory."""
    repo = tmp_path / "proj"
    write(repo, "app/src/a.txt", "needle\n")
    write(repo, "app/src/no.txt", "needle\n")
    git(repo, "init", "-q", ".")
    git(repo, "add", "-A")
    _unreadable_here(tmp_path, monkeypatch, "git", {"app/src/no.txt"})
    for path in (".", "src"):
        got = find(repo / "app", "git", pattern="needle", path=path)
        assert got["files"] == {"src/a.txt": 1}
        assert got["note"] == "1 file could not be read and was not searched (src/no.txt: Permission denied)"


@pytest.mark.parametrize("size, said", [(4095, "1 file could not be read"), (4096, "at least 1 file could not be read")])
def test_unreadable_files_are_at_least_those_named_when_the_error_output_was_full(tree, tmp_path, monkeypatch,
                                                                                 size, said):
    suffix = ": Permission denied (os error 13)"
    line = "./" + "a" * (size - len(suffix) - 3) + suffix
    _fake_rg(tmp_path, monkeypatch, f"printf 'a.py\\0002:needle = 1\\n'\necho '{line}' >&2\nexit 2\n")
    got = search.search_workspace(str(tree), {"pattern": "needle"}, backend="rg")
    assert len(line) + 1 == size and got["note"].startswith(said + " and ")


def test_unreadable_files_are_said_when_the_lines_pass_was_stopped_and_the_count_said_it(tree, tmp_path, monkeypatch):
    """With more hits than max_results, the lines pass is stopped before rg's exit status:
    the counting pass, which runs to its end, is the one that reports the unreadable file."""
    error = "echo './secret.txt: Permission denied (os error 13)' >&2\nexit 2\n"
    _fake_rg(tmp_path, monkeypatch, 'for a in "$@"; do [ "$a" = --count ] && counting=1; done\n'
                                    f"if [ -n \"$counting\" ]; then\nprintf 'a.py\\0003\\n'\n{error}fi\n"
                                    "printf 'a.py\\0001:needle\\na.py\\0002:needle\\na.py\\0003:needle\\n'\n" + error)
    got = search.search_workspace(str(tree), {"pattern": "needle", "max_results": 1}, backend="rg")
    assert got["total_matches"] == 3 and got["note"].endswith(
        "; 1 file could not be read and was not searched (secret.txt: Permission denied (os error 13))")


def test_a_hit_in_what_is_no_longer_a_regular_file_is_left_out(tree, tmp_path, monkeypatch):
    """rg named a file that, when its hits are checked beneath the root, is a directory (or
    a FIFO) swapped in since: not shown, counted as changed during the search."""
    os.mkfifo(tree / "pipe")
    _fake_rg(tmp_path, monkeypatch, "printf 'a.py\\0002:needle = 1\\nsrc\\0001:needle\\npipe\\0001:needle\\n'\n")
    got = search.search_workspace(str(tree), {"pattern": "needle"}, backend="rg")
    assert got["matches"] == "a.py:2: needle = 1" and got["skipped_outside"] == 2
