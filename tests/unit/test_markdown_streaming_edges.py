"""Edge cases of the streaming helpers of dashfloat/ui/markdown.py: where the completed
blocks of a growing answer end (completed_prefix), and which parts of a streaming tail
may still change (_in_open_fence, _unclosed_inline)."""

from __future__ import annotations

import random

import pytest

from dashfloat.ui import markdown as md


def _join(head, tail):
    """The rendered completed prefix stacked over the rendered rest, as the UI does."""
    return head + ([[]] if head and tail else []) + tail


# --------------------------------------------------------------------------- _in_open_fence


@pytest.mark.parametrize(
    "head,expected",
    [
        ("text\n", False),
        ("~~~\n", True),  # a tilde fence alone (no backticks anywhere)
        ("```\n", True),
        ("> ```\n", True),  # a fence in a block quote
        (">```\n", True),
        ("> > ```\n", True),
        ("   ```\n", True),
        ("~~~ a`b\n", True),  # a backtick in a tilde fence's info string is fine
        ("```a`b\n", False),  # ... but makes a backtick line inline code, not a fence
        ("```\n```py\n", True),  # a closing fence has no info string
        ("```\nx\n```\n", False),
        ("~~~\nx\n~~~\n", False),
        ("```\nx\n ```\n", False),
        ("````\n```\n", True),  # a closing fence is at least as long as the opening one
        ("```\n`````\n", False),
        ("~~~\n```\n", True),  # ... and of the same character
        ("```\n~~~\n", True),
        ("text ```\n", False),  # a run inside a line opens nothing
    ],
)
def test_in_open_fence(head, expected):
    """Whether complete lines leave a fenced code block open (the tail then waits for whole
    lines of code)."""
    assert md._in_open_fence(head) is expected


# --------------------------------------------------------------------------- _unclosed_inline


@pytest.mark.parametrize(
    "line,expected",
    [
        ("", None),
        ("a b", None),
        ("`code", 0),  # an open code span at the very start
        ("x `code", 2),
        ("x ``a` b", 2),  # a shorter run does not close a longer one
        ("``a`` *b", 6),
        ("`*` x", None),  # a closed code span opens nothing inside it
        ("x `a` *b", 6),  # offsets after a code span are those of the line
        ("**a `b** c", 0),  # an open code span hides the "**" that would close the bold
        ("_a_`x", 3),  # the "_" before an open span still closes the emphasis
        ("a ** b", 2),
        ("~~x", 0),
        ("a ~~b~~ c", None),
        ("a *b", 2),
        ("x *a", 2),
        ("*a*", None),
        ("*a* *b", 4),  # the last unpaired star is the opener that waits
        ("*a* *b* *c", 8),
        ("* x", None),  # a bullet
        ("*", None),
        ("* item *x", 7),
        ("x _a", 2),
        ("_a _b", 3),
        ("(_a", 1),
        ("snake_case", None),
        ("_a_ b", None),
        ("[x", 0),
        ("see [x] y", None),
        ("[a](b", 0),  # a link whose target is still coming
        ("[a](", 0),
        ("[a](b) x", None),
        ("[a] (b", None),
        ("[)](b", 0),  # a ")" before the "]" closes no target
        ("a [b](c) [d", 9),
    ],
)
def test_unclosed_inline(line, expected):
    """The earliest opener without its closer yet: where a streaming tail is cut so markers
    are not shown and then vanish."""
    assert md._unclosed_inline(line) == expected


# --------------------------------------------------------------------------- _strip_quotes, _interrupts


@pytest.mark.parametrize(
    "line,max_depth,expected",
    [
        ("x", 3, (0, "x")),
        ("> x", 3, (1, "x")),
        ("> > > x", 2, (2, "> x")),  # no deeper than asked
        ("> > > x", 3, (3, "x")),
        (">>x", 5, (2, "x")),
        ("   >  x", 1, (1, " x")),  # one optional space after the marker belongs to it
        ("    > x", 1, (0, "    > x")),  # indented 4: code, not a quote
        ("> x", 0, (0, "> x")),
    ],
)
def test_strip_quotes(line, max_depth, expected):
    assert md._strip_quotes(md._Rx().quote, line, max_depth) == expected


@pytest.mark.parametrize(
    "b,expected",
    [
        ("text", False),
        ("# h", True),
        ("#nope", False),
        ("---", True),
        ("* * *", True),
        ("```", True),
        ("```py", True),
        ("~~~ a`b", True),
        ("```a`b", False),  # inline code, which a paragraph may hold
        ("<div>", True),
        ("<pre>", True),
        ("<!--", True),
        ("<span>", False),  # HTML type 7 cannot interrupt a paragraph
        ("<", False),
    ],
)
def test_interrupts(b, expected):
    """Which lines end a paragraph (and so cannot lazily continue a list item's one)."""
    assert md._interrupts(md._Rx(), b) is expected


