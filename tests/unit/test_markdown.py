"""Tests for dashfloat.ui.markdown: the pure Markdown -> terminal-lines renderer."""

from __future__ import annotations

import itertools
import random
import statistics
import subprocess
import sys
import time
import timeit
from pathlib import Path

import pytest

from dashfloat.ui import markdown as md
from dashfloat.ui.markdown import ATTRS, completed_prefix, plain_lines, render

REPO = Path(__file__).resolve().parents[2]
HR = "─" * 40


def texts(lines):
    """The lines as plain strings (attrs dropped)."""
    return ["".join(text for _attr, text in line) for line in lines]


def join(head, tail):
    """How the UI stacks a rendered completed prefix and the rendered rest."""
    return head + ([[]] if head and tail else []) + tail


# --------------------------------------------------------------------------- render: table


RENDER_CASES = [
    ("empty", "", []),
    ("whitespace_only", " \n\n\t\n", []),
    ("h1", "# Title", [[("md_h1", "Title")]]),
    ("h2_h3_h6", "## Two\n### Three\n###### Six", [
        [("md_h2", "Two")], [], [("md_heading", "Three")], [], [("md_heading", "Six")],
    ]),
    ("heading_inline_flattened", "# A *b* `c` [d](http://e)", [
        [("md_h1", "A b c d (http://e)")],
    ]),
    ("heading_closing_hashes", "## Two ##", [[("md_h2", "Two")]]),
    ("setext_headings", "Big\n===\n\nSmall\n-----", [
        [("md_h1", "Big")], [], [("md_h2", "Small")],
    ]),
    ("heading_then_paragraph", "# H\ntext", [[("md_h1", "H")], [], [("", "text")]]),
    # a soft break is a space (CommonMark; rich, glow and mdcat show it so): the pane wraps
    # the paragraph again at its width; a hard break still ends the line
    ("paragraph_softbreaks_are_spaces", "one\ntwo\nthree", [[("", "one two three")]]),
    ("softbreak_inside_emphasis", "a *b\nc* d", [[("", "a "), ("md_em", "b c"), ("", " d")]]),
    ("softbreak_inside_link", "[x\ny](u) z", [[("md_link", "x y"), ("md_url", " (u)"), ("", " z")]]),
    ("softbreak_beside_code", "x\n`c`\ny", [[("", "x "), ("md_code", "c"), ("", " y")]]),
    ("softbreak_in_item", "- a\n  b\n- c", [[("md_bullet", "• "), ("", "a b")], [("md_bullet", "• "), ("", "c")]]),
    ("softbreak_then_hard_break", "a\nb  \nc", [[("", "a b")], [("", "c")]]),
    ("hard_break_spaces", "one  \ntwo", [[("", "one")], [("", "two")]]),
    ("hard_break_backslash", "one\\\ntwo", [[("", "one")], [("", "two")]]),
    ("blocks_one_blank_between", "a\n\n\n\n\nb\n\n\n", [[("", "a")], [], [("", "b")]]),
    ("emphasis", "x *em* **strong** ~~gone~~ `co*de*` y", [[
        ("", "x "), ("md_em", "em"), ("", " "), ("md_strong", "strong"), ("", " "),
        ("md_strike", "gone"), ("", " "), ("md_code", "co*de*"), ("", " y"),
    ]]),
    ("nested_emphasis_innermost_wins", "**a *b* c**", [[
        ("md_strong", "a "), ("md_em", "b"), ("md_strong", " c"),
    ]]),
    ("inline_code_double_backticks", "``a ` b``", [[("md_code", "a ` b")]]),
    ("escapes_and_entities", "\\*not em\\* &amp; &lt;", [[("", "*not em* & <")]]),
    ("link", "see [the docs](https://x.org/a) now", [[
        ("", "see "), ("md_link", "the docs"), ("md_url", " (https://x.org/a)"), ("", " now"),
    ]]),
    ("link_text_equals_url", "[https://x.org](https://x.org)", [[("md_link", "https://x.org")]]),
    ("link_with_inline_markup", "[**b** `c`](u)", [[("md_link", "b c"), ("md_url", " (u)")]]),
    ("autolink", "<https://x.org/p>", [[("md_link", "https://x.org/p")]]),
    ("email_autolink", "<me@x.org>", [[("md_link", "me@x.org")]]),
    ("image", "![a *cat*](cat.png)", [[("md_link", "[image: a cat]"), ("md_url", " (cat.png)")]]),
    ("image_no_alt", "![](cat.png)", [[("md_link", "[image]"), ("md_url", " (cat.png)")]]),
    ("bullets", "- a\n- b", [
        [("md_bullet", "• "), ("", "a")], [("md_bullet", "• "), ("", "b")],
    ]),
    ("bullets_star_and_plus", "* a\n\n+ b", [
        [("md_bullet", "• "), ("", "a")], [], [("md_bullet", "• "), ("", "b")],
    ]),
    ("ordered_real_start", "3. c\n4. d", [
        [("md_bullet", "3. "), ("", "c")], [("md_bullet", "4. "), ("", "d")],
    ]),
    ("ordered_paren_delimiter", "1) a", [[("md_bullet", "1) "), ("", "a")]]),
    ("ordered_numbers_right_aligned", "9. i\n10. j", [
        [("md_bullet", " 9. "), ("", "i")], [("md_bullet", "10. "), ("", "j")],
    ]),
    ("nested_lists_two_spaces_per_level", "- a\n  - b\n    - c\n- d", [
        [("md_bullet", "• "), ("", "a")],
        [("", "  "), ("md_bullet", "• "), ("", "b")],
        [("", "    "), ("md_bullet", "• "), ("", "c")],
        [("md_bullet", "• "), ("", "d")],
    ]),
    ("nested_bullets_in_ordered", "1. a\n   - b", [
        [("md_bullet", "1. "), ("", "a")], [("", "  "), ("md_bullet", "• "), ("", "b")],
    ]),
    ("item_continuation_hangs", "- one  \n  two", [
        [("md_bullet", "• "), ("", "one")], [("", "  two")],
    ]),
    ("loose_list", "- a\n\n- b\n\n  b2", [
        [("md_bullet", "• "), ("", "a")], [],
        [("md_bullet", "• "), ("", "b")], [], [("", "  b2")],
    ]),
    ("task_list_left_as_text", "- [ ] todo\n- [x] done", [
        [("md_bullet", "• "), ("", "[ ] todo")], [("md_bullet", "• "), ("", "[x] done")],
    ]),
    ("empty_item", "-\n- b", [[("md_bullet", "• ")], [("md_bullet", "• "), ("", "b")]]),
    ("code_in_item", "- run:\n  ```sh\n  ls\n  ```", [
        [("md_bullet", "• "), ("", "run:")],
        [("", "  "), ("md_code_lang", "sh")],
        [("", "    "), ("code_plain", "ls")],
    ]),
    ("quote", "> a *b*\n> c", [[("md_quote", "│ "), ("", "a "), ("md_em", "b"), ("", " c")]]),
    ("quote_hard_break", "> a *b*\\\n> c", [
        [("md_quote", "│ "), ("", "a "), ("md_em", "b")], [("md_quote", "│ "), ("", "c")],
    ]),
    ("quote_two_paragraphs", "> a\n>\n> b", [
        [("md_quote", "│ "), ("", "a")], [("md_quote", "│")], [("md_quote", "│ "), ("", "b")],
    ]),
    ("nested_quote", "> a\n> > b", [
        [("md_quote", "│ "), ("", "a")], [("md_quote", "│")], [("md_quote", "│ │ "), ("", "b")],
    ]),
    ("quote_with_list", "> - x", [[("md_quote", "│ "), ("md_bullet", "• "), ("", "x")]]),
    ("empty_quote", ">", [[("md_quote", "│")]]),
    ("hr", "a\n\n---\n\n***\nb", [
        [("", "a")], [], [("md_hr", HR)], [], [("md_hr", HR)], [], [("", "b")],
    ]),
    ("fence_unknown_language", "```nosuchlang\nx = 1\n```", [
        [("md_code_lang", "nosuchlang")], [("", "  "), ("md_code_block", "x = 1")],
    ]),
    ("fence_no_language", "~~~\na\n\n  b\n~~~", [
        [("", "  "), ("md_code_block", "a")],
        [("", "  ")],
        [("", "  "), ("md_code_block", "  b")],
    ]),
    ("fence_info_string_first_word", "```text title=x.txt\nhi\n```", [
        [("md_code_lang", "text")], [("", "  "), ("code_plain", "hi")],
    ]),
    ("fence_empty", "```\n```\n\nafter", [[("", "after")]]),
    ("fence_unclosed_runs_to_end", "```\na\n\nb", [
        [("", "  "), ("md_code_block", "a")], [("", "  ")], [("", "  "), ("md_code_block", "b")],
    ]),
    ("indented_code", "para\n\n    code\n      more", [
        [("", "para")], [],
        [("", "  "), ("md_code_block", "code")], [("", "  "), ("md_code_block", "  more")],
    ]),
    ("python_highlight", "```python\ndef f(x):  # c\n    return len('s') + 1\n```", [
        [("md_code_lang", "python")],
        [("", "  "), ("code_keyword", "def"), ("code_plain", " "), ("code_name_func", "f"),
         ("code_plain", "(x):  "), ("code_comment", "# c")],
        [("", "  "), ("code_plain", "    "), ("code_keyword", "return"), ("code_plain", " "),
         ("code_builtin", "len"), ("code_plain", "("), ("code_string", "'s'"),
         ("code_plain", ") "), ("code_operator", "+"), ("code_plain", " "),
         ("code_number", "1")],
    ]),
    ("language_alias_case_insensitive", "```PY\nclass A: pass\n```", [
        [("md_code_lang", "PY")],
        [("", "  "), ("code_keyword", "class"), ("code_plain", " "), ("code_name_func", "A"),
         ("code_plain", ": "), ("code_keyword", "pass")],
    ]),
    ("table_alignment", "| a | bb | c |\n|:--|:--:|--:|\n| long | x | 1 |\n| y | | 22 |", [
        [("md_table_head", "a   "), ("md_table_border", " │ "), ("md_table_head", "bb"),
         ("md_table_border", " │ "), ("md_table_head", " c")],
        [("md_table_border", "─────┼────┼───")],
        [("", "long"), ("md_table_border", " │ "), ("", "x "), ("md_table_border", " │ "),
         ("", " 1")],
        [("", "y   "), ("md_table_border", " │ "), ("", "  "), ("md_table_border", " │ "),
         ("", "22")],
    ]),
    ("table_center_padding", "| h |\n|:-:|\n| abcde |", [
        [("md_table_head", "  h")], [("md_table_border", "─────")], [("", "abcde")],
    ]),
    ("table_inline_cells", "| k | v |\n|---|---|\n| `a` | *b* |", [
        [("md_table_head", "k"), ("md_table_border", " │ "), ("md_table_head", "v")],
        [("md_table_border", "──┼──")],
        [("md_code", "a"), ("md_table_border", " │ "), ("md_em", "b")],
    ]),
    ("table_wide_chars_padded_by_cells", "| 日本 | x |\n|--|--|\n| 語 | yy |", [
        [("md_table_head", "日本"), ("md_table_border", " │ "), ("md_table_head", "x")],
        [("md_table_border", "─────┼───")],
        [("", "語  "), ("md_table_border", " │ "), ("", "yy")],
    ]),
    ("html_block_plain", "<div>\n<b>x</b>\n</div>", [
        [("", "<div>")], [("", "<b>x</b>")], [("", "</div>")],
    ]),
    ("inline_html_plain", "a <b>x</b> c", [[("", "a <b>x</b> c")]]),
    ("html_comment_block", "<!-- note -->\n\ntext", [[("", "<!-- note -->")], [], [("", "text")]]),
]


