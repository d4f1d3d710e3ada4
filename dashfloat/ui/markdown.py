"""Render the Markdown of an assistant answer into terminal lines of urwid-style markup.

This module is a *pure* renderer: it never imports urwid. A rendered document is a list
of lines; each line is a list of ``(attr_name, text)`` segments that the UI turns into
urwid text markup (the UI wraps long lines itself). ``attr_name`` is ``""`` for plain
text, otherwise one of :data:`ATTRS` (the theme must define every one of them).

Every piece of text that goes into a segment has passed through
:func:`dashfloat.textsafe.visible`, so model output can never put raw control or escape
sequences on the terminal.

Streaming: :func:`completed_prefix` tells how much of a still-growing answer consists of
completed top-level blocks. The UI renders that prefix once with :func:`render`, and the
still-streaming tail with :func:`render` too, cut by :func:`stable_prefix` where later
text could still restyle it (tables wait as plain lines, :func:`streaming_table`)::

    p = completed_prefix(text, start=p)  # p: the previous value, 0 at first
    head, tail = render(text[:p]), render(stable_prefix(text[p:]))
    lines = head + ([[]] if head and tail else []) + tail

(``render(text[:p])`` only needs redoing when ``p`` grows, and then only for
``text[old_p:p]``: the completed blocks render the same either way.)

For the documents this module is tested on, ``render(a) + [[]] + render(b)`` (the blank
line that separates blocks, dropped by ``render`` as a trailing empty line) equals
``render(a + b)`` when ``len(a) == completed_prefix(a + b)``; see
:func:`completed_prefix` for the cases where that cannot hold.

Import cost is kept low: markdown-it, pygments and wcwidth are imported lazily, the first
time a document (respectively a highlighted code block, a non-ASCII table cell) needs them.
"""

from __future__ import annotations

import re

from dashfloat.textsafe import is_clean, visible

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs ~5 ms
if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token
    from pygments.lexer import Lexer
    from pygments.token import _TokenType

Segment = tuple[str, str]  # (attr_name, text); attr_name "" is plain text
Line = list[Segment]  # one terminal line

__all__ = ["ATTRS", "Line", "Segment", "completed_prefix", "plain_lines", "closes_fence", "code_lines", "open_fence", "render", "stable_prefix", "streaming_table"]

#: Every attr name `render` can emit, besides "" (plain text).
ATTRS: frozenset[str] = frozenset(
    {
        "md_h1",
        "md_h2",
        "md_heading",
        "md_em",
        "md_strong",
        "md_strike",
        "md_code",
        "md_link",
        "md_url",
        "md_bullet",
        "md_quote",
        "md_hr",
        "md_code_block",
        "md_code_lang",
        "md_table_head",
        "md_table_border",
        "code_keyword",
        "code_string",
        "code_comment",
        "code_number",
        "code_name_func",
        "code_builtin",
        "code_operator",
        "code_plain",
    }
)

_HR_WIDTH = 40
_CODE_INDENT = "  "
_NESTED_LIST_INDENT = "  "


class _Glyphs:
    __slots__ = ("bullet", "hr", "quote", "quote_empty", "table_cross", "table_h", "table_sep")

    def __init__(self, ascii_only: bool) -> None:
        if ascii_only:
            self.bullet, self.quote, self.quote_empty = "* ", "| ", "|"
            self.hr, self.table_h, self.table_cross, self.table_sep = "-", "-", "+", " | "
        else:
            self.bullet, self.quote, self.quote_empty = "• ", "│ ", "│"
            self.hr, self.table_h, self.table_cross, self.table_sep = "─", "─", "┼", " │ "


_UNICODE = _Glyphs(False)
_ASCII = _Glyphs(True)

# --------------------------------------------------------------------------- helpers


def plain_lines(text: str) -> list[Line]:
    """Split raw text on newlines into lines of ``("", visible(line))``.

    Used for the still-streaming tail of an answer and for tool output. Empty lines
    come out as ``[]``; an empty text has no lines.
    """
    if not text:
        return []
    return [[("", visible(line))] if line else [] for line in text.split("\n")]


def pending_table(ascii: bool = False) -> list[Line]:
    """The one line a streaming table shows until it is complete (transcript.py holds its
    rows back: written as source and again as a table, they were sent twice)."""
    return [[("md_table_border", "... table" if ascii else "┄ table ┄")]]


def _strip_trailing_empty(lines: list[Line]) -> list[Line]:
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _merge(line: Line) -> Line:
    """Drop empty segments and merge adjacent segments with the same attr (the line
    itself when there is nothing to do: code lines are many, and mostly clean)."""
    prev = None
    for attr, text in line:
        if not text or attr == prev:
            break
        prev = attr
    else:
        return line
    out: Line = []
    for attr, text in line:
        if not text:
            continue
        if out and out[-1][0] == attr:
            out[-1] = (attr, out[-1][1] + text)
        else:
            out.append((attr, text))
    return out


