"""Files that make a program run code later: a write or edit of one always asks.

Accept-edits mode and allow rules let the model change files without a question, on the
understanding that nothing runs until the person runs something. Some files break that
understanding: they run code when the person next enters the directory (direnv), opens the
editor (VS Code tasks, Vim's exrc), starts a shell, commits (git hooks, pre-commit), installs
packages (npm's scripts), or pushes (CI, with the repository's secrets). A write to one of
these paths always asks, in every mode and whatever allow rule (or session rule from the
``a`` key) matches; only a deny rule is stricter. The question shows the entry's reason.

`TABLE` is the one list: `rules.py` builds its built-in protection rules from it and the man
page lists it, so neither can drift. Each pattern is a path pattern of the rule language
(gitignore-like, see rules.py) matched at any depth below the working directory and folded
like a deny rule (case, Unicode form, invisible characters); the first entry that matches
gives the reason, so specific entries come before general ones.

Deliberately NOT on the list, because they run only when the person runs the project's own
code, which the model writes anyway (a question for each would train the user to press y):
``Makefile``, ``setup.py``, ``pyproject.toml``, ``conftest.py``, ``tox.ini``, ``build.rs``,
``Cargo.toml``. Nor files that hold values, not code: ``.env`` (read by the program you run;
direnv loads it only with its opt-in ``load_dotenv``), ``.editorconfig``, ``.gitignore``,
``.nvmrc``, ``.python-version``.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["Entry", "TABLE", "patterns", "man_list"]


class Entry(NamedTuple):
    """Paths (rule-language patterns, any depth) and the one-line reason a write there asks."""

    patterns: tuple[str, ...]
    reason: str


TABLE: tuple[Entry, ...] = (
    Entry((".dashfloat/**", ".config/dashfloat/**"),
          "DashFloat's own configuration: it sets hooks, endpoints and permission rules"),
    Entry((".git/hooks/**",), "git runs these hooks on commit, merge, checkout and push"),
    Entry((".git/config", ".gitconfig", ".config/git/**"),
          "git runs programs its config names (core.fsmonitor, core.pager, aliases, filters)"),
    Entry((".git/**",), "git's own files: its config, hooks and attributes make git run programs"),
    Entry((".gitattributes",), "selects the filter and diff programs git runs on checkout, add and diff"),
    Entry((".gitmodules",), "git clones and checks out the repositories it names"),
    Entry((".hg/hgrc",), "Mercurial runs the hooks it names"),
    Entry((".envrc", ".config/direnv/**"), "direnv runs it when you next cd here"),
    Entry((".vscode/**",), "VS Code runs the tasks and programs it names when you open the folder"),
    Entry((".devcontainer/**",), "VS Code runs its commands when it opens the folder in a container"),
    Entry((".idea/**",), "JetBrains IDEs run the tools and run configurations it names"),
    Entry((".exrc", ".vimrc", ".gvimrc", ".nvimrc", ".nvim.lua", ".vim/**", ".config/nvim/**"),
          "Vim and Neovim run it when they start here (with 'exrc' set, or in your home)"),
    Entry((".dir-locals.el", ".dir-locals-2.el", ".emacs", ".emacs.el", ".emacs.d/**",
           ".config/emacs/**"),
          "Emacs evaluates it when it opens a file here"),
    Entry((".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".bash_aliases", ".profile",
           ".zshrc", ".zshenv", ".zprofile", ".zlogin", ".zlogout", ".kshrc", ".mkshrc", ".cshrc",
           ".tcshrc", ".login", ".logout", ".config/fish/**"),
          "a shell runs it when you start one (or log in or out)"),
    Entry((".inputrc",), "its readline key bindings can rewrite the command line you run"),
    Entry((".xprofile", ".xinitrc", ".xsession", ".xsessionrc", ".config/autostart/**"),
          "runs when you log in to a desktop session"),
    Entry((".config/systemd/user/**",), "systemd runs the services it defines for you"),
    Entry((".ssh/**",), "ssh runs the commands its config names, and authorized_keys decides "
                        "who can log in"),
    Entry((".github/workflows/**", ".github/actions/**", ".gitlab-ci.yml", ".circleci/**",
           ".travis.yml", ".drone.yml", ".woodpecker.yml", ".woodpecker/**", ".buildkite/**",
           "azure-pipelines.yml", "bitbucket-pipelines.yml", "Jenkinsfile",
           ".forgejo/workflows/**", ".gitea/workflows/**"),
          "runs in CI with the repository's secrets"),
    Entry((".pre-commit-config.yaml", ".husky/**", "lefthook.yml", ".lefthook.yml",
           "lefthook-local.yml"),
          "its hooks run when you git commit"),
    Entry(("package.json",), "npm runs its scripts when you install packages (preinstall, "
                             "postinstall, prepare)"),
    Entry((".npmrc", ".yarnrc", ".yarnrc.yml", ".pnpmfile.cjs", "bunfig.toml"),
          "npm, yarn, pnpm or bun run the programs it sets when you install packages"),
    Entry(("mise.toml", ".mise.toml", "mise.local.toml", ".mise.local.toml", ".mise/**",
           ".config/mise/**"),
          "mise runs its hooks and tasks when you cd here"),
    Entry((".tool-versions",), "mise and asdf install and run the tool versions it names"),
)


def patterns() -> list[tuple[str, str]]:
    """(pattern, reason) for every pattern of `TABLE`, in table order."""
    return [(pattern, entry.reason) for entry in TABLE for pattern in entry.patterns]


def _roff(text: str) -> str:
    return text.replace("\\", "\\e").replace("-", "\\-")


def man_list() -> str:
    """The table as a man page list (roff): the paths in bold, then the reason."""
    out = [".na"]  # long lists of names: ragged right, not stretched
    for entry in TABLE:
        out.append(".TP")
        out.append(", ".join(f"\\fB\\%{_roff(p)}\\fR" for p in entry.patterns))  # \\%: no hyphen
        out.append("\\&" + _roff(entry.reason) + ".")
    out.append(".ad")
    return "\n".join(out)