@pytest.mark.parametrize(
    ("source", "expected"), [c[1:] for c in RENDER_CASES], ids=[c[0] for c in RENDER_CASES]
)
def test_render(source, expected):
    assert render(source) == expected


ASCII_CASES = [
    ("bullets", "- a\n  - b", ["* a", "  * b"]),
    ("quote", "> a\n>\n> > b", ["| a", "|", "| | b"]),
    ("hr", "---", ["-" * 40]),
    ("table", "| a | b |\n|---|--:|\n| 1 | 2 |", ["a | b", "--+--", "1 | 2"]),
]


@pytest.mark.parametrize(
    ("source", "expected"), [c[1:] for c in ASCII_CASES], ids=[c[0] for c in ASCII_CASES]
)
def test_render_ascii(source, expected):
    lines = render(source, ascii=True)
    assert texts(lines) == expected
    assert all(text.isascii() for line in lines for _a, text in line)


# --------------------------------------------------------------------------- realistic documents

PY_CODE = '''\
import json
from pathlib import Path


class Config:
    """Settings loaded from disk."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.data: dict[str, object] = {}

    def load(self) -> dict[str, object]:
        # Missing files are not an error: start empty.
        if not self.path.exists():
            return {}
        with self.path.open(encoding="utf-8") as fh:
            self.data = json.load(fh)
        return self.data


def main(argv: list[str]) -> int:
    cfg = Config(Path(argv[1]) if len(argv) > 1 else Path("config.json"))
    values = cfg.load()
    for key, value in sorted(values.items()):
        print(f"{key} = {value!r}")
    return 0 if values else 1


def validate(data: dict[str, object]) -> list[str]:
    """Return one message per problem; an empty list means the data is valid."""
    problems = []
    retries = data.get("retries", 3)
    if not isinstance(retries, int) or retries < 0:
        problems.append(f"retries: expected a non-negative int, got {retries!r}")
    timeout = data.get("timeout", 12.5)
    if not isinstance(timeout, (int, float)) or timeout <= 0:
        problems.append(f"timeout: expected a positive number, got {timeout!r}")
    for index, server in enumerate(data.get("servers", [])):
        if "host" not in server:
            problems.append(f"servers[{index}]: missing 'host'")
    return problems
'''