def _width(text: str) -> int:
    if text.isascii():
        return len(text)
    try:
        from wcwidth import wcswidth

        w = wcswidth(text)
    except Exception:  # noqa: BLE001 - wcwidth missing or broken: count code points
        return len(text)
    return w if w >= 0 else len(text)


# --------------------------------------------------------------------------- parser

def _get_parser() -> MarkdownIt:
    """The parser /copy shares (dashfloat/mdparse.py): its code blocks are these."""
    from dashfloat.mdparse import parser

    return parser()


# --------------------------------------------------------------------------- code highlighting

_TOKEN_ATTRS: dict[_TokenType, str] = {}
_LEXERS: dict[str, Lexer | None] = {}


def _lexer_for(lang: str) -> Lexer | None:
    key = lang.lower()
    if key in _LEXERS:
        return _LEXERS[key]
    lexer = None
    # "python", "py", "c++"; then info strings like "{python}" or "py:main.py"
    for name in dict.fromkeys((key, *re.findall(r"[\w+#-]+", key)[:1])):
        if len(name) > 64:
            continue
        try:
            from pygments.lexers import get_lexer_by_name

            lexer = get_lexer_by_name(name, stripnl=False, ensurenl=True)
            break
        except Exception:  # noqa: BLE001 - ClassNotFound, or a broken lexer plugin
            lexer = None
    if len(_LEXERS) < 256:
        _LEXERS[key] = lexer
    return lexer


def _token_attr(ttype: _TokenType) -> str:
    attr = _TOKEN_ATTRS.get(ttype)
    if attr is None:
        from pygments import token as T

        if ttype in T.Comment:
            attr = "code_comment"
        elif ttype in T.String:
            attr = "code_string"
        elif ttype in T.Number:
            attr = "code_number"
        elif ttype in T.Keyword:
            attr = "code_keyword"
        elif ttype in T.Name.Function or ttype in T.Name.Class or ttype in T.Name.Decorator:
            attr = "code_name_func"
        elif ttype in T.Name.Builtin:
            attr = "code_builtin"
        elif ttype in T.Operator:
            attr = "code_operator"
        else:
            attr = "code_plain"
        _TOKEN_ATTRS[ttype] = attr
    return attr


HIGHLIGHT_MAX = 8 << 10  # characters: a longer code block is shown plain (pygments: ~3 ms per KiB)


def _code_lines(content: str, lang: str) -> list[Line]:
    if not content:
        return []
    content = content.removesuffix("\n")
    lexer = _lexer_for(lang) if lang and len(content) <= HIGHLIGHT_MAX else None
    lines: list[Line] = []
    if lexer is not None:
        try:
            lines = _highlight(lexer, content)
        except Exception:  # noqa: BLE001 - a lexer bug must not lose the code: show it plain
            lines = []
    if lines:
        return lines
    return [[("", _CODE_INDENT), ("md_code_block", visible(line))] for line in content.split("\n")]


def _highlight(lexer: Lexer, content: str) -> list[Line]:
    safe = "\t" not in content and is_clean(content)  # the common case: skip visible()
    attrs = _TOKEN_ATTRS
    line: Line = [("", _CODE_INDENT)]
    lines: list[Line] = [line]
    for ttype, value in lexer.get_tokens(content + "\n"):
        attr = attrs.get(ttype) or _token_attr(ttype)
        if "\n" not in value:
            line.append((attr, value if safe else visible(value)))
            continue
        for i, part in enumerate(value.split("\n")):
            if i:
                line = [("", _CODE_INDENT)]
                lines.append(line)
            if part:
                line.append((attr, part if safe else visible(part)))
    lines.pop()  # the line opened by the final newline
    return lines


# --------------------------------------------------------------------------- inline

_INLINE_ATTR = {"em_open": "md_em", "strong_open": "md_strong", "s_open": "md_strike"}
_INLINE_CLOSE = frozenset({"em_close", "strong_close", "s_close"})


def _plain_text(children: list[Token] | None) -> str:
    """Inline tokens as plain text (for image alt text)."""
    out: list[str] = []
    for tok in children or ():
        if tok.type in ("text", "code_inline", "html_inline"):
            out.append(tok.content)
        elif tok.type in ("softbreak", "hardbreak"):
            out.append(" ")
        elif tok.type == "image":
            out.append(_plain_text(tok.children) or tok.content)
    return "".join(out)


