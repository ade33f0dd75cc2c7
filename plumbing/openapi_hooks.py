"""drf-spectacular postprocessing that makes the document say what the validation does."""

from __future__ import annotations

from typing import Any


# drf-spectacular's OpenAPI document as nested dicts, edited in place by key (as
# plumbing/problems.py's hook reads it).
def empty_query_values_hook(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
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
