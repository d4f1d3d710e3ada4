"""Edge cases of dashfloat.ui.markdown's renderer (lines 1-699): caches, bounds, odd token
streams (a plugin's, or one cut short) and the streaming helpers' limits."""

from __future__ import annotations

import sys

import pytest
from markdown_it.token import Token

from dashfloat.ui import markdown as md
from dashfloat.ui.markdown import render

HR = "─" * 40
CODE = ("", "  ")  # the indent segment every code line starts with


def parse(source):
    return md._get_parser().parse(source)


class _Stream:
    """A parser stand-in that hands render a token stream of the test's making."""

    def __init__(self, tokens):
        self.tokens = tokens

    def parse(self, _text):
        return self.tokens


def render_tokens(monkeypatch, tokens):
    """render of `tokens` as if the parser had made them (the text itself is not a fence,
    so the code-block shortcut stays out of the way). A stream render chokes on falls
    back to the text as plain lines: [("", "x")]."""
    monkeypatch.setattr(md, "_get_parser", lambda: _Stream(tokens))
    return render("x")


def leaf(content, nesting=0, children=None, kind="math_block"):
    return Token(kind, "div", nesting, content=content, children=children)


def without(tokens, *indexes):
    return [t for k, t in enumerate(tokens) if k not in indexes]


@pytest.fixture
def fresh_caches(monkeypatch):
    monkeypatch.setattr(md, "_LEXERS", {})
    monkeypatch.setattr(md, "_TOKEN_ATTRS", {})


# --------------------------------------------------------------------------- small helpers


def test_pending_table_line():
    assert md.pending_table() == [[("md_table_border", "┄ table ┄")]]
    assert md.pending_table(True) == [[("md_table_border", "... table")]]
    assert md.pending_table(ascii=False) == md.pending_table()


def test_merge_returns_a_clean_line_itself():
    """Code lines are many and mostly clean: no copy is made of them."""
    clean = [("a", "x"), ("b", "y"), ("a", "z")]
    assert md._merge(clean) is clean


@pytest.mark.parametrize(
    "line,expected",
    [
        ([("a", "x"), ("a", "y")], [("a", "xy")]),
        ([("a", "x"), ("b", ""), ("a", "y")], [("a", "xy")]),
        ([("a", ""), ("b", "y")], [("b", "y")]),
    ],
)
def test_merge_drops_empty_segments_and_joins_equal_attrs(line, expected):
    out = md._merge(line)
    assert out == expected and out is not line


@pytest.mark.parametrize(
    "text,width",
    [
        ("abc", 3),
        ("日本", 4),
        ("e\u0301", 1),  # a combining accent takes no column
        ("\u0301", 0),  # ... even alone: 0 is a width, not an error
        ("\x85", 1),  # wcwidth cannot measure a C1 control (-1): count code points
        ("日\x85", 2),
    ],
)
def test_width(text, width):
    assert md._width(text) == width


def test_width_without_wcwidth_counts_code_points(monkeypatch):
    monkeypatch.setitem(sys.modules, "wcwidth", None)  # import fails
    assert md._width("日本") == 2


# --------------------------------------------------------------------------- lexers


@pytest.mark.usefixtures("fresh_caches")
@pytest.mark.parametrize(
    "lang,name",
    [
        ("python", "Python"),
        ("{python}", "Python"),  # info-string decoration: the first word is tried next
        ("py:main.py", "Python"),
        ("py:" + "x" * 70, "Python"),  # the whole string is too long to try; its word is not
        ("vb.net", "VB.net"),  # found whole: its first word ("vb") is no lexer
        ("zzz:python", None),  # only the first word is tried
        ("", None),
    ],
)
def test_lexer_for(lang, name):
    lexer = md._lexer_for(lang)
    assert (lexer.name if lexer else None) == name
    assert md._LEXERS[lang.lower()] is lexer


@pytest.mark.usefixtures("fresh_caches")
@pytest.mark.parametrize("length,tried", [(63, True), (64, True), (65, False)])
def test_lexer_names_past_64_characters_are_not_looked_up(monkeypatch, length, tried):
    asked = []

    def get_lexer_by_name(name, **_options):
        asked.append(name)
        raise ValueError(name)

    monkeypatch.setattr("pygments.lexers.get_lexer_by_name", get_lexer_by_name)
    assert md._lexer_for("a" * length) is None
    assert asked == (["a" * length] if tried else [])