def _inline(token: Token, force: str | None = None) -> list[Line]:
    """Render an `inline` token into lines; `force` overrides every attr (headings)."""
    lines: list[Line] = [[]]
    stack: list[str] = []
    links: list[tuple[str, list[str], bool]] = []  # (href, collected text, autolink)

    def emit(attr: str, text: str) -> None:
        if force is not None:
            attr = force
        elif links:
            attr = "md_link"
        parts = text.split("\n")
        for i, part in enumerate(parts):
            if i:
                lines.append([])
            if part:
                lines[-1].append((attr, visible(part)))
        for _href, buf, _auto in links:
            buf.append(text)

    for tok in token.children or ():
        ttype = tok.type
        cur = stack[-1] if stack else ""
        if ttype == "text":
            emit(cur, tok.content)
        elif ttype == "softbreak":
            # a space, as CommonMark means it (and rich, glow, mdcat show it): a paragraph
            # the model wrapped at 80 columns is wrapped again at the pane's width, not left
            # ragged ("A value" / "set in" / "OPENAI_BASE_URL wins...")
            emit(cur, " ")
        elif ttype == "hardbreak":
            lines.append([])
        elif ttype == "code_inline":
            emit("md_code", tok.content)
        elif ttype in _INLINE_ATTR:
            stack.append(_INLINE_ATTR[ttype])
        elif ttype in _INLINE_CLOSE:
            if stack:
                stack.pop()
        elif ttype == "link_open":
            href = str(tok.attrGet("href") or "")
            links.append((href, [], tok.markup == "autolink"))
        elif ttype == "link_close":
            if links:
                href, buf, auto = links.pop()
                if href and not auto and "".join(buf) != href:
                    _emit_url(lines, href, force)
        elif ttype == "image":
            alt = _plain_text(tok.children) or tok.content
            emit("md_link", f"[image: {alt}]" if alt.strip() else "[image]")
            src = str(tok.attrGet("src") or "")
            if src:
                _emit_url(lines, src, force)
        elif ttype == "html_inline":
            emit(cur, tok.content)  # shown as text, never interpreted
        elif tok.content:
            emit(cur, tok.content)
    return lines


def _emit_url(lines: list[Line], url: str, force: str | None) -> None:
    url = url.replace("\n", " ")
    lines[-1].append((force or "md_url", visible(f" ({url})")))


# --------------------------------------------------------------------------- blocks

# A block is (kind, lines); kinds: "para", "tight_para" (hidden paragraph in a tight
# list), "list", and "other".
_Block = tuple[str, list[Line]]


def _join(blocks: list[_Block]) -> list[Line]:
    out: list[Line] = []
    for _kind, lines in blocks:
        if not lines:
            continue
        if out:
            out.append([])
        out.extend(lines)
    return out


def _blocks(tokens: list[Token], i: int, stop: str, g: _Glyphs) -> tuple[list[_Block], int]:
    """Render block tokens from `i` up to the token of type `stop` (or the end)."""
    blocks: list[_Block] = []
    n = len(tokens)
    while i < n:
        tok = tokens[i]
        ttype = tok.type
        if ttype == stop:
            return blocks, i
        if ttype == "paragraph_open":
            j = i + 1
            lines: list[Line] = []
            while j < n and tokens[j].type != "paragraph_close":
                if tokens[j].type == "inline":
                    lines.extend(_inline(tokens[j]))
                j += 1
            blocks.append(("tight_para" if tok.hidden else "para", lines))
            i = j + 1
        elif ttype == "heading_open":
            level = int(tok.tag[1:]) if tok.tag[1:].isdigit() else 3
            attr = "md_h1" if level == 1 else "md_h2" if level == 2 else "md_heading"
            j = i + 1
            lines = []
            while j < n and tokens[j].type != "heading_close":
                if tokens[j].type == "inline":
                    lines.extend(_inline(tokens[j], attr))
                j += 1
            blocks.append(("other", lines))
            i = j + 1
        elif ttype in ("bullet_list_open", "ordered_list_open"):
            lines, i = _list(tokens, i, g)
            blocks.append(("list", lines))
        elif ttype == "blockquote_open":
            inner, i = _blocks(tokens, i + 1, "blockquote_close", g)
            lines = [
                [("md_quote", g.quote), *line] if line else [("md_quote", g.quote_empty)]
                for line in _join(inner)
            ]
            blocks.append(("other", lines or [[("md_quote", g.quote_empty)]]))
            i += 1
        elif ttype == "table_open":
            lines, i = _table(tokens, i, g)
            blocks.append(("other", lines))
        elif ttype == "fence":
            info = tok.info.strip()
            lang = info.split()[0] if info else ""
            lines = [[("md_code_lang", visible(lang))]] if lang else []
            lines.extend(_code_lines(tok.content, lang))
            blocks.append(("other", lines))
            i += 1
        elif ttype == "code_block":
            blocks.append(("other", _code_lines(tok.content, "")))
            i += 1
        elif ttype == "hr":
            blocks.append(("other", [[("md_hr", g.hr * _HR_WIDTH)]]))
            i += 1
        elif ttype == "html_block":
            content = tok.content.removesuffix("\n")
            blocks.append(("other", plain_lines(content)))
            i += 1
        elif ttype == "inline":
            blocks.append(("para", _inline(tok)))
            i += 1
        else:  # closing tokens of unknown containers, plugin tokens: skip
            if tok.content and tok.nesting == 0 and not tok.children:
                blocks.append(("other", plain_lines(tok.content)))
            i += 1
    return blocks, i