# --------------------------------------------------------------------------- completed_prefix: exact offsets

PREFIX_CASES = [
    # text, expected: where the completed top-level blocks end
    ("leading_blank_line", "\n", 1),
    ("indented_by_three_is_a_paragraph", "   x\n\n", 6),
    ("tab_indented_code_waits", "\tcode\n\n", 0),
    ("three_space_fence_stays_open", "   ```\n\n", 0),
    ("closing_fence_indented_three", "```\n   ```\nx\n", 11),
    ("closing_fence_indented_four_is_code", "```\n    ```\n```\n", 16),
    ("indented_opening_fence_closing_at_four", "  ```\n    ```\n```\n", 18),
    ("blank_after_closed_fence", "```\nx\n```\n\n", 11),
    ("uppercase_end_tag_ends_pre", "<pre>\n\n</PRE>\n\n", 15),
    ("declaration_ends_on_its_line", "<!X>\n\n", 6),
    ("indented_four_after_paragraph_is_text", "x\n    ```\n\nText\n", 11),
    ("fence_in_item_closed_then_list_ends", "- a\n  ```\n  x\n  ```\n\nText\n", 21),
    ("less_indented_item_after_blank_keeps_list", "- a\n\n - b\n", 0),
    ("lazy_line_after_indented_item_line", "x\n\n- a\n\n  b\nc\n", 3),
    ("lazy_continuation_keeps_fence_in_item", "- a\nb\n  ```\n  ```\n", 0),
    ("heading_closes_nested_item", "- a\n  - b\n  # h\n    ```\n  ```\n\nText\n", 31),
    ("heading_three_in_closes_nested_item", "- a\n  -   b\n     # h\n      ```\n\nText\n", 32),
    ("quote_in_item_keeps_item_open", "- a\n  > q\n  ```\n  ```\n", 0),
    ("fence_less_indented_than_wide_item_is_top_level", "1.   a\n   ```\n   ```\n", 21),
    ("five_spaces_after_marker_is_code_in_item", "-     a\n  ```\n  ```\n", 0),
    ("five_spaces_item_content_column_two", "-     a\n ```\n ```\n", 18),
    ("five_spaces_item_holds_code_not_a_list", "-     - ```\n\nText\n", 13),
    ("four_spaces_after_marker", "-    a\n  ```\n  ```\n", 19),
    ("two_spaces_after_marker", "-  a\n  ```\n  ```\n", 17),
    # a lone tag line (HTML type 7) starts a block only where no paragraph is open
    ("tag_line_first", "<span>\n```\n```\n", 0),
    ("tag_line_after_paragraph", "x\n<span>\n```\n```\n", 17),
    ("tag_line_after_item_paragraph", "- a\n\n  b\n<span>\n```\n```\n", 24),
    ("tag_line_after_heading", "# h\n<span>\n```\n```\n", 0),
    ("tag_line_after_indented_code", "    x\n<span>\n```\n```\n", 0),
    ("tag_line_after_blank", "x\n\n<span>\n```\n```\n", 3),
    ("tag_line_after_one_line_comment", "<!-- c -->\n<span>\n```\n```\n", 0),
    ("tag_line_after_comment", "<!--\n-->\n<span>\n```\n```\n", 0),
    ("tag_line_after_quoted_fence", ">    ```\n<span>\n```\n```\n", 0),
    ("tag_line_after_quoted_html", "> <div>\n> x\n<span>\n```\n```\n", 0),
    ("not_a_tag_is_text", "<3\n```\n```\n", 11),
    ("html_in_item_ends_with_item", "- <div>\nx\n  ```\n\n```\n", 21),
    ("tag_line_after_fence_64_quotes_deep", ">" * 64 + " ```\n<span>\n```\n```\n", 0),
    # a blank line inside a fence that is open in a list item never completes the list
    ("less_indented_fence_line_opens_one_in_outer_item", "- a\n  - b\n    ```\n  ```\n\nText\n", 0),
    ("fence_in_nested_item_reopened_in_outer_one", "- - ```\n  ```\n\nText\n", 0),
    ("tab_after_marker_is_content_column_four", "-\tx\n    ```\n\nText\n", 0),
    ("heading_indented_four_continues_inner_paragraph", "- a\n  -    b\n      # h\n       ```\n\nText\n", 0),
]


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in PREFIX_CASES], ids=[c[0] for c in PREFIX_CASES])
def test_completed_prefix_offsets(text, expected):
    assert md.completed_prefix(text) == expected
    # the same, read up to the end of the text (or resumed at the start) by the other arguments
    assert md.completed_prefix(text, end=len(text)) == expected
    assert md.completed_prefix(text, start=0) == expected