@pytest.mark.usefixtures("fresh_caches")
@pytest.mark.parametrize("filled,cached", [(254, True), (255, True), (256, False)])
def test_lexer_cache_stops_at_256_names(filled, cached):
    md._LEXERS.update({f"lang{k}": None for k in range(filled)})
    lexer = md._lexer_for("python")
    assert lexer is not None
    assert ("python" in md._LEXERS) is cached


@pytest.mark.usefixtures("fresh_caches")
def test_token_attrs_are_cached():
    from pygments.token import Keyword

    assert md._token_attr(Keyword.Constant) == "code_keyword"
    assert md._TOKEN_ATTRS == {Keyword.Constant: "code_keyword"}


# --------------------------------------------------------------------------- code lines


@pytest.mark.usefixtures("fresh_caches")
def test_leading_blank_code_line_is_kept_when_highlighted():
    assert render("```python\n\nx\n```") == [
        [("md_code_lang", "python")], [CODE], [CODE, ("code_plain", "x")],
    ]


@pytest.mark.parametrize("extra,attr", [(0, "code_plain"), (1, "md_code_block")])
def test_code_longer_than_highlight_max_is_shown_plain(extra, attr):
    code = "x" * (md.HIGHLIGHT_MAX + extra)
    assert md.code_lines(code + "\n", "python") == [[CODE, (attr, code)]]


def test_tabs_in_highlighted_code_are_expanded():
    """A tab is "clean" (is_clean) but is still expanded, as in plain code."""
    assert md.code_lines("\tx\n", "python") == [[CODE, ("code_plain", "    x")]]


def test_multiline_token_is_made_visible_line_by_line():
    """The text lexer yields the whole block as one token, newlines inside."""
    assert md.code_lines("a\x1b\nb\n", "text") == [
        [CODE, ("code_plain", "a\\e")], [CODE, ("code_plain", "b")],
    ]


# --------------------------------------------------------------------------- inline

INLINE_CASES = [
    ("image_alt_softbreak_is_a_space", "![a\nb](i.png)", [
        [("md_link", "[image: a b]"), ("md_url", " (i.png)")],
    ]),
    # the inner image's source text is "**b** c": its alt is its children's text
    ("image_in_image_alt", "![a ![**b** c](c.png)](d.png)", [
        [("md_link", "[image: a b c]"), ("md_url", " (d.png)")],
    ]),
    ("inline_html_across_lines", "a <b\nc>d", [[("", "a <b")], [("", "c>d")]]),
    ("newline_entity_breaks_the_line", "a&#10;b", [[("", "a")], [("", "b")]]),
    ("url_after_a_hard_break", "a\\\n[t](u)", [[("", "a")], [("md_link", "t"), ("md_url", " (u)")]]),
]


@pytest.mark.parametrize(
    ("source", "expected"), [c[1:] for c in INLINE_CASES], ids=[c[0] for c in INLINE_CASES]
)
def test_render_inline(source, expected):
    assert render(source) == expected


def test_unknown_inline_tokens_show_their_content(monkeypatch):
    """A plugin's inline token (a footnote reference, say) shows as text."""
    tokens = parse("a")
    tokens[1].children += [Token("footnote_ref", "", 0, content="[1]"), Token("anchor", "", 0)]
    assert render_tokens(monkeypatch, tokens) == [[("", "a[1]")]]


# --------------------------------------------------------------------------- blocks

BLOCK_CASES = [
    ("quote_goes_on_after_a_nested_quote", "> > a\n>\n> b", [
        [("md_quote", "│ │ "), ("", "a")], [("md_quote", "│")], [("md_quote", "│ "), ("", "b")],
    ]),
    ("ordered_width_from_the_last_number", "8. a\n9. b", [
        [("md_bullet", "8. "), ("", "a")], [("md_bullet", "9. "), ("", "b")],
    ]),
    ("ordered_width_grows_at_ten", "9. a\n10. b", [
        [("md_bullet", " 9. "), ("", "a")], [("md_bullet", "10. "), ("", "b")],
    ]),
    ("empty_block_in_item_then_more", "- ```\n  ```\n  after", [[("md_bullet", "• "), ("", "after")]]),
    ("loose_nested_list_keeps_its_blank", "- a\n  - b\n\n  - c", [
        [("md_bullet", "• "), ("", "a")], [("", "  "), ("md_bullet", "• "), ("", "b")], [],
        [("", "  "), ("md_bullet", "• "), ("", "c")],
    ]),
    ("table_header_only", "| a | b |\n|---|---|", [
        [("md_table_head", "a"), ("md_table_border", " │ "), ("md_table_head", "b")],
        [("md_table_border", "──┼──")],
    ]),
    ("table_empty_column_has_no_width", "| a | |\n|---|---|\n| b | |", [
        [("md_table_head", "a"), ("md_table_border", " │ ")],
        [("md_table_border", "──┼─")],
        [("", "b"), ("md_table_border", " │ ")],
    ]),
    ("table_right_aligned_inner_column", "| a | b |\n|--:|---|\n| ccc | d |", [
        [("md_table_head", "  a"), ("md_table_border", " │ "), ("md_table_head", "b")],
        [("md_table_border", "────┼──")],
        [("", "ccc"), ("md_table_border", " │ "), ("", "d")],
    ]),
    ("table_cell_lines_joined_by_a_space", "| h |\n|---|\n| a&#10;b |", [
        [("md_table_head", "h")], [("md_table_border", "───")], [("", "a b")],
    ]),
]