def _list(tokens: list[Token], i: int, g: _Glyphs) -> tuple[list[Line], int]:
    open_tok = tokens[i]
    ordered = open_tok.type == "ordered_list_open"
    close = "ordered_list_close" if ordered else "bullet_list_close"
    start = 1
    if ordered:
        try:
            start = int(open_tok.attrGet("start") or 1)
        except (TypeError, ValueError):
            start = 1
    delim = open_tok.markup if open_tok.markup in (".", ")") else "."
    i += 1
    items: list[list[_Block]] = []
    n = len(tokens)
    while i < n and tokens[i].type != close:
        if tokens[i].type == "list_item_open":
            body, i = _blocks(tokens, i + 1, "list_item_close", g)
            items.append(body)
        i += 1
    loose = any(kind == "para" for body in items for kind, _ in body)

    num_width = 0
    if ordered:
        last = start + len(items) - 1
        num_width = max(len(str(start)), len(str(last))) + len(delim)
    out: list[Line] = []
    for idx, body in enumerate(items):
        if ordered:
            marker = f"{start + idx}{delim}".rjust(num_width) + " "
        else:
            marker = g.bullet
        hang = " " * len(marker)
        item_lines: list[Line] = []
        first = True
        for kind, lines in body:
            if not lines:
                continue
            if item_lines and loose:
                item_lines.append([])
            prefix = _NESTED_LIST_INDENT if kind == "list" else hang
            for line in lines:
                if first:
                    item_lines.append([("md_bullet", marker), *line])
                    first = False
                elif line:
                    item_lines.append([("", prefix), *line])
                else:
                    item_lines.append([])
        if first:  # empty item
            item_lines.append([("md_bullet", marker)])
        if out and loose:
            out.append([])
        out.extend(item_lines)
    return out, i + 1


def _table(tokens: list[Token], i: int, g: _Glyphs) -> tuple[list[Line], int]:
    rows: list[tuple[bool, list[Line]]] = []
    aligns: list[str] = []
    n = len(tokens)
    i += 1
    head = False
    while i < n and tokens[i].type != "table_close":
        tok = tokens[i]
        ttype = tok.type
        if ttype == "thead_open":
            head = True
        elif ttype == "thead_close":
            head = False
        elif ttype == "tr_open":
            rows.append((head, []))
        elif ttype in ("th_open", "td_open") and rows:
            style = str(tok.attrGet("style") or "")
            align = style.partition("text-align:")[2].strip() or "left"
            col = len(rows[-1][1])
            if col >= len(aligns):
                aligns.append(align)
            rows[-1][1].append([])
        elif ttype == "inline" and rows and rows[-1][1]:
            cell: Line = []
            for k, line in enumerate(_inline(tok, "md_table_head" if rows[-1][0] else None)):
                if k:
                    cell.append(("", " "))
                cell.extend(line)
            rows[-1][1][-1] = _merge(cell)
        i += 1

    ncols = max((len(cells) for _h, cells in rows), default=0)
    if not ncols:
        return [], i + 1
    aligns += ["left"] * (ncols - len(aligns))
    widths = [0] * ncols
    cell_widths: list[list[int]] = []
    for _head, cells in rows:
        cws = [_width("".join(t for _a, t in cell)) for cell in cells]
        cws += [0] * (ncols - len(cws))
        cell_widths.append(cws)
        for c, w in enumerate(cws):
            widths[c] = max(widths[c], w)

    out: list[Line] = []
    for r, (head, cells) in enumerate(rows):
        pad_attr = "md_table_head" if head else ""
        line: Line = []
        for c in range(ncols):
            cell = cells[c] if c < len(cells) else []
            gap = widths[c] - cell_widths[r][c]
            align = aligns[c]
            if align == "right":
                left, right = gap, 0
            elif align == "center":
                left, right = gap // 2, gap - gap // 2
            else:
                left, right = 0, gap
            if c == ncols - 1:
                right = 0  # no trailing padding on the last column
            if c:
                line.append(("md_table_border", g.table_sep))
            line.append((pad_attr, " " * left))
            line.extend(cell)
            line.append((pad_attr, " " * right))
        out.append(line)
        if head and (r + 1 >= len(rows) or not rows[r + 1][0]):
            sep = (g.table_h + g.table_cross + g.table_h).join(g.table_h * w for w in widths)
            out.append([("md_table_border", sep)])
    return out, i + 1


# --------------------------------------------------------------------------- render


def render(text: str, *, ascii: bool = False) -> list[Line]:
    """Render Markdown `text` into terminal lines. Never raises."""
    try:
        if not isinstance(text, str):
            text = str(text)
        fast = _single_fence(text)
        if fast is not None:
            return fast
        glyphs = _ASCII if ascii else _UNICODE
        tokens = _get_parser().parse(text)
        blocks, _ = _blocks(tokens, 0, "", glyphs)
        lines = [_merge(line) for line in _join(blocks)]
        return _strip_trailing_empty(lines)
    except Exception:  # noqa: BLE001 - never raise on model output: show it as plain text
        try:
            return _strip_trailing_empty(plain_lines(str(text)))
        except Exception:  # noqa: BLE001
            return []


