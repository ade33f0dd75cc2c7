"""Categories, severities and entry fields are written once, in the catalogue's entry struct (its
published schema is generated from it), and the encyclopedia's gate, serializers, model and page
order follow it."""

from __future__ import annotations

import json
from types import SimpleNamespace

from rest_framework.fields import ChoiceField

from encyclopedia import selectors
from encyclopedia.models import Entry
from encyclopedia.serializers import EntryFilterSerializer, EntrySerializer
from rootcause.catalogue import CATEGORIES, ENTRY_FIELDS, SCHEMA_PATH, SEVERITIES


def test_the_names_are_those_of_the_published_schema():
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    properties = schema["$defs"]["Entry"]["properties"]

    assert list(ENTRY_FIELDS) == list(properties)
    # The schema lists the values sorted; the names keep the encyclopedia's order.
    assert sorted(CATEGORIES) == properties["category"]["enum"]
    assert sorted(SEVERITIES) == properties["severity"]["enum"]
    assert CATEGORIES[:3] == ("memory", "distributed", "cuda")


def test_every_entry_field_is_either_free_or_gated_and_the_serializer_has_it():
    assert sorted(selectors.FREE_FIELDS + selectors.GATED_FIELDS) == sorted(ENTRY_FIELDS)
    assert set(EntrySerializer().fields) == set(ENTRY_FIELDS) | {"url", "locked"}


def test_the_api_and_the_model_accept_the_schema_values():
    fields = EntryFilterSerializer().fields
    category, severity = fields["category"], fields["severity"]
    assert isinstance(category, ChoiceField)
    assert isinstance(severity, ChoiceField)

    assert list(category.choices) == list(CATEGORIES)
    assert list(severity.choices) == list(SEVERITIES)
    assert [value for value, _ in Entry.severity.field.choices or ()] == list(SEVERITIES)


def test_the_index_groups_categories_in_the_schema_order():
    rows = [SimpleNamespace(category=c) for c in reversed(CATEGORIES)]

    groups = selectors.entries_by_category(rows)  # type: ignore[arg-type]

    assert [name for name, _ in groups] == list(CATEGORIES)