@pytest.mark.parametrize(
    ("source", "expected"), [c[1:] for c in BLOCK_CASES], ids=[c[0] for c in BLOCK_CASES]
)
def test_render_blocks(source, expected):
    assert render(source) == expected


# --------------------------------------------------------------------------- odd token streams


@pytest.mark.parametrize(
    "source,cut,expected",
    [
        ("*em*", 1, [[("md_em", "em")]]),
        ("# *h*", 1, [[("md_h1", "h")]]),
        ("- a\n- *b*", 1, [[("md_bullet", "• "), ("", "a")], [("md_bullet", "• "), ("md_em", "b")]]),
        ("| a |\n|---|\n| *b* |", 1, [[("md_table_head", "a")], [("md_table_border", "─")], [("md_em", "b")]]),
        # cut right after the last cell's text: nothing of the table is shown twice
        ("| a |\n|---|\n| *b* |", 4, [[("md_table_head", "a")], [("md_table_border", "─")], [("md_em", "b")]]),
    ],
)
def test_stream_cut_short_renders_what_it_has(monkeypatch, source, cut, expected):
    assert render_tokens(monkeypatch, parse(source)[:-cut]) == expected


def test_plugin_tokens_at_top_level(monkeypatch):
    """Leaf tokens with content show as plain lines; containers' open and close tokens,
    and tokens with children, are skipped; an inline token is a paragraph."""
    tokens = [
        leaf("::: note", nesting=1, kind="note_open"),
        parse("*a*")[1],
        leaf("x^2\ny"),
        leaf("", kind="anchor"),
        leaf("hidden", children=[Token("text", "", 0, content="hidden")]),
        leaf(":::", nesting=-1, kind="note_close"),
        leaf("z"),
    ]
    assert render_tokens(monkeypatch, tokens) == [
        [("md_em", "a")], [], [("", "x^2")], [("", "y")], [], [("", "z")],
    ]


def test_heading_tag_without_a_level_is_a_minor_heading(monkeypatch):
    tokens = parse("# h")
    tokens[0].tag = "hx"
    assert render_tokens(monkeypatch, tokens) == [[("md_heading", "h")]]


def test_ordered_list_with_a_bad_start_counts_from_one(monkeypatch):
    tokens = parse("3. a\n4. b")
    tokens[0].attrSet("start", "three")
    assert render_tokens(monkeypatch, tokens) == [
        [("md_bullet", "1. "), ("", "a")], [("md_bullet", "2. "), ("", "b")],
    ]


def test_table_without_rows_renders_nothing(monkeypatch):
    tokens = parse("| a |\n|---|\n\n---")
    close = next(k for k, t in enumerate(tokens) if t.type == "table_close")
    assert render_tokens(monkeypatch, [tokens[0], *tokens[close:]]) == [[("md_hr", HR)]]


TABLE_2X2 = "| a | bb |\n|---|--:|\n| c | dd |"  # th at 3-5 and 6-8, td at 13-15 and 16-18