def _single_fence(text: str) -> list[Line] | None:
    """`render` of a text that is exactly one top-level fenced code block (blank lines
    around it allowed), without the Markdown parser; None for anything else. A completed
    code block is the commonest big block, and parsing a long one (a log of thousands of
    lines) costs the parser's per-line tables for nothing."""
    body = text.lstrip("\n")
    if body[:1] not in "`~" or "\r" in body:
        return None
    body = body.rstrip("\n")
    fence = open_fence(body.partition("\n")[0] + "\n")
    if fence is None:
        return None
    run, lang = fence
    lines = body.split("\n")
    if len(lines) < 2 or not closes_fence(lines[-1], run) or closes_fence("\n".join(lines[1:-1]), run):
        return None
    if lines[-1].strip(" ") and len(lines[-1]) - len(lines[-1].lstrip(" ")) > 3:
        return None
    content = "".join(line + "\n" for line in lines[1:-1])
    out = [[("md_code_lang", visible(lang))]] if lang else []
    out.extend(_code_lines(content, lang))
    return _strip_trailing_empty([_merge(line) for line in out])


# --------------------------------------------------------------------------- streaming

LONG_WORD = 60  # a partial "word" longer than this (a URL, a blob) is shown as it grows

_FENCE_LINE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
_BACKTICKS = re.compile(r"`+")
_MARKERS_ONLY = re.compile(r"[\s>]*(?:(?:[-+*]|[0-9]{1,9}[.)]|#{1,6})[\s>]*)*")


def stable_prefix(text: str) -> str:
    """The part of a still-streaming tail to render now: the part later text is unlikely
    to restyle or reflow, so the rows it fills can stay on the terminal as they are.

    Rendering the tail with the same renderer as a completed block (instead of plain
    lines that are all restyled when the block completes) means a block's rows are sent
    to the terminal about once. What could still change is held back a moment:

    * the word being typed (greedy wrapping is stable only at word boundaries), unless it
      is longer than LONG_WORD (a URL or a blob grows in place);
    * a partial line of an open fenced code block (code is shown a line at a time);
    * an inline span whose closing delimiter has not arrived (`` ` ``, ``**``, ``*``,
      ``_``, ``~~``, ``[...](...)``): the markers would be shown, then vanish.

    Heuristic by design: a misjudged case costs a few rows re-sent, never a wrong screen,
    because a completed block is always rendered whole.
    """
    nl = text.rfind("\n")
    head, last = text[: nl + 1], text[nl + 1 :]
    if not last or _in_open_fence(head):
        return head
    space = max(last.rfind(" "), last.rfind("\t"))
    if len(last) - space - 1 <= LONG_WORD:
        last = last[: space + 1] if space >= 0 else ""
    cut = _unclosed_inline(last)
    if cut is not None:
        last = last[:cut]
    if _MARKERS_ONLY.fullmatch(last):
        last = ""  # a bare "-" or "#" may still turn out to be an underline or a rule
    return head + last.rstrip(" \t")


_TABLE_ROW = re.compile(r"^ {0,3}\|", re.M)


def streaming_table(shown: str) -> int:
    """Offset of a table in a streaming tail (``-1`` if none): a table's column widths
    change with every row, so until its block completes it is held back (pending_table)
    or shown as its source lines, and rendered once at the end, instead of re-laid out
    (and re-sent) row by row."""
    if "|" not in shown:
        return -1
    m = _TABLE_ROW.search(shown)
    if m is None or _in_open_fence(shown[: m.start()]):
        return -1
    return m.start()


def open_fence(text: str) -> tuple[str, str] | None:
    """(opening run, language) if `text` is exactly one top-level fenced code block that
    is still open: its opening line at column 0, then complete lines, none closing it.
    Such a streaming tail grows by lines of code that render on their own (code_lines),
    so it need not be rendered whole again for every new line. None otherwise (and for
    info strings with escapes or entities, which only the parser reads right)."""
    if not text.endswith("\n") or text[:1] not in "`~":
        return None
    first, _, rest = text.partition("\n")
    m = _FENCE_LINE.match(first)
    if m is None or (m.group(1)[0] == "`" and "`" in m.group(2)):
        return None
    info = m.group(2).strip()
    if "\\" in info or "&" in info or closes_fence(rest, m.group(1)):
        return None
    return m.group(1), (info.split()[0] if info else "")


def closes_fence(code: str, run: str) -> bool:
    """Whether any line of `code` closes a fence opened with `run`."""
    if run[0] not in code:
        return False
    for line in code.split("\n"):
        body = line.lstrip(" ")
        if len(line) - len(body) <= 3 and body.startswith(run) and not body.rstrip(" ").strip(run[0]):
            return True
    return False


