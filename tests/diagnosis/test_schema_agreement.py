"""The OpenAPI document and the validation say the same thing, case by case: what schemathesis
(tests/diagnosis/test_schemathesis.py) found them disagreeing on, pinned so that it does not
depend on what a few generated examples reach."""

from __future__ import annotations

from typing import Any

import pytest
from drf_spectacular.generators import SchemaGenerator

from tests.diagnosis.logs import OOM_LOG

pytestmark = pytest.mark.django_db

# The required query parameters of an operation that has some, with a value it takes.
REQUIRED = {"/api/v1/tools/memory-estimate": {"params": "7B"}}


def _document() -> dict[str, Any]:
    document: dict[str, Any] = SchemaGenerator().get_schema(request=None, public=True)
    return document


def _optional_query_parameters() -> list[tuple[str, str]]:
    return [
        (path, parameter["name"])
        for path, item in _document()["paths"].items()
        if "{" not in path and "get" in item
        for parameter in item["get"].get("parameters", [])
        if parameter["in"] == "query" and not parameter.get("required", False)
    ]


def test_the_lists_and_tools_have_optional_query_parameters_to_check():
    # The parametrisation below reads the document; an empty one would check nothing.
    assert {name for _, name in _optional_query_parameters()} >= {
        "status",
        "page_size",
        "severity",
        "category",
        "limit",
        "optimizer",
    }


@pytest.mark.parametrize(("path", "name"), _optional_query_parameters())
def test_an_empty_query_value_is_the_parameter_left_out(acme_api, catalogue, path, name):
    parameter = next(
        p for p in _document()["paths"][path]["get"]["parameters"] if p["name"] == name
    )
    assert parameter["allowEmptyValue"] is True  # what the document says

    required = REQUIRED.get(path, {})
    left_out = acme_api.get(path, required)
    empty = acme_api.get(path, {**required, name: ""})

    assert left_out.status_code == 200, left_out.content
    assert empty.status_code == 200, empty.content
    # The same answer; the links to other pages carry the query as it came.
    links = {"next", "previous"}
    assert _without(empty.json(), links) == _without(left_out.json(), links)


def _without(body: dict[str, Any], keys: set[str]) -> dict[str, Any]:
    return {key: value for key, value in body.items() if key not in keys}


def test_an_empty_wait_does_not_wait(acme_api):
    created = acme_api.post("/api/v1/diagnoses", {"log": OOM_LOG}, format="json")
    assert created.status_code == 202, created.content

    polled = acme_api.get(f"/api/v1/diagnoses/{created.json()['id']}", {"wait": ""})

    assert polled.status_code == 200
    assert polled.json()["status"] == "queued"


@pytest.mark.parametrize(
    ("given", "count"),
    [
        ("7B", 7_000_000_000),
        ("70e9", 70_000_000_000),
        ("1.3E+9", 1_300_000_000),
        ("7,000,000,000", 7_000_000_000),
        ("0.5k", 500),
        ("999T", 999_000_000_000_000),
    ],
)
def test_a_params_count_the_pattern_allows_is_taken(acme_api, given, count):
    response = acme_api.get("/api/v1/tools/memory-estimate", {"params": given})

    assert response.status_code == 200, response.content
    assert response.json()["params"] == count


@pytest.mark.parametrize("given", ["0", "0k", "0.0B", "1e15", "1000T", " 7B", "seven", "7e-3"])
def test_a_params_count_the_pattern_refuses_is_400(acme_api, given):
    response = acme_api.get("/api/v1/tools/memory-estimate", {"params": given})

    assert response.status_code == 400
    assert "params" in response.json()["errors"]


LONG_HOST = "https://" + ".".join(["a" * 63] * 7) + "/runs/1"


@pytest.mark.parametrize(
    ("run_url", "status"),
    [
        (LONG_HOST, 202),  # a host name DNS could not hold is still a link to show
        ("HTTPS://ci.example/runs/1", 202),
        ("javascript:alert(1)", 400),
        ("ftp://ci.example/runs/1", 400),
        ("https://ci.example/runs/1 and more", 400),
        ("https://", 400),
    ],
)
def test_a_run_url_is_taken_as_its_pattern_says(acme_api, run_url, status):
    response = acme_api.post(
        "/api/v1/diagnoses", {"log": OOM_LOG, "run_url": run_url}, format="json"
    )

    assert response.status_code == status, response.content


def test_the_bodies_other_than_a_submission_are_json_and_a_form_is_415(acme_api):
    document = _document()
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if "requestBody" in operation and path != "/api/v1/diagnoses":
                assert list(operation["requestBody"]["content"]) == ["application/json"], (
                    method,
                    path,
                )

    form = acme_api.post("/api/v1/tokens", {"name": "ci", "scopes": ["diagnoses:read"]})

    assert form.status_code == 415


def test_a_nul_character_in_a_text_field_is_refused_as_the_document_says(acme_api):
    document = _document()
    log = document["components"]["schemas"]["DiagnosisSubmissionRequest"]["properties"]["log"]
    assert log["pattern"] == "^[^\\u0000]*$"

    response = acme_api.post("/api/v1/diagnoses", {"log": "a\x00b\n"}, format="json")

    assert response.status_code == 400
    assert "log" in response.json()["errors"]


def test_a_submission_without_a_body_is_refused_as_the_document_says(acme_api):
    assert _document()["paths"]["/api/v1/diagnoses"]["post"]["requestBody"]["required"] is True

    assert acme_api.post("/api/v1/diagnoses").status_code == 400