BASH_CODE = '''\
#!/usr/bin/env bash
set -euo pipefail
for f in src/*.py; do
  if grep -q "TODO" "$f"; then
    echo "todo in $f" >&2
  fi
done
python -m pytest -q --maxfail=1 && echo "ok: $((1 + 2)) suites"
'''

JSON_CODE = '''\
{
  "name": "dashfloat",
  "version": "0.1.0",
  "retries": 3,
  "timeout": 12.5,
  "verbose": false,
  "servers": [
    {"host": "localhost", "port": 8080},
    {"host": "example.org", "port": 443, "tls": true}
  ],
  "comment": null
}
'''


def realistic_document(sections: int = 6) -> str:
    """An assistant answer of ~2,000 tokens (~8 KB): headings, lists, a quote, tables,
    and 3 fenced code blocks (python, bash, json) in the first section."""
    parts = [
        "# Refactoring the configuration loader\n\n",
        (
            "Here is what I found after reading `config.py` and the **tests**. The loader\n"
            "mixes *parsing* and *validation*, which makes errors hard to follow; see\n"
            "[the docs](https://docs.python.org/3/library/json.html) for `json.load`.\n\n"
        ),
    ]
    for s in range(sections):
        parts += [
            f"## Step {s + 1}: tidy module {s}\n\n",
            "The plan, in order:\n\n",
            (
                "1. Split `load()` into `read()` and `validate()`.\n"
                "2. Keep the public API stable:\n"
                "   - `Config.load()` still returns a `dict`\n"
                "   - errors raise `ConfigError` with the **file name**\n"
                "3. Add tests for the ~~old~~ new behaviour.\n\n"
            ),
            "Things to check before merging:\n\n",
            "- [x] existing tests pass\n- [ ] docs updated\n- [ ] changelog entry\n\n",
            (
                "> **Note:** the loader is also used by the `doctor` command, so keep\n"
                "> the error messages short.\n\n"
            ),
        ]
        if s == 0:
            parts += [
                "### The new code\n\n",
                "```python\n" + PY_CODE + "```\n",
                "Run the checks with:\n\n",
                "```bash\n" + BASH_CODE + "```\n\n",
                "A config file looks like this:\n\n",
                "```json\n" + JSON_CODE + "```\n\n",
            ]
        else:
            parts += [
                f"### Why step {s + 1} matters\n\n",
                (
                    "Keeping reading and validation apart means each error names exactly one\n"
                    "problem. A missing file is reported by `read()`, a wrong type by\n"
                    "`validate()`, and the caller decides whether either is fatal. This also\n"
                    "makes the tests shorter: each one feeds a small dict to `validate()`\n"
                    "instead of writing files to a temporary directory.\n\n"
                ),
            ]
        parts += [
            (
                "| Option | Type | Default |\n|:--|:--:|--:|\n"
                "| `retries` | int | 3 |\n| `timeout` | float | 12.5 |\n| `verbose` | bool | false |\n\n"
            ),
            "---\n\n",
        ]
    parts.append(
        "That's all: the change is small and *backwards compatible*. Ask me if you want\n"
        "the same treatment for `cli.py`.\n"
    )
    return "".join(parts)


