"""`Any` only where a framework's types leave no other honest choice, each use saying why.

Every annotation that names `typing.Any` outside the tests carries a comment on its line or on
the line above it (Django's form and admin signatures, kombu's and gunicorn's untyped objects, a
JSON report read by key several levels down...), and their number may only go down: a new `Any`
either replaces an old one or comes with the change that lowers the budget. Read with `ast`, so
the word in prose ("Any other opcode...") is not counted.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKIPPED = {".venv", ".venv-realruns", "tests", "build", "node_modules", ".git"}
# Uses of `Any` (not its imports) outside the tests; lower it when one goes.
BUDGET = 48


def _sources() -> list[Path]:
    return sorted(
        path
        for path in ROOT.rglob("*.py")
        if not SKIPPED.intersection(path.relative_to(ROOT).parts)
    )


def _uses(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return sorted(
        {
            node.lineno
            for node in ast.walk(tree)
            if (isinstance(node, ast.Name) and node.id == "Any")
            or (isinstance(node, ast.Attribute) and node.attr == "Any")
        }
    )


def _all_uses() -> dict[str, list[int]]:
    found = {str(path.relative_to(ROOT)): _uses(path) for path in _sources()}
    return {name: lines for name, lines in found.items() if lines}


def test_every_any_says_why() -> None:
    silent = []
    for name, lines in _all_uses().items():
        text = (ROOT / name).read_text(encoding="utf-8").splitlines()
        for number in lines:
            here, above = text[number - 1], text[number - 2] if number > 1 else ""
            if "#" not in here and not above.lstrip().startswith("#"):
                silent.append(f"{name}:{number}: {here.strip()}")
    assert not silent, "an Any without a comment saying why:\n" + "\n".join(silent)


def test_any_only_goes_down() -> None:
    count = sum(len(lines) for lines in _all_uses().values())
    assert count <= BUDGET, f"{count} lines use Any, over the budget of {BUDGET}"
