"""Finds where code or a page outside billing_tiers names a tier (tests/billing_tiers/
test_tier_table.py runs it over the project, and over planted violations to show it catches them).

A tier is named by: the `Tier` choices or a `TIER_*` setting; an `is_<tier>` name; a string that
is a tier's name ("scale"), as a comparison would use it (not a dict's key); or, in any other string or a template's
text, a tier's label as a capitalised word ("Alerts come with the Scale tier"). Docstrings and
comments are not read: they explain, they decide nothing and show nothing.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from billing_tiers.tiers import all_tiers
from tests.source_code import docstring_ids

ROOT = Path(__file__).resolve().parents[2]
# Not apps, or not code that runs: the tier table's own app, the tests, the benchmarks.
NOT_CHECKED = {"billing_tiers", "tests", "bench", "editors", "build"}
# Settings hold the numbers, keyed by the rows' names (the table reads them).
SETTINGS_MODULES = {"config/settings.py", "config/settings_test.py"}
# A label's word where it means something else than the tier. Each is a phrase as it appears.
OTHER_MEANINGS = (
    "Workplace domain",  # accounts' claimed e-mail domain (a page heading), not the tier
    "Anonymous callers",  # visitors of the API, not the tier's name
)
# Django's (and accounts' Actor's) "not signed in", which the lowest tier is named after.
OTHER_IDENTIFIERS = {"is_anonymous"}
_TEMPLATE_TAG = re.compile(r"\{%.*?%\}|\{\{.*?\}\}|\{#.*?#\}", re.DOTALL)


def checked_packages(root: Path = ROOT) -> list[Path]:
    """Every top-level package of the project but billing_tiers: the apps, config, workers, the
    library, and whatever package is added later."""
    return sorted(
        path
        for path in root.iterdir()
        if (path / "__init__.py").is_file()
        and path.name not in NOT_CHECKED
        and not path.name.startswith(".")
    )


def _labels_pattern() -> re.Pattern[str]:
    labels = "|".join(re.escape(row.label) for row in all_tiers())
    return re.compile(rf"\b({labels})\b")


def _text_findings(text: str) -> Iterator[str]:
    for phrase in OTHER_MEANINGS:
        text = text.replace(phrase, "")
    for match in _labels_pattern().finditer(text):
        yield f"the label {match.group(1)!r}"


def _dict_keys(tree: ast.AST) -> set[int]:
    """A dict's keys name a template's variable or a JSON field ({"anonymous": …} says a
    diagnosis is a visitor's); a comparison with a tier's name is a value, checked."""
    return {id(key) for node in ast.walk(tree) if isinstance(node, ast.Dict) for key in node.keys}


def _identifier(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.alias):
        return node.name
    if isinstance(node, ast.arg):
        return node.arg
    return None


def _names_a_tier(identifier: str, names: set[str]) -> bool:
    if identifier == "Tier" or identifier.startswith("TIER_"):
        return True
    return (
        identifier.startswith("is_")
        and identifier[3:] in names
        and identifier not in OTHER_IDENTIFIERS
    )


def python_findings(source: str) -> list[str]:
    """Where this module's code names a tier, as "line N: what"."""
    names = {row.name for row in all_tiers()}
    tree = ast.parse(source)
    docstrings = docstring_ids(tree)
    keys = _dict_keys(tree)
    findings: list[str] = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        identifier = _identifier(node)
        if identifier is not None and _names_a_tier(identifier, names):
            findings.append(f"line {line}: {identifier}")
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
        ):
            if node.value.strip().lower() in names and id(node) not in keys:
                findings.append(f"line {line}: the name {node.value!r}")
            findings.extend(f"line {line}: {what}" for what in _text_findings(node.value))
    return findings


def template_findings(text: str) -> list[str]:
    """Where a template's own text (not its tags and variables) names a tier."""
    return list(_text_findings(_TEMPLATE_TAG.sub("", text)))


def _files(packages: Iterable[Path]) -> Iterator[Path]:
    for package in packages:
        yield from (p for p in package.rglob("*") if p.is_file() and "migrations" not in p.parts)


def project_findings(root: Path = ROOT) -> list[str]:
    findings: list[str] = []
    for path in _files(checked_packages(root)):
        relative = path.relative_to(root).as_posix()
        if path.suffix == ".py" and relative not in SETTINGS_MODULES:
            found = python_findings(path.read_text(encoding="utf-8"))
        elif "templates" in path.parts and path.suffix in {".html", ".txt"}:
            found = template_findings(path.read_text(encoding="utf-8"))
        else:
            continue
        findings.extend(f"{relative} {what}" for what in found)
    return findings