DOC = realistic_document()

STREAM_DOCS = {
    "realistic": DOC,
    "loose_lists": (
        "Intro paragraph.\n\n- first\n\n- second item\n\n  with a second paragraph\n\n"
        "- third\n\n1. one\n\n   ```sh\n   make test\n\n   make lint\n   ```\n\n2. two\n\n"
        "Final words.\n"
    ),
    "indented_and_html": (
        "Text\n\n    indented code\n\n    more code\n\nafter\n\n<!--\nhidden\n\nstill hidden\n-->\n\n"
        "<pre>\na\n\nb\n</pre>\n\nend\n"
    ),
    "fences": (
        "```\nplain\n```\nText right after a fence.\n\n~~~~\n```\n\n~~~\nstill code\n~~~~\n"
        "> ```\n> quoted\n>\n> code\n> ```\n\n"
        "1. Step\n   ```bash\n   run\n\n   again\n   ```\n2. Next\n\n# Done\n"
    ),
    "quotes_tables_lists": (
        "> a\n\n> b\n> - c\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n- x\n  - y\n\n    deep para\n"
        "  - z\n- w\n\n**bold** paragraph after a list\n\n2024 was a year.\n\n- last\n"
    ),
    "list_enders": (
        "- item\n  ```\n  in item\n\n  more\n  ```\n</a>\n1. Install:\n  ```bash\n"
        "  pip install x\n\n  echo\n  ```\n2. Next\n\nEnd\n\n```\nclose\n```\n\n"
        "+ plus\nlazy\n---\n\n  ```\n  two-space fence\n```\n\n"
        "- a\n\n    para in item\n<div>\nx\n</div>\n\nEnd\n"
    ),
}

# Snippets glued at random by the property test below (each is realistic on its own).
SNIPPETS = [
    *(doc for name, doc in STREAM_DOCS.items() if name != "realistic"),
    "# Heading\n", "Para line one\nline two\n", "- x\n- y\n", "1. a\n2. b\n",
    "   - indented item\n", "```py\nx = 1\n\ny = 2\n```\n", "~~~\nz\n~~~\n", "    code\n",
    "> q\n", "> q\n>\n> r\n", "| a |\n|---|\n| 1 |\n", "***\n", "<div>\nx\n</div>\n",
    "<!-- c -->\n", "<span>\n", "<!--\n", "-->\n", "  ```\n  two-space fence\n```\n",
    "- item\n  ```\n  in item\n\n  more\n  ```\n", "text with `code` and *em*\n", "\n",
    "  continuation\n", "10. ten\n", "- a\n\n    code in item\n", "```\nunclosed\n",
    "> ```\n> q\n", "+ plus\n", "Setext\n---\n", "1. Step\n   ```sh\n   run\n   ```\n",
    "* a\n  * b\n    ```\n    x\n    ```\n", "- ```\n  y\n\n  z\n  ```\n", "\t- tab item\n",
]


