"""The architecture, as the source shows it: only dashfloat/ui imports urwid (the agent,
the client and the tools run and are tested without a terminal), and threads talk in the
vocabulary of dashfloat/messages.py."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "dashfloat"


def imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def test_only_the_ui_package_imports_urwid():
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.parent.name == "ui":
            continue
        if any(name == "urwid" or name.startswith("urwid.") for name in imported_modules(path)):
            offenders.append(str(path.relative_to(PACKAGE.parent)))
    assert offenders == [], f"urwid imported outside dashfloat/ui: {offenders}"


def test_the_agent_llm_and_tools_never_import_the_ui():
    offenders = []
    for path in [PACKAGE / "agent.py", *sorted((PACKAGE / "llm").rglob("*.py")), *sorted((PACKAGE / "tools").rglob("*.py"))]:
        if any(name.startswith("dashfloat.ui") for name in imported_modules(path)):
            offenders.append(str(path.relative_to(PACKAGE.parent)))
    assert offenders == []
