"""The one Markdown parser: markdown-it-py, CommonMark with tables and strikethrough.

The screen renders answers with it (ui/markdown.py) and /copy finds an answer's code
blocks with it (copyout.py): one parse, so the blocks /copy numbers are the blocks the
screen shows, in the same order. markdown-it is imported at first use (start-up time).
"""

from __future__ import annotations

# markdown-it silently drops content nested deeper than maxNesting (20 in the commonmark
# preset). Deeper input hits Python's recursion limit first and falls back to plain text.
MAX_NESTING = 1000

_parser = None


def parser():
    """The shared MarkdownIt instance (built once)."""
    global _parser
    if _parser is None:
        from markdown_it import MarkdownIt

        md = MarkdownIt("commonmark", {"maxNesting": MAX_NESTING})
        md.enable(["table", "strikethrough"])
        _parser = md
    return _parser
