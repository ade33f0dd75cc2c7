"""Statements written once, for the few reads every submission and every diagnosis make.

The ORM builds and compiles its SQL anew on every call: for a join with a few conditions that is
about a millisecond of CPU, more than PostgreSQL spends answering it, and a submission made
several such reads (docs/benchmarks.md, "Where the per-diagnosis overhead went"). The hot reads
are written as SQL with `%s` parameters, in the dialect common to PostgreSQL and SQLite, each by
the app that owns its tables (accounts.selectors, billing_tiers.selectors; a statement reading
several apps' tables composes their fragments), with these helpers, which turn the rows into
model instances with the same converters the ORM applies (JSON decoded, SQLite's strings made
datetimes and UUIDs), so callers get what the ORM would give. Everything else stays ORM.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

from django.db import DEFAULT_DB_ALIAS, connection, connections, models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Field, Model
from django.db.models.expressions import Col

# A model field of any kind: django-stubs' Field is generic in the types it sets and gets.
ModelField: TypeAlias = "Field[Any, Any]"

if TYPE_CHECKING:
    # django-stubs' name for a value a cursor takes as a parameter (None, numbers, text, dates…)
    from django.db.backends.utils import _SQLType as SQLValue

M = TypeVar("M", bound=Model)
# SQLCompiler.get_converters' kind: (value, expression, connection) -> value
Converter = Callable[[object, Col, BaseDatabaseWrapper], object]


def columns(model: type[Model], alias: str) -> str:
    """The model's columns, in field order, for a SELECT list: `t."id", t."name", …`."""
    quote = connection.ops.quote_name
    return ", ".join(f"{alias}.{quote(field.column)}" for field in _fields(model))


def param(model: type[Model], field_name: str, value: object) -> SQLValue:
    """`value` as the database takes it for that field (a UUID as SQLite's text, a datetime in
    UTC as SQLite's string): the conversion the ORM makes of a filter's value."""
    field = model._meta.get_field(field_name)
    assert isinstance(field, Field)
    return field.get_db_prep_value(value, connection, prepared=False)


# A row's values are whatever the driver returns for each column: the caller, which wrote the
# SELECT list, unpacks them into the types it knows.
Row: TypeAlias = tuple[Any, ...]


def fetch_all(sql: str, params: Sequence[SQLValue]) -> list[Row]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def instance(model: type[M], values: Sequence[object]) -> M:
    """A model instance from the values of `columns(model, …)` in a row, as the ORM loads one."""
    db = _thread_connection()
    converted = []
    for value, (expression, converters) in zip(values, _converters(model), strict=True):
        for converter in converters:
            value = converter(value, expression, db)
        converted.append(value)
    return model.from_db(db.alias, _attnames(model), converted)


def insert(instance: Model) -> None:
    """Saves a new instance as `Model.objects.create` would (every concrete field, `auto_now_add`
    and `auto_now` filled in, values prepared by their fields), with a statement made once per
    model. The instance must carry its primary key (a UUID default does)."""
    with connection.cursor() as cursor:
        cursor.execute(_insert_sql(type(instance)), insert_values(instance))
    saved(instance)


def insert_values(instance: Model) -> list[SQLValue]:
    """A new instance's values for its INSERT (`insert`'s, `insert_selecting`'s), in field order."""
    db = _thread_connection()
    values: list[SQLValue] = []
    for field, plain in _insert_fields(type(instance)):
        value = getattr(instance, field.attname) if plain else None
        if not plain or not (value is None or type(value) is str):
            value = field.get_db_prep_save(field.pre_save(instance, add=True), db)
        values.append(value)
    return values


# Fields whose preparation gives back a `str` or None as it is: a plain CharField's or
# TextField's `pre_save` reads the attribute and its `get_db_prep_save` only makes a str of what
# is not one. A submission's two rows have 18 such fields of 38, and Django's chain of calls
# for each was a tenth of the INSERTs' client side (docs/benchmarks.md).
_PLAIN_TEXT = (models.CharField, models.TextField)


@cache
def _insert_fields(model: type[Model]) -> tuple[tuple[ModelField, bool], ...]:
    """The model's concrete fields, in field order, each with whether its value, when a `str`
    or None, goes to the database unchanged (a field of exactly `_PLAIN_TEXT`'s classes)."""
    return tuple((field, type(field) in _PLAIN_TEXT) for field in _fields(model))


def _thread_connection() -> BaseDatabaseWrapper:
    """The thread's connection object itself. `django.db.connection` is a proxy that looks it up
    (in an asgiref Local) on every attribute read, and a field's preparation or conversion reads
    several: for a row of 30 fields that was a third of the values' cost."""
    return connections[DEFAULT_DB_ALIAS]


def saved(instance: Model) -> None:
    """Marks an instance whose row was inserted as the ORM's save does: no longer new."""
    instance._state.adding = False
    instance._state.db = connection.alias


@cache
def insert_selecting(model: type[Model], source: str) -> str:
    """`insert`'s INSERT with its values selected `FROM source` rather than given as VALUES, for
    a data-modifying CTE (PostgreSQL) that adds the row once for each row `source` returns: not
    at all when it returns none. Its parameters are `insert_values`'s.

    A parameter in a SELECT list is not typed from the column it goes to, as in VALUES, so each
    is cast to its column's type (a character column's without its length: a cast to
    `varchar(n)` would cut a longer value where the ORM's INSERT fails on it)."""
    casts = ", ".join(f"%s::{_cast_type(field)}" for field in _fields(model))
    return f"{_insert_into(model)} SELECT {casts} FROM {source}"  # noqa: S608 - names only


def _cast_type(field: ModelField) -> str:
    db_type = field.cast_db_type(connection)  # type: ignore[attr-defined]  # not in the stubs
    if db_type is None:
        raise TypeError(f"{field} has no type to cast to")
    return re.sub(r"^(varchar)\(\d+\)$", r"\1", db_type)


@cache
def _insert_sql(model: type[Model]) -> str:
    marks = ", ".join("%s" for _ in _fields(model))
    return f"{_insert_into(model)} VALUES ({marks})"


def _insert_into(model: type[Model]) -> str:
    """`INSERT INTO "table" ("column", …)`, every concrete field in field order."""
    quote = connection.ops.quote_name
    names = ", ".join(quote(field.column) for field in _fields(model))
    return f"INSERT INTO {quote(model._meta.db_table)} ({names})"


@cache
def _fields(model: type[Model]) -> tuple[ModelField, ...]:
    return tuple(model._meta.concrete_fields)


@cache
def _attnames(model: type[Model]) -> list[str]:
    return [field.attname for field in _fields(model)]


@cache
def _converters(model: type[Model]) -> list[tuple[Col, list[Converter]]]:
    # What SQLCompiler.get_converters gives for each column: the backend's, then the field's.
    table = model._meta.db_table
    result = []
    for field in _fields(model):
        expression = field.get_col(table)
        result.append(
            (
                expression,
                connection.ops.get_db_converters(expression)
                + expression.get_db_converters(connection),
            )
        )
    return result