_NEWLINE = re.compile(r"\r\n?")  # what the parser reads as a line break besides \n


def parsed_newlines(text: str) -> str:
    """`text` with CRLF and a lone CR made LF, as `render`'s parser reads them (a model
    that writes CRLF: the lines of its streaming code block must show no CR, as the
    completed block shows none)."""
    return _NEWLINE.sub("\n", text) if "\r" in text else text


def code_lines(code: str, lang: str) -> list[Line]:
    """The lines `render` gives for these complete lines of code in a fence of `lang`,
    once their line breaks are the parser's (parsed_newlines); a CR left in is shown, as a
    block too big for the parser shows it."""
    return [_merge(line) for line in _code_lines(code, lang)]


def visible_code_line(safe: str) -> Line:
    """The line code_lines(line + "\\n", "") gives for one non-empty line of code that has
    been made visible already (`safe` = visible(line)): a megabyte on one line is made
    visible a piece at a time, and not again here."""
    return [("", _CODE_INDENT), ("md_code_block", safe)]


def _in_open_fence(head: str) -> bool:
    """Whether complete lines `head` leave a fenced code block open (top-level fences and
    fences in list items alike: only the fence lines themselves are looked at)."""
    if "```" not in head and "~~~" not in head:
        return False
    fence: tuple[str, int] | None = None
    for line in head.split("\n"):
        body = line.lstrip(" ")
        if body[:1] == ">":
            body = body.lstrip("> ")
        m = _FENCE_LINE.match(body) if body[:1] in "`~" else None
        if not m:
            continue
        run = m.group(1)
        if fence is None:
            if not (run[0] == "`" and "`" in m.group(2)):
                fence = (run[0], len(run))
        elif run[0] == fence[0] and len(run) >= fence[1] and not m.group(2).strip():
            fence = None
    return fence is not None


def _unclosed_inline(line: str) -> int | None:
    """Offset of the earliest inline opener in `line` that has no closer yet, or None."""
    cuts: list[int] = []
    plain = list(line)  # code spans blanked out, so their contents open nothing
    pos = 0
    while (m := _BACKTICKS.search(line, pos)) is not None:
        run = m.group()
        close = re.compile(r"(?<!`)" + run + r"(?!`)").search(line, m.end())
        if close is None:
            cuts.append(m.start())
            plain[m.start() :] = " " * (len(line) - m.start())
            break
        plain[m.start() : close.end()] = " " * (close.end() - m.start())
        pos = close.end()
    s = "".join(plain)
    for marker in ("**", "~~"):
        if s.count(marker) % 2:
            cuts.append(s.rfind(marker))
    singles = s.replace("**", "  ")
    lead = len(singles) - len(singles.lstrip(" "))  # a "* " there is a bullet
    stars = [i for i, c in enumerate(singles) if c == "*" and not (i == lead and singles[i + 1 : i + 2] in (" ", ""))]
    if len(stars) % 2:
        cuts.append(stars[-1])
    if "_" in s:  # (the look-behinds try every position: not for a line without one)
        opens = [m.start() for m in re.finditer(r"(?:^|(?<=[\s(]))_(?=\S)", s)]
        closes = [m.start() for m in re.finditer(r"(?<=\S)_(?=$|[\s.,;:!?)])", s)]
        if len(opens) > len(closes):
            cuts.append(opens[-1])
    bracket = s.rfind("[")
    if bracket >= 0:
        close = s.find("]", bracket)
        if close < 0 or (s[close + 1 : close + 2] == "(" and ")" not in s[close:]):
            cuts.append(bracket)
    return min(cuts) if cuts else None


class _Rx:
    """The line-scan patterns, compiled on first use (keeps the import cheap)."""

    def __init__(self) -> None:
        c = re.compile
        self.fence = c(r"(`{3,}|~{3,})(.*)")
        self.list_marker = c(r"([-+*]|[0-9]{1,9}[.)])( +|$)")
        self.quote = c(r" {0,3}> ?")
        self.atx = c(r"#{1,6}(?: |$)")
        self.hr = c(r"([-*_])(?: *\1){2,} *$")
        # CommonMark HTML blocks (as markdown-it-py implements them). Types 1-5 end at a
        # marker and may hold blank lines; types 6 and 7 end at a blank line; type 7
        # cannot interrupt a paragraph.
        self.html_1_5 = c(
            r"<(?:(?P<t1>script|pre|style|textarea)(?=\s|>|$)|(?P<t2>!--)|(?P<t3>\?)"
            r"|(?P<t5>!\[CDATA\[)|(?P<t4>![A-Za-z]))",
            re.IGNORECASE,
        )
        self.html_6 = c(
            r"</?(?:address|article|aside|base|basefont|blockquote|body|caption|center|col"
            r"|colgroup|dd|details|dialog|dir|div|dl|dt|fieldset|figcaption|figure|footer"
            r"|form|frame|frameset|h[1-6]|head|header|hr|html|iframe|legend|li|link|main"
            r"|menu|menuitem|nav|noframes|ol|optgroup|option|p|param|search|section"
            r"|summary|table|tbody|td|tfoot|th|thead|title|tr|track|ul)(?=\s|/?>|$)",
            re.IGNORECASE,
        )
        self.html_7 = c(
            r"(?:<[A-Za-z][A-Za-z0-9-]*(?:\s+[a-zA-Z_:][a-zA-Z0-9:._-]*(?:\s*=\s*"
            r"(?:[^\"'=<>`\x00-\x20]+|'[^']*'|\"[^\"]*\"))?)*\s*/?>"
            r"|</[A-Za-z][A-Za-z0-9-]*\s*>)\s*$"
        )


