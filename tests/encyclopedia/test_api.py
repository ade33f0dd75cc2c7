"""The public encyclopedia API: list, detail, search and the memory estimator."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from encyclopedia import selectors, services
from encyclopedia.selectors import GATED_FIELDS, SEARCH_MAX_BYTES

LIST = "/api/v1/encyclopedia/"


def test_anonymous_list_has_free_fields_only(api: APIClient, small_catalogue: Any) -> None:
    response = api.get(LIST)
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 3
    # Ordered by category, then slug.
    assert [e["slug"] for e in body["results"]] == ["test-disk", "test-nccl", "test-oom"]
    for item in body["results"]:
        assert item["quick_answer"].startswith("The quick answer")
        assert item["checklist"]
        assert item["signatures"]
        assert item["symptoms"]
        assert not set(GATED_FIELDS) & set(item)
        assert sorted(item["locked"]) == sorted(GATED_FIELDS)
        assert item["url"] == f"/encyclopedia/{item['slug']}/"


def test_signed_in_list_has_everything(api: APIClient, small_catalogue: Any, alice: Any) -> None:
    api.force_login(alice)
    item = api.get(LIST, {"category": "memory"}).json()["results"][0]
    assert item["fix"] == {
        "steps": ["FIX-STEP-test-oom: use a smaller batch"],
        "command": "fixcmd-test-oom",
    }
    assert item["verification"]["command"] == "verifycmd-test-oom"
    assert item["prevention"] == ["PREVENTION-test-oom"]
    assert item["code_examples"][0]["code"] == "print('CODE-test-oom')"
    assert item["fingerprints"]["signals"][0]["id"] == "oom"
    assert item["locked"] == []


def test_token_callers_get_everything(acme_api: APIClient, small_catalogue: Any) -> None:
    item = acme_api.get(f"{LIST}test-oom/").json()
    assert item["fix"]["command"] == "fixcmd-test-oom"


@pytest.mark.parametrize(
    ("query", "slugs"),
    [
        ({"category": "distributed"}, ["test-nccl"]),
        ({"severity": "low"}, ["test-disk"]),
        ({"tag": "adam"}, ["test-oom"]),
        ({"tag": "cuda-oom"}, ["test-oom"]),
        ({"tag": "nope"}, []),
        ({"category": "memory", "severity": "low"}, []),
    ],
)
def test_list_filters(
    api: APIClient, small_catalogue: Any, query: dict[str, str], slugs: list[str]
):
    body = api.get(LIST, query).json()
    assert [e["slug"] for e in body["results"]] == slugs


def test_list_refuses_an_unknown_severity(api: APIClient, small_catalogue: Any) -> None:
    response = api.get(LIST, {"severity": "urgent"})
    assert response.status_code == 400
    assert response["Content-Type"] == "application/problem+json"
    assert "severity" in response.json()["errors"]


def test_list_pagination(api: APIClient, small_catalogue: Any) -> None:
    first = api.get(LIST, {"limit": 2}).json()
    assert first["count"] == 3
    assert [e["slug"] for e in first["results"]] == ["test-disk", "test-nccl"]
    assert first["next"] is not None
    second = api.get(first["next"]).json()
    assert [e["slug"] for e in second["results"]] == ["test-oom"]
    assert second["next"] is None


def test_list_query_count_does_not_grow_with_entries(
    api: APIClient, small_catalogue: Any, django_assert_num_queries: Any
) -> None:
    # One COUNT for the paginator and one SELECT for the page, however many entries.
    with django_assert_num_queries(2):
        assert api.get(LIST).status_code == 200
    services.load_catalogue(
        entries=small_catalogue
        + [{**small_catalogue[2], "slug": f"test-extra-{i}"} for i in range(10)]
    )
    with django_assert_num_queries(2):
        assert len(api.get(LIST).json()["results"]) == 13


def test_detail_gating(api: APIClient, small_catalogue: Any, bob: Any) -> None:
    anonymous = api.get(f"{LIST}test-oom/").json()
    assert "fix" not in anonymous
    assert "verification" not in anonymous
    assert anonymous["mechanism"].startswith("The mechanism of test-oom")
    assert anonymous["related"] == ["test-nccl"]
    api.force_login(bob)
    signed_in = api.get(f"{LIST}test-oom/").json()
    assert signed_in["fix"]["steps"] == ["FIX-STEP-test-oom: use a smaller batch"]


def test_detail_unknown_slug_is_a_problem_404(api: APIClient, small_catalogue: Any) -> None:
    response = api.get(f"{LIST}no-such-entry/")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/problem+json"
    assert response.json()["status"] == 404


def test_search_finds_the_entry_and_the_lines(api: APIClient, small_catalogue: Any) -> None:
    text = (
        "step 10 loss 2.31\n"
        "TEST-NCCL-HINT seen here\n"
        "Traceback (most recent call last):\n"
        "RuntimeError: TEST-OOM-BOOM: out of memory\n"
    )
    response = api.post(f"{LIST}search", {"text": text}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["catalogue_version"] == selectors.current_version()
    assert body["results"][0]["slug"] == "test-oom"
    assert body["results"][0]["url"] == "/encyclopedia/test-oom/"
    assert {"line": 4, "text": "RuntimeError: TEST-OOM-BOOM: out of memory"} in body["results"][0][
        "lines"
    ]
    # A support signal alone ranks below an error signal.
    slugs = [r["slug"] for r in body["results"]]
    assert "test-disk" not in slugs


def test_search_sees_an_admin_edit_at_once(api: APIClient, small_catalogue: Any) -> None:
    assert (
        api.post(f"{LIST}search", {"text": "disk is full xyz"}, format="json").json()["results"]
        == []
    )
    from encyclopedia.models import Entry

    entry = Entry.objects.get(slug="test-disk")
    data = {
        **entry.data,
        "fingerprints": {
            "signals": [
                {"id": "full", "pattern": "disk is full", "weight": 0.9},
                {"id": "errno", "pattern": "Errno 28", "weight": 0.3, "kind": "support"},
            ]
        },
    }
    services.update_entry(entry=entry, data=data)
    results = api.post(f"{LIST}search", {"text": "disk is full xyz"}, format="json").json()
    assert [r["slug"] for r in results["results"]] == ["test-disk"]


def test_search_no_match_is_empty(api: APIClient, small_catalogue: Any) -> None:
    response = api.post(f"{LIST}search", {"text": "all good, training finished"}, format="json")
    assert response.status_code == 200
    assert response.json()["results"] == []


def test_search_requires_text(api: APIClient, small_catalogue: Any) -> None:
    response = api.post(f"{LIST}search", {}, format="json")
    assert response.status_code == 400
    assert response["Content-Type"] == "application/problem+json"


def test_search_refuses_more_than_a_megabyte(api: APIClient, small_catalogue: Any) -> None:
    response = api.post(f"{LIST}search", {"text": "x" * (SEARCH_MAX_BYTES + 1)}, format="json")
    assert response.status_code == 413
    assert response["Content-Type"] == "application/problem+json"


def test_search_with_the_shipped_catalogue_finds_optimizer_oom(api: APIClient, db: Any) -> None:
    services.load_catalogue()
    text = (
        "[rank0]: Traceback (most recent call last):\n"
        '[rank0]:   File "/opt/train.py", line 88, in <module>\n'
        "[rank0]:     optimizer.step()\n"
        '[rank0]:   File "/usr/lib/python3/site-packages/torch/optim/adamw.py", line 606, '
        "in _multi_tensor_adamw\n"
        "[rank0]:     exp_avg_sq_sqrt = torch._foreach_sqrt(device_exp_avg_sqs)\n"
        "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 130.00 MiB. "
        "GPU 0 has a total capacity of 79.11 GiB of which 87.19 MiB is free.\n"
    )
    body = api.post(f"{LIST}search", {"text": text}, format="json").json()
    assert body["results"], body
    assert body["results"][0]["slug"] == "optimizer-state-oom"
    assert any("OutOfMemoryError" in line["text"] for line in body["results"][0]["lines"])


ESTIMATE = "/api/v1/tools/memory-estimate"


def test_memory_estimate_api_7b(api: APIClient, db: Any) -> None:
    response = api.get(
        ESTIMATE,
        {"params": "7B", "optimizer": "adamw", "precision": "mixed", "gpu_memory_gib": "80"},
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["bytes"] == {
        "weights": 14 * 10**9,
        "gradients": 14 * 10**9,
        "optimizer_states": 56 * 10**9,
        "master_weights": 28 * 10**9,
    }
    assert body["total_bytes"] == 112 * 10**9
    assert body["gpu_memory_bytes"] == 80 * 2**30
    assert body["fits"] is False
    assert "master weights: 4 B/param" in body["formula"]


def test_memory_estimate_api_70b_zero2(api: APIClient, db: Any) -> None:
    # "+" unencoded in a query string arrives as a space; both spellings work.
    body = api.get(
        f"{ESTIMATE}?params=70e9&optimizer=sgd+momentum&precision=mixed&zero_stage=2&dp_size=64"
    ).json()
    assert body["optimizer"] == "sgd+momentum"
    body = api.get(
        ESTIMATE, {"params": "70e9", "precision": "mixed", "zero_stage": "2", "dp_size": "64"}
    ).json()
    assert body["optimizer"] == "adamw"  # the default
    assert body["total_bytes"] == 140 * 10**9 + (2 + 8 + 4) * 70 * 10**9 // 64
    assert body["fits"] is None


@pytest.mark.parametrize(
    "query",
    [
        {"params": "-5"},
        {"params": "lots"},
        {},
        {"params": "7B", "zero_stage": 4},
        {"params": "7B", "dp_size": 0},
        {"params": "7B", "optimizer": "lion"},
        {"params": "7B", "precision": "fp8"},
        {"params": "7B", "gpu_memory_gib": -1},
    ],
)
def test_memory_estimate_api_bad_inputs(api: APIClient, db: Any, query: dict[str, Any]) -> None:
    response = api.get(ESTIMATE, query)
    assert response.status_code == 400
    assert response["Content-Type"] == "application/problem+json"
    assert response.json()["errors"]


def test_endpoints_are_in_the_openapi_schema(api: APIClient, db: Any) -> None:
    response = api.get("/api/v1/schema", {"format": "json"})
    assert response.status_code == 200
    schema = response.json()
    paths = schema["paths"]
    listing = paths["/api/v1/encyclopedia/"]["get"]
    assert {p["name"] for p in listing["parameters"]} == {
        "category",
        "tag",
        "severity",
        "limit",
        "offset",
    }
    assert "get" in paths["/api/v1/encyclopedia/{slug}/"]
    assert "post" in paths["/api/v1/encyclopedia/search"]
    estimate = paths["/api/v1/tools/memory-estimate"]["get"]
    assert {p["name"] for p in estimate["parameters"]} >= {"params", "optimizer", "zero_stage"}
    entry = schema["components"]["schemas"]["Entry"]
    assert {"fix", "verification", "locked"} <= set(entry["properties"])
    assert "fix" not in entry["required"]
