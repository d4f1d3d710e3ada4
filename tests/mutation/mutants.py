"""Mutants of one Python source file, made from its AST and applied as text patches.

Each mutant changes one small thing (an operator, a constant, a condition, a statement) and
is applied to the source text at the node's exact position, so the rest of the file (its
comments, its formatting, its line numbers) stays as it was. Pure: no I/O, no imports of the
code under test.

Kinds:
  compare   ``<`` <-> ``<=``, ``>`` <-> ``>=``, ``==`` <-> ``!=``, ``is`` <-> ``is not``,
            ``in`` <-> ``not in``
  binop     ``+`` <-> ``-``, ``*`` <-> ``//``, ``/`` -> ``*``, ``%`` -> ``//``, ``|`` <-> ``&``,
            ``<<`` <-> ``>>`` (and the augmented ``+=`` forms)
  number    an int ``n`` -> ``n+1``, ``n-1``, ``0``; a float ``x`` -> ``x+1``, ``0.0``
  bool      ``True`` <-> ``False``
  not       ``not x`` -> ``x``; the test of an if/while/ternary/assert ``c`` -> ``not (c)``
  boolop    ``and`` <-> ``or``
  return    ``return x`` -> ``return None``
  delete    a call statement, a raise, an assert, an assignment to an attribute or item, an
            augmented assignment, a del: replaced by ``pass``
  loop      ``break`` <-> ``continue``
  slice     a slice bound ``b`` that is not a literal -> ``(b) + 1``, ``(b) - 1``

Not mutated: docstrings, string constants, annotations, ``if TYPE_CHECKING:`` blocks.
"""

from __future__ import annotations

import ast
import bisect
import hashlib
import re
from dataclasses import dataclass

COMPARE_SWAP = {
    ast.Lt: ("<", "<="), ast.LtE: ("<=", "<"), ast.Gt: (">", ">="), ast.GtE: (">=", ">"),
    ast.Eq: ("==", "!="), ast.NotEq: ("!=", "=="), ast.Is: ("is", "is not"),
    ast.IsNot: ("is not", "is"), ast.In: ("in", "not in"), ast.NotIn: ("not in", "in"),
}
BINOP_SWAP = {
    ast.Add: ("+", "-"), ast.Sub: ("-", "+"), ast.Mult: ("*", "//"), ast.FloorDiv: ("//", "*"),
    ast.Div: ("/", "*"), ast.Mod: ("%", "//"), ast.BitOr: ("|", "&"), ast.BitAnd: ("&", "|"),
    ast.LShift: ("<<", ">>"), ast.RShift: (">>", "<<"),
}
_COMPARE_RE = re.compile(rb"==|!=|<=|>=|<|>|\bis\s+not\b|\bnot\s+in\b|\bis\b|\bin\b")
_BINOP_RE = re.compile(rb"\*\*|//|<<|>>|[-+*/%|&^@]")
_BOOLOP_RE = re.compile(rb"\band\b|\bor\b")
_COMMENT_RE = re.compile(rb"#[^\n]*")


@dataclass(frozen=True)
class Mutant:
    """One mutation of `module`: bytes [start, end) of the source become `replacement`."""

    module: str       # path relative to the project root, e.g. dashfloat/tools/edit.py
    line: int         # the line the change starts on (1-based)
    end_line: int     # last line of the mutated node
    kind: str
    desc: str         # what changed, e.g. "`<` -> `<=`"
    start: int
    end: int
    replacement: bytes
    stmt_line: int = 0  # first line of the innermost statement around it (coverage lookup)
    ident: str = ""   # unique within the module: "line:col:desc"
    col: int = 0      # byte column of the change in its line
    # where it is, whatever moved around it: "Qual.name+line in the function:col:desc" and a
    # hash of that function's source (of the top-level statement outside any function). A
    # result is carried over to an edited module for a mutant whose function is unchanged
    scope_key: str = ""
    scope_hash: str = ""

    @property
    def lines(self) -> range:
        """The lines whose execution may run the mutated code."""
        return range(min(self.stmt_line or self.line, self.line), self.end_line + 1)

    def apply(self, source: bytes) -> bytes:
        return source[: self.start] + self.replacement + source[self.end:]


def _masked(text: bytes) -> bytes:
    """`text` (a gap between two operands) with its comments blanked, so an operator
    character inside a comment is never taken for the operator."""
    return _COMMENT_RE.sub(lambda m: b" " * len(m.group()), text)