_HTML_END = {"t1": "t1", "t2": "-->", "t3": "?>", "t4": ">", "t5": "]]>"}
_T1_END = re.compile(r"</(?:script|pre|style|textarea)>", re.I)


def _html_ends(end: str, line: str) -> bool:
    """Whether `line` ends an HTML block of CommonMark's types 1-5 as markdown-it reads it:
    `end` is the marker ("t1": any of the four closing tags, whichever opened it), searched
    in the whole line, the opening one included (`<!-->` and `<?>` end where they open)."""
    return bool(_T1_END.search(line)) if end == "t1" else end in line


_rx: _Rx | None = None


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _strip_quotes(quote: re.Pattern[str], line: str, max_depth: int) -> tuple[int, str]:
    """Strip up to `max_depth` block-quote markers; return (depth, rest)."""
    depth = 0
    while depth < max_depth:
        m = quote.match(line)
        if not m:
            break
        depth += 1
        line = line[m.end():]
    return depth, line


def _interrupts(rx: _Rx, b: str) -> bool:
    """Does this line (indentation removed) start a block that interrupts a paragraph?"""
    if rx.atx.match(b) or rx.hr.match(b):
        return True
    m = rx.fence.match(b)
    if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
        return True
    return b.startswith("<") and bool(rx.html_1_5.match(b) or rx.html_6.match(b))


