"""No module over 600 lines and no function over 80 in `diagnosis/` and `workers/` (STYLE.md:
a module that grows past ~600 lines becomes a package; a long function becomes named steps).
Read with `ast`: a function's length is from its `def` to its last line (its decorators, such
as an OpenAPI declaration, are data about it, not its logic)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("diagnosis", "workers")
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80

# Known and on their way out; an entry whose file is gone or back within the limit is ignored.
EXEMPT_MODULES: set[str] = set()


def _modules() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py"))


def _functions(tree: ast.AST) -> list[tuple[str, int]]:
    """(qualified name, lines) of every function and method, nested ones included."""
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                assert child.end_lineno is not None
                found.append((f"{prefix}{child.name}", child.end_lineno - child.lineno + 1))
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


def test_the_packages_are_found() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in _modules()}

    assert "diagnosis/services/submission.py" in names
    assert "workers/tasks.py" in names


@pytest.mark.parametrize("path", _modules(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_module_or_function_is_too_long(path: Path) -> None:
    name = path.relative_to(ROOT).as_posix()
    source = path.read_text(encoding="utf-8")
    lines = len(source.splitlines())
    if name not in EXEMPT_MODULES:
        assert lines <= MAX_MODULE_LINES, f"{name} has {lines} lines: split it by concern"
    too_long = [(f, n) for f, n in _functions(ast.parse(source)) if n > MAX_FUNCTION_LINES]
    assert not too_long, f"{name}: functions over {MAX_FUNCTION_LINES} lines: {too_long}"


def test_the_check_sees_a_long_function_and_a_nested_one() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    source = f"class A:\n    def short(self):\n        def inner():\n{body.replace('    ', '            ')}\n"

    assert ("A.short.inner", MAX_FUNCTION_LINES + 1) in _functions(ast.parse(source))
