"""Each app owns the SQL that touches its tables: a hand-written statement (or fragment) that names
a table is in the app whose model the table is. Another app composes it through the owner's
public names (accounts.selectors.STANDING_ROWS_SQL, billing_tiers.selectors.QUOTA_USED_SQL …),
an import that import-linter's contracts see; a table named in another app's string they do not.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from django.apps import apps

from tests.source_code import docstring_ids

ROOT = Path(__file__).resolve().parents[2]
NOT_CHECKED = {"tests", "bench", "editors", "build"}


def _tables() -> dict[str, str]:
    """Every table of the project's own apps, and the package of the app that owns it."""
    packages = {config.label: config.name for config in apps.get_app_configs()}
    return {
        model._meta.db_table: packages[model._meta.app_label]
        for model in apps.get_models(include_auto_created=True)
        if (ROOT / packages[model._meta.app_label].split(".")[0]).is_dir()
    }


def foreign_tables(source: str, package: str) -> list[str]:
    """The tables of other apps that this module's strings name (its docstrings aside)."""
    tables = _tables()
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, sorted(tables))) + r")\b")
    tree = ast.parse(source)
    docstrings = docstring_ids(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) in docstrings:
                continue
            found += [
                f"line {node.lineno}: {table}"
                for table in pattern.findall(node.value)
                if tables[table] != package
            ]
    return found


def _modules() -> list[tuple[str, Path]]:
    return [
        (package.name, path)
        for package in sorted(ROOT.iterdir())
        if (package / "__init__.py").is_file() and package.name not in NOT_CHECKED
        for path in sorted(package.rglob("*.py"))
        if "migrations" not in path.parts
    ]


def test_no_module_names_another_apps_table() -> None:
    found = [
        f"{path.relative_to(ROOT)} {what}"
        for package, path in _modules()
        for what in foreign_tables(path.read_text(encoding="utf-8"), package)
    ]
    assert found == []


@pytest.mark.parametrize(
    ("package", "source"),
    [
        ("diagnosis", "SQL = 'SELECT used FROM billing_tiers_quotausage WHERE subject = %s'\n"),
        ("diagnosis", "def f(o):\n    return f'LEFT JOIN accounts_organization {o} ON …'\n"),
        ("config", "SQL = 'SELECT 1 FROM diagnosis_diagnosis'\n"),
    ],
)
def test_the_check_finds_another_apps_table_in_a_statement(package: str, source: str) -> None:
    assert foreign_tables(source, package)


def test_an_apps_own_tables_and_its_docstrings_are_its_own() -> None:
    assert foreign_tables("SQL = 'SELECT 1 FROM accounts_domain d'\n", "accounts") == []
    assert foreign_tables('"""Reads billing_tiers_quotausage (explained)."""\n', "diagnosis") == []