def test_completed_prefix_property_on_random_documents():
    rnd = random.Random(2024)
    for _ in range(40):
        doc = "".join(
            rnd.choice(SNIPPETS) + rnd.choice(["", "\n", "\n"]) for _ in range(rnd.randint(2, 6))
        )
        full = render(doc)
        prev = 0
        checked = set()
        for k in range(len(doc) + 1):
            p = completed_prefix(doc[:k])
            assert p >= prev, (doc, k)
            prev = p
            if p not in checked:
                checked.add(p)
                assert join(render(doc[:p]), render(doc[p:])) == full, (doc, p)


def _ends_on_block_boundary(prefix: str) -> bool:
    if not prefix:
        return True
    if not prefix.endswith("\n"):
        return False
    last = prefix[:-1].rsplit("\n", 1)[-1].strip()
    return last == "" or set(last) <= {"`"} or set(last) <= {"~"}


@pytest.mark.parametrize("name", sorted(STREAM_DOCS))
def test_completed_prefix_while_streaming(name):
    doc = STREAM_DOCS[name]
    full = render(doc)
    rnd = random.Random(name)
    pos = prev = 0
    seen = set()
    step = 0
    while pos < len(doc):
        pos = min(len(doc), pos + rnd.randint(1, 8))  # a token or two at a time
        p = completed_prefix(doc[:pos], start=prev)  # as the UI calls it
        step += 1
        if step % 8 == 0 or pos == len(doc):
            assert completed_prefix(doc[:pos]) == p  # a full scan agrees
        assert prev <= p <= pos, (prev, p, pos)
        assert _ends_on_block_boundary(doc[:p]), repr(doc[:p][-40:])
        prev = p
        seen.add(p)
    assert len(seen) >= 3  # the prefix actually advanced while streaming
    for p in sorted(seen):
        assert join(render(doc[:p]), render(doc[p:])) == full, p


def test_completed_prefix_every_cut_of_tricky_documents():
    for name, doc in STREAM_DOCS.items():
        if name == "realistic":
            continue
        full = render(doc)
        prev = 0
        for k in range(len(doc) + 1):
            p = completed_prefix(doc[:k])
            assert p >= prev, (name, k)
            prev = p
            assert join(render(doc[:p]), render(doc[p:])) == full, (name, k, p)


def test_completed_prefix_with_an_end_reads_only_that_far():
    """`end` (a line boundary) bounds one call's work: the result is that of the text cut
    there, and so a boundary of the whole text, resumable from (as the UI's window uses it)."""
    for name, doc in STREAM_DOCS.items():
        ends = [0, *(i + 1 for i, ch in enumerate(doc) if ch == "\n")]
        for e in ends:
            assert completed_prefix(doc, end=e) == completed_prefix(doc[:e]), (name, e)
            assert completed_prefix(doc, end=e, first=True) == completed_prefix(doc[:e], first=True)
        # a window at a time, each resumed from the last, ends where one full scan does
        p, e = 0, 0
        while e < len(doc):
            e = doc.find("\n", e + 50) + 1 or len(doc)
            p = completed_prefix(doc, start=p, end=e)
        assert p == completed_prefix(doc), name


def test_realistic_document_size_and_progress():
    assert 7_000 <= len(DOC) <= 10_000  # ~2,000 tokens
    assert sum(1 for line in DOC.splitlines() if line.startswith("```") and len(line) > 3) == 3
    # Once the answer is complete, nearly all of it is in completed blocks.
    assert completed_prefix(DOC) >= len(DOC) - 200


# --------------------------------------------------------------------------- completed_prefix: table

PREFIX_CASES = [
    ("empty", "", 0),
    ("partial_paragraph", "Hello wor", 0),
    ("paragraph_without_blank", "Hello\n", 0),
    ("paragraph_then_blank", "Hello\n\n", 7),
    ("blank_with_spaces", "Hello\n  \t\nNext", 10),
    ("incomplete_blank_line", "Hello\n  ", 0),
    ("two_blocks", "a\n\nb\n\nc", 6),
    ("open_fence_keeps_rest", "a\n\n```py\nx\n\ny\n\n", 3),
    ("closing_fence_needs_newline", "```py\nx\n```", 0),
    ("closed_fence", "```py\nx\n```\n", 12),
    ("closed_fence_then_text", "```\nx\n```\nmore\n", 10),
    ("longer_closing_fence", "```\nx\n`````\n", 12),
    ("shorter_fence_inside", "````\n```\n\n````\n", 15),
    ("tilde_fence_ignores_backticks", "~~~\n```\n\n", 0),
    ("backtick_info_with_backtick_is_not_fence", "```a`b\n\nx", 8),
    ("indented_4_is_not_fence", "para\n\n    ```\n\nText", 15),
    ("fence_in_list_item_not_top_level", "- a\n  ```\n  x\n  ```\n", 0),
    ("list_waits_for_next_block", "- a\n- b\n\n", 0),
    ("list_then_item", "- a\n\n- b\n\n", 0),
    ("list_then_incomplete_line", "- a\n\nTex", 0),
    ("list_then_paragraph", "- a\n\nText\n", 5),
    ("list_then_indented", "- a\n\n  more\n\n", 0),
    ("indented_code_waits", "    code\n\n", 0),
    ("indented_code_then_text", "    code\n\n    more\n\nText", 20),
    ("html_comment_with_blank", "<!--\n\nx\n-->\n\n", 13),
    ("html_comment_open", "<!--\n\nx\n\n", 0),
    ("html_pre_with_blank", "<pre>\n\n</pre>\n\n", 15),
    ("quote_blank_ends_quote", "> a\n\nb", 5),
    ("quoted_fence_ends_with_quote", "> ```\n> a\n\nText", 11),
    ("crlf", "a\r\n\r\nb", 5),
]


