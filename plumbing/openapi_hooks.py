"""drf-spectacular postprocessing that makes the document say what the validation does."""

from __future__ import annotations

from typing import Any

# drf-spectacular's OpenAPI document, or a part of it, as nested dicts edited in place by key (as
# plumbing/problems.py's hook reads it): a JSON union would need a cast at every step.
Document = dict[str, Any]  # nested JSON read by key, as above


def empty_query_values_hook(result: Document, **kwargs: object) -> Document:
    """Every optional query parameter takes an empty value (`allowEmptyValue`), which is the same
    as leaving it out: `?status=` lists every status, `?wait=` does not wait, `?limit=` is the
    default page. That is how DRF reads a query string (an empty optional value is no value),
    how an HTML form with an untouched field sends it, and what the pagination does; the
    document said an empty value was invalid (an enum's `minLength: 1`, an integer) and the
    API took it. tests/diagnosis/test_schema_agreement.py holds every operation to it."""
    for path_item in result.get("paths", {}).values():
        for operation in path_item.values():
            if not isinstance(operation, dict):
                continue
            for parameter in operation.get("parameters", []):
                if parameter.get("in") == "query" and not parameter.get("required", False):
                    parameter["allowEmptyValue"] = True
    return result


# No NUL character: DRF's CharField refuses one (ProhibitNullCharactersValidator) in every field.
NO_NUL = "^[^\\u0000]*$"


def no_nul_in_text_hook(result: Document, **kwargs: object) -> Document:
    """Every free text a serializer reads (a request component's or form's string property, a
    query parameter's string) says that it may not hold a NUL character, as DRF's CharField
    refuses one with a 400. Strings with a format, an enum or a pattern of their own are left:
    none of them admits a NUL. A raw log body is not a serializer's field and keeps its NULs
    (rootcause/intake.py judges them by their share)."""
    schemas = result.get("components", {}).get("schemas", {})
    for name, component in schemas.items():
        if name.endswith("Request"):
            _no_nul_in_properties(component)
    for path_item in result.get("paths", {}).values():
        for operation in path_item.values():
            if not isinstance(operation, dict):
                continue
            for parameter in operation.get("parameters", []):
                if parameter.get("in") == "query":
                    _no_nul(parameter.get("schema", {}))
            content = operation.get("requestBody", {}).get("content", {})
            for media_type, body in content.items():
                if media_type in ("multipart/form-data", "application/x-www-form-urlencoded"):
                    _no_nul_in_properties(body.get("schema", {}))
    return result


def _no_nul_in_properties(schema: Document) -> None:
    for value in schema.get("properties", {}).values():
        _no_nul(value)
        _no_nul(value.get("items", {}))
        for branch in value.get("oneOf", []):
            _no_nul(branch)


def _no_nul(schema: Document) -> None:
    if (
        schema.get("type") == "string"
        and not schema.keys() & {"format", "enum", "pattern"}
        and schema.get("maxLength") != 0
    ):
        schema["pattern"] = NO_NUL
