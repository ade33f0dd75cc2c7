"""Every list endpoint validates and caps its pagination parameters (plumbing/pagination.py)."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from encyclopedia.services import load_catalogue
from plumbing.problems import PROBLEM_CONTENT_TYPE
from tests.catalogue import make_entry

# Endpoints paged by limit and offset, each readable by acme's token.
LIMIT_OFFSET = [
    "/api/v1/organization/members",
    "/api/v1/organization/invitations",
    "/api/v1/organization/domains",
    "/api/v1/organization/masking-rules",
    "/api/v1/tokens",
    "/api/v1/encyclopedia/",
    "/api/v1/failures",
    "/api/v1/webhooks",
    "/api/v1/email-alerts",
    "/api/v1/evaluation/requests",
]
HISTORY = "/api/v1/diagnoses"

BAD = [
    ("limit", "100000000000000000000"),
    ("limit", "abc"),
    ("limit", "0"),
    ("limit", "-1"),
    ("limit", "1.5"),
    ("offset", "100000000000000000000"),
    ("offset", "-3"),
    ("offset", "x"),
    ("offset", "2147483648"),
]


@pytest.fixture
def catalogue(db: Any) -> None:
    """Two entries: what is paged here is the parameters, not the shipped catalogue."""
    load_catalogue(entries=[make_entry("first-entry"), make_entry("second-entry")])


@pytest.fixture
def owner_api(acme_scale: Any, alice: Any) -> APIClient:
    # On Scale: the alerts' lists answer only there.
    client = APIClient()
    client.force_login(alice)
    return client


def _is_problem(response: Any, status: int) -> None:
    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"].startswith(PROBLEM_CONTENT_TYPE)


@pytest.mark.parametrize("path", LIMIT_OFFSET)
@pytest.mark.parametrize(("name", "value"), BAD)
def test_a_bad_limit_or_offset_is_a_400_problem(
    owner_api: Any, catalogue: Any, path: str, name: str, value: str
) -> None:
    response = owner_api.get(path, {name: value})
    _is_problem(response, 400)
    assert name in response.json()["errors"]


@pytest.mark.parametrize("path", LIMIT_OFFSET)
def test_a_limit_above_the_maximum_is_capped(owner_api: Any, catalogue: Any, path: str) -> None:
    response = owner_api.get(path, {"limit": "5000", "offset": "2147483647"})
    assert response.status_code == 200
    assert response.json()["results"] == []
    first = owner_api.get(path, {"limit": "5000"})
    assert len(first.json()["results"]) <= 100


def test_the_encyclopedia_caps_its_pages_at_100(api: Any, catalogue: Any) -> None:
    body = api.get("/api/v1/encyclopedia/", {"limit": "100000"}).json()
    assert len(body["results"]) == min(100, body["count"])
    assert "limit=100&" in (body["next"] or "limit=100&")


@pytest.mark.parametrize(
    ("params", "name"),
    [
        ({"page_size": "100000000000000000000"}, "page_size"),
        ({"page_size": "0"}, "page_size"),
        ({"page_size": "many"}, "page_size"),
        ({"cursor": "not-a-cursor"}, "cursor"),
        ({"cursor": "cD0yMDIx"}, "cursor"),  # base64 of "p=2021": decodes, but is no time
    ],
)
def test_bad_history_parameters_are_a_400_problem(
    acme_api: Any, params: dict[str, str], name: str
) -> None:
    response = acme_api.get(HISTORY, params)
    _is_problem(response, 400)
    assert name in response.json()["errors"]


def test_history_page_size_is_capped(acme_api: Any) -> None:
    response = acme_api.get(HISTORY, {"page_size": "5000"})
    assert response.status_code == 200


def test_no_list_in_the_schema_answers_a_bare_array(api: Any) -> None:
    """Every list is an object with `results` (and `next`): a bare array could only be unpaged."""
    document = api.get("/api/v1/schema", {"format": "json"}).json()
    schemas = document["components"]["schemas"]
    bare = []
    for path, item in document["paths"].items():
        ok = item.get("get", {}).get("responses", {}).get("200", {})
        schema = ok.get("content", {}).get("application/json", {}).get("schema", {})
        if "$ref" in schema:
            schema = schemas[schema["$ref"].rsplit("/", 1)[-1]]
        if schema.get("type") == "array":
            bare.append(path)
        elif schema.get("type") == "object" and "results" in schema.get("properties", {}):
            assert "next" in schema["properties"], path
    assert bare == []


def test_an_empty_cursor_is_the_first_page(acme_api: Any) -> None:
    assert acme_api.get(HISTORY, {"cursor": ""}).status_code == 200


def test_the_schema_gives_the_ranges_the_parameters_are_held_to(api: Any) -> None:
    paths = api.get("/api/v1/schema", {"format": "json"}).json()["paths"]
    ranges = {
        (path, p["name"]): (p["schema"].get("minimum"), p["schema"].get("maximum"))
        for path in ("/api/v1/encyclopedia/", "/api/v1/diagnoses")
        for p in paths[path]["get"].get("parameters", [])
        if p["name"] in ("limit", "offset", "page_size")
    }
    assert ranges == {
        ("/api/v1/encyclopedia/", "limit"): (1, 2**31 - 1),
        ("/api/v1/encyclopedia/", "offset"): (0, 2**31 - 1),
        ("/api/v1/diagnoses", "page_size"): (1, 2**31 - 1),
    }