@pytest.mark.parametrize(
    ("text", "expected"), [c[1:] for c in PREFIX_CASES], ids=[c[0] for c in PREFIX_CASES]
)
def test_completed_prefix(text, expected):
    assert completed_prefix(text) == expected


def test_completed_prefix_is_linear():
    big = DOC * 20  # ~150 KB
    elapsed = min(timeit.repeat(lambda: completed_prefix(big), number=1, repeat=3, timer=time.thread_time))
    assert elapsed < 0.25


def test_completed_prefix_resumes_from_previous_value():
    big = DOC * 20
    p = completed_prefix(big[: len(big) - 100])
    assert p > len(big) // 2
    assert completed_prefix(big, start=p) == completed_prefix(big)
    # resuming only scans the tail: much cheaper than a full scan
    full = min(timeit.repeat(lambda: completed_prefix(big), number=1, repeat=3, timer=time.thread_time))
    tail = min(timeit.repeat(lambda: completed_prefix(big, start=p), number=1, repeat=3, timer=time.thread_time))
    assert tail < full / 10
    assert 0 <= completed_prefix("abc", start=99) <= 3  # out-of-range starts are clamped
    assert completed_prefix("a\n\nb", start=-5) == 3


# --------------------------------------------------------------------------- safety

ESC = "\x1b"
HOSTILE = {
    "text": f"before {ESC}[2J{ESC}]0;title\x07 after \u202eevil\u200b",
    "heading": f"# head {ESC}[31m",
    "emphasis": f"*em {ESC}[1m* **st {ESC}c**",
    "inline_code": f"`{ESC}[31m`",
    "highlighted_code": f"```python\nx = '{ESC}[31m'  # {ESC}[0m\n```",
    "plain_code": f"```\n{ESC}[31m red\n```",
    "unknown_language_code": f"```zzz{ESC}[1m\n{ESC}[31m\n```",
    "indented_code": f"    {ESC}[31m",
    "link_url": f"[t](http://x/{ESC}[31m)",
    "link_text": f"[{ESC}[31m](http://x/)",
    "autolink": f"<http://x/{ESC}[31m>",
    "image": f"![{ESC}[31m](i{ESC}.png)",
    "table_cell": f"| a{ESC}[31m | b |\n|---|---|\n| c{ESC}]8;;x{ESC}\\ | d |",
    "quote": f"> {ESC}[31m",
    "list": f"- {ESC}[31m",
    "html_block": f"<div>{ESC}[31m\n</div>",
    "inline_html": f"a <b x='{ESC}[31m'>",
    "c1_controls": "a\x9b31m b\x90",
}


@pytest.mark.parametrize("source", list(HOSTILE.values()), ids=list(HOSTILE))
def test_control_characters_come_out_escaped(source):
    for lines in (render(source), render(source, ascii=True), plain_lines(source)):
        joined = "\n".join(texts(lines))
        assert ESC not in joined and "\x07" not in joined and "\x9b" not in joined
        assert "\u202e" not in joined and "\u200b" not in joined
        assert "\\e" in joined or "\\x9b" in joined


def test_escape_in_table_cell_keeps_columns_aligned():
    lines = render(f"| a{ESC} | b |\n|---|---|\n| cc | d |")
    assert texts(lines) == ["a\\e │ b", "────┼──", "cc  │ d"]


# --------------------------------------------------------------------------- invariants

KITCHEN_SINK = (
    DOC
    + "\n\n~~old~~ ![img](i.png) <http://a.b>\n\n```nosuchlang\nplain\n```\n\n"
    "```python\n@decorator\ndef f(): return print(-1)\n```\n"
)


def _corpus():
    yield KITCHEN_SINK
    yield from STREAM_DOCS.values()
    for _name, source, _expected in RENDER_CASES:
        yield source
    yield from HOSTILE.values()


def test_render_emits_only_known_attrs_and_all_of_them():
    emitted = set()
    for source in _corpus():
        for ascii_only in (False, True):
            for line in render(source, ascii=ascii_only):
                emitted.update(attr for attr, _text in line)
    assert emitted - {""} <= ATTRS
    assert emitted - {""} == ATTRS  # no dead names for the theme to define