@pytest.mark.parametrize(
    "drop,expected",
    [
        # a short body row: the missing cell is padded as empty (right-aligned column)
        ((16, 17, 18), [
            [("md_table_head", "a"), ("md_table_border", " │ "), ("md_table_head", "bb")],
            [("md_table_border", "──┼───")],
            [("", "c"), ("md_table_border", " │ "), ("", "  ")],
        ]),
        # a short header row: the column takes the body cell's alignment
        ((6, 7, 8), [
            [("md_table_head", "a"), ("md_table_border", " │ "), ("md_table_head", "  ")],
            [("md_table_border", "──┼───")],
            [("", "c"), ("md_table_border", " │ "), ("", "dd")],
        ]),
        # no thead: no header row, no rule
        ((1, 10), [
            [("", "a"), ("md_table_border", " │ "), ("", "bb")],
            [("", "c"), ("md_table_border", " │ "), ("", "dd")],
        ]),
    ],
    ids=["short_body_row", "short_header_row", "no_thead"],
)
def test_table_with_missing_parts(monkeypatch, drop, expected):
    assert render_tokens(monkeypatch, without(parse(TABLE_2X2), *drop)) == expected


def test_table_stray_inline_outside_cells_is_dropped(monkeypatch):
    tokens = parse(TABLE_2X2)
    tokens.insert(13, leaf("stray", kind="inline", children=[Token("text", "", 0, content="stray")]))
    assert render_tokens(monkeypatch, tokens) == render(TABLE_2X2)


@pytest.mark.parametrize(
    "body,expected",
    [
        ("", [[("md_table_head", "a")], [("md_table_head", "c")], [("md_table_border", "─")]]),
        ("\n| b |", [
            [("md_table_head", "a")], [("md_table_head", "c")], [("md_table_border", "─")], [("", "b")],
        ]),
    ],
)
def test_table_with_two_header_rows_ruled_after_the_last(monkeypatch, body, expected):
    tokens = parse("| a |\n|---|" + body)
    second = parse("| c |\n|---|")[2:7]  # its tr_open .. tr_close
    assert render_tokens(monkeypatch, tokens[:7] + second + tokens[7:]) == expected


# --------------------------------------------------------------------------- render


def test_render_takes_any_object_as_its_text():
    class Doc:
        def __str__(self):
            return "*a*"

    assert render(Doc()) == [[("md_em", "a")]]


def test_render_of_an_unprintable_object_is_empty():
    class Bad:
        def __str__(self):
            raise RuntimeError("no")

    assert render(Bad()) == []


@pytest.mark.parametrize(
    "source,expected",
    [
        ("```\r\nx\r\n```", [[CODE, ("md_code_block", "x")]]),  # the parser's newlines
        ("```\n```\nx\n```", [[("", "x")]]),  # the second line closes it
        ("```\na\n```\n```", [[CODE, ("md_code_block", "a")]]),  # the last but one does
    ],
)
def test_render_fence_look_alikes(source, expected):
    assert render(source) == expected


@pytest.mark.parametrize("source", ["```\r\nx\r\n```", "```\n", "~~~~\n", "```  "])
def test_code_block_shortcut_declines(source):
    """A carriage return, or a lone opening line (an open fence), is left to the parser."""
    assert md._single_fence(source) is None


def test_code_block_shortcut_takes_trailing_spaces_after_the_closer():
    assert md._single_fence("```\na\n```      \n") == [[CODE, ("md_code_block", "a")]]


# --------------------------------------------------------------------------- streaming

LONG = 60  # LONG_WORD, spelled out: the bound is what is tested


@pytest.mark.parametrize(
    "tail,expected",
    [
        ("a" * (LONG - 1), ""),
        ("a" * LONG, ""),  # a word of LONG_WORD characters still waits
        ("a" * (LONG + 1), "a" * (LONG + 1)),
        ("x " + "a" * LONG, "x"),
        ("x " + "a" * (LONG + 1), "x " + "a" * (LONG + 1)),
        ("ab**cd ef", "ab"),  # cut at the opener, not before it
        ("ab`cd ef", "ab"),
    ],
)
def test_stable_prefix_bounds(tail, expected):
    assert md.stable_prefix(tail) == expected


def test_streaming_table_at_the_start_before_a_fence():
    """The table's own lines are not part of what could leave a fence open."""
    assert md.streaming_table("| a | b |\n```\n") == 0


@pytest.mark.parametrize("text", ["  ```\nx\n", " ~~~\n"])
def test_open_fence_must_start_at_column_0(text):
    assert md.open_fence(text) is None


@pytest.mark.parametrize(
    "code,run,expected",
    [
        ("abc", "```", False),
        ("x`y", "```", False),
        ("a\n   ```", "```", True),
        ("a\n    ```", "```", False),  # indented 4: code, not a fence
        ("a\n```` ", "```", True),
        ("~~~", "```", False),
    ],
)
def test_closes_fence(code, run, expected):
    assert md.closes_fence(code, run) is expected
