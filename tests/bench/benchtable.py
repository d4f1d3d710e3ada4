"""The figure tables of `make bench`: rows of (figure, value, target, verdict), printed as a
Markdown table; a verdict of OVER is a figure that missed its target."""

from __future__ import annotations

HEAD = ("figure", "value", "target", "verdict")


def print_rows(rows) -> int:
    """Print `rows` (the first one the heading) as a Markdown table; how many are OVER."""
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    missed = 0
    for r in rows:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |")
        missed += r[3] == "OVER"
    return missed