def test_segments_are_merged_and_non_empty():
    for source in _corpus():
        lines = render(source)
        assert not lines or lines[-1], "trailing empty line"
        for line in lines:
            for (a1, _t1), (a2, _t2) in itertools.pairwise(line):
                assert a1 != a2, line
            assert all(text for _attr, text in line), line
            assert all(isinstance(s, tuple) and len(s) == 2 for s in line)
        for prev, cur in itertools.pairwise(lines):
            assert prev or cur, "two empty lines in a row"


def test_attrs_is_a_frozenset_of_names():
    assert isinstance(ATTRS, frozenset)
    assert "" not in ATTRS
    assert all(name.startswith(("md_", "code_")) for name in ATTRS)


# --------------------------------------------------------------------------- robustness

NASTY = [
    ">" * 300 + " deep",
    "- " * 300 + "deep",
    "[" * 5000,
    "*" * 5000 + "a" + "_" * 5000,
    "`" * 1000,
    "| a |\n|---|\n" + "| x |\n" * 500,
    "\x00\x01\x02\ufffe\ud800",
    "```" + "\n" * 3,
    "# " + "x" * 10000,
    "1. " * 100,
    "<" * 1000 + ">" * 1000,
    "\r\n\r\r\n",
    "\t- a\n\t\t- b\n\t```\n\tx",
]


@pytest.mark.parametrize("source", NASTY, ids=range(len(NASTY)))
def test_render_never_raises(source):
    lines = render(source)
    assert isinstance(lines, list)
    assert isinstance(completed_prefix(source), int)


def test_render_fuzz_never_raises():
    rnd = random.Random(7)
    alphabet = "#*_`~-+>|[]()!<>\\ \n\n\t1.:xyz" + ESC
    for _ in range(300):
        source = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 80)))
        for line in render(source):
            for attr, text in line:
                assert attr == "" or attr in ATTRS
                assert ESC not in text
        assert 0 <= completed_prefix(source) <= len(source)


def test_deep_nesting_does_not_lose_text():
    assert "deep" in "".join(texts(render(">" * 60 + " deep")))
    assert "deep" in "".join(texts(render("- " * 60 + "deep")))


def test_parser_error_falls_back_to_plain_lines(monkeypatch):
    class Broken:
        def parse(self, text):
            raise RuntimeError("boom")

    monkeypatch.setattr(md, "_get_parser", lambda: Broken())
    assert render(f"# a\n\nb{ESC}\n\n") == [[("", "# a")], [], [("", "b\\e")]]


def test_broken_lexer_falls_back_to_plain_code(monkeypatch):
    class Broken:
        def get_tokens(self, text):
            raise RuntimeError("boom")

    monkeypatch.setattr(md, "_lexer_for", lambda lang: Broken())
    assert render("```python\nx\n```") == [
        [("md_code_lang", "python")], [("", "  "), ("md_code_block", "x")],
    ]


# --------------------------------------------------------------------------- plain_lines

PLAIN_CASES = [
    ("empty", "", []),
    ("only_newline", "\n", [[], []]),
    ("one", "abc", [[("", "abc")]]),
    ("blank_lines_kept", "a\n\nb\n", [[("", "a")], [], [("", "b")], []]),
    ("tabs_and_escapes", f"\tx{ESC}[0m\r", [[("", "    x\\e[0m\\r")]]),
    ("markdown_not_interpreted", "# *x*", [[("", "# *x*")]]),
]


@pytest.mark.parametrize(
    ("text", "expected"), [c[1:] for c in PLAIN_CASES], ids=[c[0] for c in PLAIN_CASES]
)
def test_plain_lines(text, expected):
    assert plain_lines(text) == expected


# --------------------------------------------------------------------------- cost


def test_render_speed():
    """~2,000 tokens with 3 highlighted code blocks: well under 50 ms (about 15-20 ms
    median on a quiet machine). The thread's CPU time, best of several runs, is asserted,
    so that a loaded CI machine does not make the test flaky (the wall clock measured
    58 ms at best with two test processes and two mutation runs on two CPUs)."""
    render(DOC)  # warm-up: parser, lexers
    runs = timeit.repeat(lambda: render(DOC), number=1, repeat=15, timer=time.thread_time)
    assert min(runs) < 0.05, statistics.median(runs)


def _imported_after(code: str) -> list[str]:
    probe = (
        "import sys\n" + code + "\n"
        "print(' '.join(m for m in ('urwid', 'markdown_it', 'pygments', 'pygments.lexers',"
        " 'wcwidth') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True
    )
    return out.stdout.split()


def test_import_is_cheap_and_urwid_free():
    assert _imported_after("import dashfloat.ui.markdown") == []


def test_heavy_modules_load_only_when_needed():
    loaded = _imported_after(
        "from dashfloat.ui.markdown import render\nrender('# a\\n\\n- b\\n\\n| x |\\n|---|\\n| y |')"
    )
    assert "markdown_it" in loaded
    assert "pygments.lexers" not in loaded and "wcwidth" not in loaded and "urwid" not in loaded
    loaded = _imported_after("from dashfloat.ui.markdown import render\nrender('```py\\nx\\n```')")
    assert "pygments.lexers" in loaded and "urwid" not in loaded