class _Collector(ast.NodeVisitor):
    def __init__(self, module: str, source: bytes):
        self.module = module
        self.source = source
        self.line_start = [0]
        for i, byte in enumerate(source):
            if byte == 0x0A:
                self.line_start.append(i + 1)
        self.out: list[Mutant] = []
        self.statements: list[ast.stmt] = []

    def visit(self, node: ast.AST):
        if isinstance(node, ast.stmt):
            self.statements.append(node)
            try:
                return super().visit(node)
            finally:
                self.statements.pop()
        return super().visit(node)

    # -- positions ---------------------------------------------------------------------------
    def pos(self, line: int, col: int) -> int:
        return self.line_start[line - 1] + col   # ast columns are UTF-8 byte offsets

    def span(self, node: ast.AST) -> tuple[int, int]:
        return self.pos(node.lineno, node.col_offset), self.pos(node.end_lineno, node.end_col_offset)

    def add(self, node: ast.AST, kind: str, desc: str, start: int, end: int, replacement: bytes):
        stmt_line = self.statements[-1].lineno if self.statements else node.lineno
        self.out.append(Mutant(self.module, node.lineno, node.end_lineno or node.lineno, kind, desc,
                               start, end, replacement, stmt_line))

    def add_in_gap(self, node: ast.AST, kind: str, left: ast.AST, right: ast.AST,
                   pattern: re.Pattern, old: str, new: str):
        """Replace the operator `old` found between the end of `left` and the start of `right`."""
        gap_start = self.span(left)[1]
        gap_end = self.span(right)[0]
        match = pattern.search(_masked(self.source[gap_start:gap_end]))
        if match is None or re.sub(rb"\s+", b" ", match.group()) != old.encode():
            return   # an odd spelling: no mutant rather than a wrong one
        self.add(node, kind, f"`{old}` -> `{new}`", gap_start + match.start(),
                 gap_start + match.end(), new.encode())

    def text(self, node: ast.AST) -> bytes:
        start, end = self.span(node)
        return self.source[start:end]

    # -- what is not mutated ---------------------------------------------------------------
    def visit_If(self, node: ast.If):
        test = node.test
        if (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
                isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"):
            return
        self.negate(node.test)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign):
        if node.value is not None:
            self.visit(node.value)
        if not isinstance(node.target, ast.Name):
            self.delete(node)

    def visit_arg(self, node: ast.arg):
        return   # annotations

    def _visit_function(self, node):
        for decorator in node.decorator_list:
            self.visit(decorator)
        self.visit(node.args)
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:]   # the docstring
        for stmt in body:
            self.visit(stmt)

    visit_FunctionDef = _visit_function
    visit_AsyncFunctionDef = _visit_function

    def visit_ClassDef(self, node: ast.ClassDef):
        for child in node.decorator_list + node.bases + node.keywords:
            self.visit(child)
        for stmt in node.body:
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                continue   # docstring
            self.visit(stmt)

    def visit_Module(self, node: ast.Module):
        for stmt in node.body:
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                continue
            self.visit(stmt)

    def visit_Import(self, node):
        return

    visit_ImportFrom = visit_Import

    def visit_JoinedStr(self, node: ast.JoinedStr):
        return   # an f-string: text, like any other string

    # -- operators ---------------------------------------------------------------------------
    def visit_Compare(self, node: ast.Compare):
        left = node.left
        for op, right in zip(node.ops, node.comparators, strict=True):
            old, new = COMPARE_SWAP[type(op)]
            self.add_in_gap(node, "compare", left, right, _COMPARE_RE, old, new)
            left = right
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp):
        swap = BINOP_SWAP.get(type(node.op))
        if swap and isinstance(node.op, (ast.BitOr, ast.BitAnd)):
            # `&` binds tighter than `|`: swapping the token alone would regroup the
            # neighbours (`a | b | c` -> `a | b & c`), so the operands are parenthesised
            start, end = self.span(node)
            self.add(node, "binop", f"`{swap[0]}` -> `{swap[1]}`", start, end,
                     b"((" + self.text(node.left) + b") " + swap[1].encode() + b" ("
                     + self.text(node.right) + b"))")
        elif swap:
            self.add_in_gap(node, "binop", node.left, node.right, _BINOP_RE, *swap)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign):
        swap = BINOP_SWAP.get(type(node.op))
        if swap:
            old, new = swap[0] + "=", swap[1] + "="
            gap_start, gap_end = self.span(node.target)[1], self.span(node.value)[0]
            gap = _masked(self.source[gap_start:gap_end])
            index = gap.find(old.encode())
            if index >= 0:
                self.add(node, "binop", f"`{old}` -> `{new}`", gap_start + index,
                         gap_start + index + len(old), new.encode())
        self.delete(node)
        self.generic_visit(node)

    def visit_BoolOp(self, node: ast.BoolOp):
        old, new = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
        start, end = self.span(node)
        text = self.source[start:end]
        # every `and` of this BoolOp, and no other: the gaps between its operands
        pieces: list[tuple[int, int]] = []
        for left, right in zip(node.values, node.values[1:], strict=False):
            gap_start, gap_end = self.span(left)[1], self.span(right)[0]
            match = _BOOLOP_RE.search(_masked(self.source[gap_start:gap_end]))
            if match is None:
                break
            pieces.append((gap_start + match.start() - start, gap_start + match.end() - start))
        else:
            out = bytearray(text)
            for piece_start, piece_end in reversed(pieces):
                out[piece_start:piece_end] = new.encode()
            self.add(node, "boolop", f"`{old}` -> `{new}`", start, end, bytes(out))
        self.generic_visit(node)

    def visit_UnaryOp(self, node: ast.UnaryOp):
        if isinstance(node.op, ast.Not):
            start = self.span(node)[0]
            operand_start = self.span(node.operand)[0]
            self.add(node, "not", "`not x` -> `x`", start, operand_start, b"")
            self.generic_visit(node)
            return
        if isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
            value = node.operand.value
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                self.number(node, -value)
                return
        self.generic_visit(node)

    def negate(self, test: ast.AST):
        """``c`` -> ``not (c)`` for a condition that is not already a `not` or a comparison
        (those have their own mutants)."""
        if isinstance(test, ast.Compare) or (isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)):
            return
        if isinstance(test, ast.Constant):
            return
        start, end = self.span(test)
        self.add(test, "not", "`c` -> `not (c)`", start, end, b"not (" + self.text(test) + b")")

    def visit_While(self, node: ast.While):
        self.negate(node.test)
        self.generic_visit(node)

    def visit_IfExp(self, node: ast.IfExp):
        self.negate(node.test)
        self.generic_visit(node)

    def visit_Assert(self, node: ast.Assert):
        self.delete(node)
        self.generic_visit(node)

    # -- constants ---------------------------------------------------------------------------
    def visit_Constant(self, node: ast.Constant):
        value = node.value
        if isinstance(value, bool):
            start, end = self.span(node)
            self.add(node, "bool", f"`{value}` -> `{not value}`", start, end, str(not value).encode())
        elif isinstance(value, (int, float)):
            self.number(node, value)

    def number(self, node: ast.AST, value):
        start, end = self.span(node)
        if isinstance(value, int):
            candidates = [value + 1, value - 1] + ([0] if value not in (0, 1, -1) else [])
        else:
            candidates = [value + 1.0] + ([0.0] if value != 0 else [])
        seen = set()
        for new in candidates:
            if new == value or new in seen:
                continue
            seen.add(new)
            text = repr(new)
            replacement = f"({text})" if new < 0 else text
            self.add(node, "number", f"`{value!r}` -> `{text}`", start, end, replacement.encode())

    # -- statements --------------------------------------------------------------------------
    def delete(self, node: ast.stmt):
        start, end = self.span(node)
        self.add(node, "delete", f"`{_first_line(self.text(node))}` -> `pass`", start, end, b"pass")

    def visit_Expr(self, node: ast.Expr):
        if isinstance(node.value, (ast.Call, ast.Await, ast.Yield, ast.YieldFrom)):
            self.delete(node)
        self.generic_visit(node)

    def visit_Raise(self, node: ast.Raise):
        self.delete(node)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete):
        self.delete(node)
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign):
        if any(isinstance(t, (ast.Attribute, ast.Subscript)) for t in node.targets):
            self.delete(node)
        self.generic_visit(node)

    def visit_Return(self, node: ast.Return):
        value = node.value
        if value is not None and not (isinstance(value, ast.Constant) and value.value is None):
            start, end = self.span(value)
            self.add(node, "return", "`return x` -> `return None`", start, end, b"None")
        self.generic_visit(node)

    def visit_Break(self, node: ast.Break):
        start, end = self.span(node)
        self.add(node, "loop", "`break` -> `continue`", start, end, b"continue")

    def visit_Continue(self, node: ast.Continue):
        start, end = self.span(node)
        self.add(node, "loop", "`continue` -> `break`", start, end, b"break")

    def visit_Slice(self, node: ast.Slice):
        for bound in (node.lower, node.upper):
            if bound is None or isinstance(bound, ast.Constant) or (
                    isinstance(bound, ast.UnaryOp) and isinstance(bound.operand, ast.Constant)):
                continue
            start, end = self.span(bound)
            text = self.text(bound)
            for sign in (b"+", b"-"):
                self.add(bound, "slice", f"slice bound `b` -> `(b) {sign.decode()} 1`", start, end,
                         b"(" + text + b") " + sign + b" 1")
        self.generic_visit(node)