@pytest.mark.parametrize(
    "text,kwargs,expected",
    [
        ("\n", {"end": -1}, 0),  # a negative end reads nothing
        ("\nx", {"end": 0}, 0),
        ("\n\nx", {"end": 1}, 1),
        ("a\n\nb\n\nc", {"first": True}, 3),  # the first boundary, not the last
        ("a\n\nb\n\nc", {"start": 3, "first": True}, 6),
        ("a\n\nb\n\nc", {"start": 6, "first": True}, 6),  # none after it: the start
        ("a\n\nb\n\nc", {}, 6),
        ("a\n\nb\n\nc", {"end": 4}, 3),
        ("a\n\nb\n\nc", {"start": 3}, 6),
    ],
)
def test_completed_prefix_arguments(text, kwargs, expected):
    assert md.completed_prefix(text, **kwargs) == expected


# --------------------------------------------------------------------------- completed_prefix: properties

# Lines a model's answer is made of, avoiding the cases the docstring of completed_prefix
# names as known exceptions (reference links, lone carriage returns, ambiguous tag lines).
_LINES = [
    "text", "more text", "  lazy", "    code", "\tcode", "", "", "", "- a", "* b", "1. one", "10) ten",
    "  - nested", "  more", "    more", "-     wide", "-  two", "***", "---", "===", "# h", "> q", "> > qq",
    ">", "> - qi", "```", "```py", "````", "~~~", "  ```", "   ```", "    ```", "- ```", "  ~~~",
    "> ```", "<div>", "</div>", "<pre>", "</pre>", "<!--", "-->", "<!-- c -->", "| a | b |",
    "|---|---|", "| 1 | 2 |", "x *em* and `code`", "<!-->", "<?>", "<?x ?>", "<script>", "</style>", "</SCRIPT>",
]


def _documents(seed, count):
    rnd = random.Random(seed)
    for _ in range(count):
        text = "".join(rnd.choice(_LINES) + "\n" for _ in range(rnd.randint(2, 7)))
        yield text if rnd.random() < 0.7 else text[:-1]


def _boundaries(text):
    """Every offset the scan reports with `first`, walking from the start."""
    out, p = [], 0
    while True:
        q = md.completed_prefix(text, start=p, first=True)
        if q == p:
            return out
        out.append(q)
        p = q


@pytest.mark.parametrize("seed", range(8))
def test_completed_prefix_splits_where_rendering_agrees(seed):
    """The promise streaming relies on: the completed prefix rendered alone, then the rest,
    gives the lines of the whole; the prefix only grows, ends on a line, and a scan resumed
    from the last value, bounded by `end` or walked with `first` agrees with a full scan."""
    for text in _documents(seed, 60):
        full = md.render(text)
        ends = [0, *(i + 1 for i, ch in enumerate(text) if ch == "\n"), len(text)]
        prev, seen = 0, {0}
        for k in ends:
            p = md.completed_prefix(text[:k])
            assert prev <= p <= k and (p == 0 or text[p - 1] == "\n"), (text, k, p)
            assert md.completed_prefix(text[:k], start=prev) == p, (text, k)
            if text[k - 1 : k] in ("\n", ""):
                assert md.completed_prefix(text, end=k) == p, (text, k)
            prev = p
            seen.add(p)
        assert _boundaries(text)[-1:] == ([prev] if prev else []), text
        for p in seen:
            assert _join(md.render(text[:p]), md.render(text[p:])) == full, (text, p)


@pytest.mark.parametrize("opener,end", [("<!-->", "-->"), ("<!--->", "-->"), ("<?>", "?>"),
                                        ("<pre>\n</style>", "</pre>"), ("<PRE>\n</Script>", "</pre>")])
def test_html_block_ends_where_markdown_it_ends_it(opener, end):
    """'<!-->', '<!--->' and '<?>' end on their own line, and a <pre> block at any of the
    four closing tags (script, pre, style, textarea), as markdown-it reads them: a later
    end marker inside a fenced code block must not end the block there (the prefix
    ended inside the code, whose rest then rendered as a paragraph)."""
    text = f"{opener}\n\n```\n{end}\n\nx\n```\n"
    p = md.completed_prefix(text)
    assert _join(md.render(text[:p]), md.render(text[p:])) == md.render(text)