# --------------------------------------------------------------------------- stable_prefix

@pytest.mark.parametrize(
    "tail,expected",
    [
        ("Hello wor", "Hello"),  # the word being typed waits
        ("Hello world ", "Hello world"),
        ("Hello world\n", "Hello world\n"),
        ("Hello **bold te", "Hello"),  # an unclosed span waits from its opener
        ("Hello **bold** and `co", "Hello **bold** and"),
        ("x `a` b *it", "x `a` b"),
        ("a snake_case name and _emph", "a snake_case name and"),
        ("see [the docs](http://exa", "see"),
        ("see [the docs] here", "see [the docs]"),
        ("~~gone", ""),
        ("* bullet one two", "* bullet one"),  # a bullet star opens nothing
        ("- item one\n- ite", "- item one\n"),  # a bare marker may become a rule or underline
        ("Para\n-", "Para\n"),
        ("## Hea", ""),
        ("```python\nx = 1\ny = ", "```python\nx = 1\n"),  # code: a line at a time
        ("```python\nx = 1 and `y", "```python\n"),
        ("```python\nx = 1\n```\nMore te", "```python\nx = 1\n```\nMore"),
        ("> quoted wor", "> quoted"),
        ("https://example.com/" + "a" * 80, "https://example.com/" + "a" * 80),  # a long word grows
        ("", ""),
    ],
)
def test_stable_prefix(tail, expected):
    assert md.stable_prefix(tail) == expected


@pytest.mark.parametrize(
    "shown,expected",
    [
        ("text\n\n| a | b |\n|---|---|\n| 1 |", 6),
        ("no table here", -1),
        ("a | b in prose", -1),
        ("```\n| a | b |\n", -1),  # in code, a pipe is code
    ],
)
def test_streaming_table(shown, expected):
    assert md.streaming_table(shown) == expected


@pytest.mark.parametrize(
    "source",
    [
        "```python\nx = 1\n```\n",
        "\n```python\nx = 1\n\n\ny\n```\n\n",
        "~~~\na\n~~~~\n",
        "```\n```\n",
        "````\n```\nnot closed\n````\n",
        "```py title=x\ndef f(): pass\n```\n",
        "```\ncode\n   ```\n",
        "```\na\n```  \n",
        "```\n\ttab\n```\n",
        "```text\n" + "".join(f"line {i}\n" for i in range(100)) + "```\n",
        "```json\n{\n \"a\": [1, 2]\n}\n```\n",
        "```\n\x1b[31mred\n```\n",
    ],
)
def test_a_lone_code_block_renders_as_the_parser_would(source):
    """render's shortcut for a text that is one fenced block gives the parser's lines."""
    assert md._single_fence(source) is not None
    tokens = md._get_parser().parse(source)
    blocks, _ = md._blocks(tokens, 0, "", md._UNICODE)
    assert md.render(source) == md._strip_trailing_empty([md._merge(line) for line in md._join(blocks)])


@pytest.mark.parametrize(
    "source",
    ["```\na\n```\ntext after\n", "```c\\+\\+\nx\n```\n", "```\ncode\n    ```\n", "```\nopen\n", "text\n```\nx\n```\n"],
)
def test_the_code_block_shortcut_leaves_everything_else_to_the_parser(source):
    assert md._single_fence(source) is None


@pytest.mark.parametrize(
    "text,expected",
    [
        ("```python\nx = 1\n", ("```", "python")),
        ("~~~~\n", ("~~~~", "")),
        ("```python\nx = 1\n```\n", None),  # closed
        ("```python\nx = 1", None),  # a partial line
        ("text\n```\n", None),
        ("``` `x`\n", None),  # a backtick info string: not a fence
    ],
)
def test_open_fence(text, expected):
    assert md.open_fence(text) == expected


@pytest.mark.parametrize("line", ["x", "  indented", "a\tb", "\x1b[31mred\r", "漢字 and \u202e", "```", " "])
def test_a_line_made_visible_already_is_the_code_line_code_lines_makes(line):
    """visible_code_line: how a big code block's megabyte line, made visible a piece at a
    time, becomes its line without being made visible again."""
    from dashfloat.textsafe import visible

    assert md.visible_code_line(visible(line)) == md.code_lines(line + "\n", "")[0]


@pytest.mark.parametrize("text, expected", [("a\r\nb\n", "a\nb\n"), ("a\rb\r", "a\nb\n"), ("a\r\r\nb\n", "a\n\nb\n"),
                                            ("no cr\n", "no cr\n")])
def test_parsed_newlines_are_the_parsers(text, expected):
    """\\r\\n and a lone \\r are line breaks to the parser; a streaming code block's lines
    read them the same (tests/widget/test_huge_answers.py has a CRLF answer's frames)."""
    assert md.parsed_newlines(text) == expected
    assert md.render(f"```\n{text}```\n") == md.code_lines(expected, "")