def _first_line(text: bytes, limit: int = 50) -> str:
    line = text.decode("utf-8", "replace").splitlines()[0].strip() if text else ""
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _scopes(tree: ast.Module, line_start: list[int], source: bytes) -> list[tuple[int, int, str, int, str]]:
    """(start byte, end byte, qualified name, first line, source hash) of every function
    (decorators included) and of every top-level statement: a mutant's scope is the
    innermost one around it."""
    out = []

    def span(node) -> tuple[int, int, int]:
        first = min([node, *getattr(node, "decorator_list", [])], key=lambda n: (n.lineno, n.col_offset))
        return (line_start[first.lineno - 1] + first.col_offset,
                line_start[node.end_lineno - 1] + node.end_col_offset, first.lineno)

    def walk(node, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + child.name
                if not isinstance(child, ast.ClassDef):
                    a, b, line = span(child)
                    out.append((a, b, name, line, hashlib.sha256(source[a:b]).hexdigest()[:16]))
                walk(child, name + ".")
            elif not isinstance(child, (ast.expr, ast.expr_context)):
                walk(child, prefix)

    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue  # a scope of its own (walk)
        a, b, line = span(node)
        name = getattr(node, "name", None) or ",".join(  # a constant's name; else its hash tells
            t.id for t in getattr(node, "targets", [getattr(node, "target", None)]) if isinstance(t, ast.Name))
        out.append((a, b, "<top>" + name, line, hashlib.sha256(source[a:b]).hexdigest()[:16]))
    walk(tree, "")
    return out


def _scope_of(scopes, start: int, end: int) -> tuple[str, int, str]:
    """(name, first line, hash) of the innermost scope holding bytes [start, end)."""
    best = None
    for a, b, name, line, digest in scopes:
        if a <= start and end <= b and (best is None or b - a < best[1] - best[0]):
            best = (a, b, name, line, digest)
    if best is None:
        return "<module>", 1, ""
    return best[2], best[3], best[4]


def mutants(module: str, source: bytes) -> list[Mutant]:
    """Every mutant of `source` (the text of `module`), in source order, each with a unique
    `ident`. Mutants whose result does not compile are dropped."""
    tree = ast.parse(source)
    collector = _Collector(module, source)
    collector.visit(tree)
    # byte ranges of the top-level statements (decorators included): a mutant compiles when
    # the one statement it changes does (a break outside its loop, a return outside its
    # function are errors within that statement), and compiling one statement instead of the
    # whole module for each of 2,000 mutants is minutes less
    tops = []
    for node in tree.body:
        first = min([node, *getattr(node, "decorator_list", [])], key=lambda n: (n.lineno, n.col_offset))
        tops.append((collector.line_start[first.lineno - 1] + first.col_offset,
                     collector.line_start[node.end_lineno - 1] + node.end_col_offset))
    starts = [a for a, _ in tops]
    scopes = _scopes(tree, collector.line_start, source)
    out: list[Mutant] = []
    seen: dict[str, int] = {}
    for mutant in sorted(collector.out, key=lambda m: (m.start, m.end, m.desc)):
        if mutant.apply(source) == source:
            continue
        i = bisect.bisect_right(starts, mutant.start) - 1
        if i >= 0 and tops[i][0] <= mutant.start and mutant.end <= tops[i][1]:
            first, last = tops[i]
            text = source[first:mutant.start] + mutant.replacement + source[mutant.end:last]
        else:
            text = mutant.apply(source)
        try:
            compile(text, module, "exec", dont_inherit=True)
        except SyntaxError:
            continue
        line = bisect.bisect_right(collector.line_start, mutant.start)   # where the change is
        col = mutant.start - collector.line_start[line - 1]
        key = f"{line}:{col}:{mutant.desc}"
        seen[key] = seen.get(key, 0) + 1
        suffix = f"#{seen[key]}" if seen[key] > 1 else ""
        name, first_line, digest = _scope_of(scopes, mutant.start, mutant.end)
        out.append(Mutant(**{**mutant.__dict__, "ident": key + suffix, "line": line, "col": col,
                             "scope_key": f"{name}+{line - first_line}:{col}:{mutant.desc}{suffix}",
                             "scope_hash": digest}))
    return out