def completed_prefix(text: str, *, start: int = 0, first: bool = False, end: int | None = None) -> int:
    """Offset up to which `text` holds only completed top-level Markdown blocks (with
    `first`, the first such offset after `start`: where the block at `start` ends).

    With `end` (just after a newline), only `text[:end]` is read, as if the text ended
    there: a caller bounds the work of one call that way. The result is a boundary of the
    whole text too (a boundary is only taken once the lines after it settle it), if maybe
    not the last one.

    `start` may be a value this function returned for an earlier, shorter version of the
    same text: the scan then resumes there (the result is the same, the cost is only
    that of the text after `start`), so a streaming UI that calls it after every chunk
    stays linear overall instead of quadratic.

    A hand-written O(len(text)) line scan (no Markdown parser); only complete lines
    (ended by a newline) change its state. The prefix ends either

    * after a blank line (spaces/tabs only) outside any open fenced code block
      (```` ``` ```` / ``~~~``, opened and not yet closed, including a fence inside a
      list item) and outside any open HTML block (the CommonMark kinds that may hold
      blank lines: ``<pre>``, ``<script>``, ``<style>``, ``<textarea>``, ``<!-- -->``,
      ``<? ?>``, ``<!X >``, ``<![CDATA[ ]]>``); or
    * after the newline that ends the closing fence of a top-level fenced code block
      (no blank line needed after it).

    The scan also follows HTML blocks that end at a blank line (``<div>``, a lone tag
    line) so that a fence line inside one is not taken for a fence, and the content
    columns of open list items so that a fence inside an item (no boundary after it,
    closed when the item ends) is told from a top-level one.

    It is conservative where a blank line may not end the block before it:

    * after a line indented 4+ columns (an indented code block continues across blank
      lines) the blank line only counts once the next non-blank line starts at column 0;
    * inside a list (a list-item line was seen since the last boundary) the blank line
      only counts once the next non-blank line is complete, starts at column 0 and is
      not a list item: otherwise the blank line may belong to the list (a "loose" list,
      or a paragraph or code block continuing an item). So a list is completed only once
      the block after it has started, and a trailing blank line never completes a list.

    Known cases where ``render(head) + [[]] + render(tail)`` can differ from
    ``render(head + tail)`` at ``len(head) == completed_prefix(head + tail)``:
    reference-style links (``[x]: url``) whose definition is on the other side of the
    split; a lone carriage return used as a line break; HTML "type 7" blocks (a lone
    tag line such as ``<span>``) right after a line the scan mistakes for, or not for,
    paragraph text; a line that only lazily continues a list paragraph but looks like a
    list item the scan then mis-nests a fence under.
    """
    global _rx
    rx = _rx = _rx or _Rx()
    quote, list_marker, hr = rx.quote, rx.list_marker, rx.hr
    n = len(text) if end is None else min(max(end, 0), len(text))
    pos = prefix = min(max(start, 0), n)
    pending = -1  # end offset of the last blank line waiting for the next line
    in_list = False  # a list item was seen since the last boundary
    items: list[int] = []  # content columns of the (top-level) list items still open
    last_indented = False  # last non-blank line was indented 4+ columns
    prev_blank = True
    prev_para = False  # last line was paragraph text (a lone-tag HTML line continues it)
    # open fence: (char, length, content column of its container, quote depth, top-level)
    fence: tuple[str, int, int, int, bool] | None = None
    html_end = ""  # open HTML block: its end marker, "" for one ended by a blank line
    html_open = False
    html_base = html_depth = 0

    first_from = prefix if first else n + 1
    while pos < n:
        if prefix > first_from:
            return prefix
        nl = text.find("\n", pos, n)
        if nl < 0:
            nl = n
        stop = nl + 1
        complete = nl < n
        line = text[pos:nl]
        line = line.removesuffix("\r")
        if "\t" in line:
            line = line.expandtabs(4)
        blank = not line.strip(" ")

        if fence is not None:
            if not complete:
                break
            fchar, flen, base, fdepth, ftop = fence
            depth, body = _strip_quotes(quote, line, fdepth) if fdepth else (0, line)
            ind = _indent(body)
            if blank and not fdepth:
                pos = stop  # a blank line inside the code
                continue
            if blank or depth < fdepth or ind < base:
                fence = None  # its container ended: process this line normally below
            else:
                b = body[ind:]
                if (
                    ind - base <= 3
                    and b.startswith(fchar * flen)
                    and not b.rstrip(" ").strip(fchar)
                ):
                    fence = None
                    prev_blank, prev_para = False, False
                    if ftop:
                        prefix, pending = stop, -1
                        in_list, items, last_indented = False, [], False
                pos = stop
                continue

        if html_open:
            if not complete:
                break
            depth, body = _strip_quotes(quote, line, html_depth) if html_depth else (0, line)
            if blank and (html_depth or not html_end):
                html_open = False  # ended; the blank line is processed below
            elif not blank and (depth < html_depth or _indent(body) < html_base):
                html_open = False  # its container ended: process this line below
            else:
                if html_end and _html_ends(html_end, line):
                    html_open = False
                    prev_blank, prev_para = False, False
                pos = stop
                continue

        if blank:
            if not complete:
                break  # may still become text
            if pending < 0 and not in_list and not last_indented:
                prefix = stop
            else:
                pending = stop
            prev_blank, prev_para = True, False
            pos = stop
            continue

        ind = _indent(line)
        if pending >= 0:
            # does the blank line before this one end a top-level block?
            if ind > 0:
                pending = -1  # may continue a list item or an indented code block
            elif in_list:
                if not complete:
                    break
                if not list_marker.match(line):
                    prefix = pending
                    in_list, items = False, []
                pending = -1
            else:
                prefix, pending = pending, -1
        if not complete:
            break

        # -- state changes from this complete, non-blank line
        depth, body = _strip_quotes(quote, line, 64)
        bind = _indent(body)
        b = body[bind:]
        base = 0
        is_item = False
        para = True
        if depth:
            items = [c for c in items if c <= ind]  # a quote never continues a paragraph
        else:
            containing = [c for c in items if c <= bind]
            base = containing[-1] if containing else 0
            # Items whose content column this line is left of end here, unless the line
            # may be a lazy continuation of a paragraph (blocks that interrupt one cannot).
            if len(containing) < len(items) and (
                prev_blank or not prev_para or (bind - base <= 3 and _interrupts(rx, b))
            ):
                items = containing
            if bind - base >= 4 and not prev_para:
                para = False  # indented code
            elif list_marker.match(b) and not hr.match(b):
                cols = list(containing)
                col = bind
                while (m := list_marker.match(b)) and not hr.match(b):
                    after = b[m.end():]
                    spaces = m.end() - len(m.group(1))
                    if not after or spaces > 4:
                        cols.append(col + len(m.group(1)) + 1)
                        b = after.lstrip(" ")
                        break
                    col += m.end()
                    cols.append(col)
                    b = after
                items, base, is_item, in_list = cols, cols[-1], True, True
                para = bool(b)
        if para and bind - base <= 3:
            m = rx.fence.match(b)
            if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
                top = depth == 0 and base == 0 and not is_item
                fence = (m.group(1)[0], len(m.group(1)), base, depth, top)
                para = False
            elif b.startswith("<"):
                if hm := rx.html_1_5.match(b):
                    para = False
                    html_end = _HTML_END.get(hm.lastgroup or "", ">")
                    html_open = not _html_ends(html_end, b)
                elif rx.html_6.match(b) or (not prev_para and rx.html_7.match(b)):
                    html_end, html_open, para = "", True, False
                html_base, html_depth = base, depth
            elif rx.atx.match(b) or hr.match(b):
                para = False
        last_indented = depth == 0 and ind >= 4
        prev_blank, prev_para = False, para
        pos = stop

    return prefix
