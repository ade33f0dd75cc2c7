"""The training-memory estimator against cases computed by hand."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from encyclopedia.memory import MAX_PARAMS, PARAMS_PATTERN, EstimateError, estimate, parse_params

GB = 10**9


def test_7b_adamw_mixed_precision_on_one_gpu_does_not_fit_80gb() -> None:
    result = estimate(
        params="7B",
        optimizer="adamw",
        precision="mixed",
        zero_stage=0,
        dp_size=1,
        gpu_memory_bytes=80 * GB,
    )
    # 2 B/param bf16 weights, 2 B/param grads, 8 B/param fp32 Adam moments, 4 B/param fp32 master.
    assert result["bytes"] == {
        "weights": 14 * GB,
        "gradients": 14 * GB,
        "optimizer_states": 56 * GB,
        "master_weights": 28 * GB,
    }
    assert result["total_bytes"] == 112 * GB
    assert result["fits"] is False
    assert result["sharded"] == []
    assert "8 B/param x 7,000,000,000 params" in result["formula"]
    assert "activations not counted" in result["formula"]


def test_70b_zero2_on_64_ranks_shards_grads_states_and_master_weights() -> None:
    result = estimate(params=70e9, optimizer="adamw", precision="mixed", zero_stage=2, dp_size=64)
    params = 70 * GB
    assert result["bytes"]["weights"] == 2 * params  # 140 GB: ZeRO-2 does not shard weights
    assert result["bytes"]["gradients"] == 2 * params // 64
    assert result["bytes"]["optimizer_states"] == 8 * params // 64
    assert result["bytes"]["master_weights"] == 4 * params // 64
    assert result["total_bytes"] == 140 * GB + (2 + 8 + 4) * params // 64  # 155.3125 GB
    assert result["fits"] is None
    assert result["sharded"] == ["gradients", "optimizer_states", "master_weights"]
    assert "/ 64 ranks (ZeRO-2)" in result["formula"]


@pytest.mark.parametrize(
    ("stage", "sharded"),
    [
        (0, set()),
        (1, {"optimizer_states", "master_weights"}),
        (2, {"optimizer_states", "master_weights", "gradients"}),
        (3, {"optimizer_states", "master_weights", "gradients", "weights"}),
    ],
)
def test_each_zero_stage_divides_what_it_shards(stage: int, sharded: set[str]) -> None:
    whole = estimate(params=8e9, optimizer="adam", precision="mixed", zero_stage=0, dp_size=8)
    split = estimate(params=8e9, optimizer="adam", precision="mixed", zero_stage=stage, dp_size=8)
    for name, size in split["bytes"].items():
        expected = whole["bytes"][name] // 8 if name in sharded else whole["bytes"][name]
        assert size == expected, name


@pytest.mark.parametrize(
    ("optimizer", "precision", "per_param"),
    [
        # (weights, gradients, optimizer states, master weights) in bytes per parameter
        ("adamw", "fp32", (4, 4, 8, 0)),
        ("adam", "bf16", (2, 2, 4, 0)),
        ("sgd+momentum", "fp32", (4, 4, 4, 0)),
        ("sgd+momentum", "mixed", (2, 2, 4, 4)),
        ("sgd+momentum", "bf16", (2, 2, 2, 0)),
        ("adamw-8bit", "mixed", (2, 2, 2, 4)),
        # beta1=None: the factored second moment is O(rows + cols), nothing per parameter
        ("adafactor", "mixed", (2, 2, 0, 4)),
        ("adafactor", "bf16", (2, 2, 0, 0)),
        ("adafactor+beta1", "mixed", (2, 2, 4, 4)),
        ("adafactor+beta1", "bf16", (2, 2, 2, 0)),
    ],
)
def test_bytes_per_parameter(optimizer: str, precision: str, per_param: tuple[int, ...]) -> None:
    result = estimate(
        params=1000, optimizer=optimizer, precision=precision, zero_stage=0, dp_size=1
    )
    assert tuple(result["bytes"].values()) == tuple(1000 * b for b in per_param)


def test_fits_compares_the_total_with_the_gpu() -> None:
    args: dict[str, Any] = {
        "params": "1B",
        "optimizer": "adamw",
        "precision": "mixed",
        "zero_stage": 0,
        "dp_size": 1,
    }
    assert estimate(**args, gpu_memory_bytes=16 * GB)["fits"] is True
    assert estimate(**args, gpu_memory_bytes=16 * GB - 1)["fits"] is False


def test_approximations_are_stated() -> None:
    result = estimate(
        params="1B", optimizer="adafactor", precision="mixed", zero_stage=1, dp_size=1
    )
    notes = " ".join(result["notes"])
    assert "Activations" in notes
    assert "counted as 0 B/param" in notes
    assert result["bytes_per_param"]["optimizer_states"] == 0  # what the note says
    assert "shards nothing" in notes


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (7_000_000_000, 7_000_000_000),
        ("7000000000", 7_000_000_000),
        ("7e9", 7_000_000_000),
        (7e9, 7_000_000_000),
        ("7B", 7_000_000_000),
        ("1.3b", 1_300_000_000),
        ("350M", 350_000_000),
        ("7,000,000,000", 7_000_000_000),
    ],
)
def test_parse_params(value: Any, expected: int) -> None:
    assert parse_params(value) == expected


@pytest.mark.parametrize(
    "changes",
    [
        {"params": -5},
        {"params": 0},
        {"params": "seven billion"},
        {"params": True},
        {"params": "1e20"},
        {"zero_stage": 4},
        {"zero_stage": -1},
        {"dp_size": 0},
        {"optimizer": "lion"},
        {"precision": "fp8"},
        {"gpu_memory_bytes": 0},
    ],
)
def test_bad_inputs_are_refused(changes: dict[str, Any]) -> None:
    args: dict[str, Any] = {
        "params": "7B",
        "optimizer": "adamw",
        "precision": "mixed",
        "zero_stage": 0,
        "dp_size": 1,
    }
    with pytest.raises(EstimateError):
        estimate(**{**args, **changes})


def test_sgd_momentum_survives_an_unencoded_plus() -> None:
    result = estimate(
        params="1B", optimizer="sgd momentum", precision="fp32", zero_stage=0, dp_size=1
    )
    assert result["optimizer"] == "sgd+momentum"


@pytest.mark.parametrize(
    ("spelling", "precision"),
    [
        ("bf16-mixed", "mixed"),  # Lightning
        ("16-mixed", "mixed"),
        ("16", "mixed"),
        ("fp16", "mixed"),  # Hugging Face fp16=True, DeepSpeed fp16
        ("--bf16", "mixed"),  # Hugging Face's flag: AMP with fp32 master weights
        ("--fp16", "mixed"),
        ("BF16_Mixed", "mixed"),
        ("bf16-true", "bf16"),  # Lightning's pure bf16
        ("bf16", "bf16"),
        ("32-true", "fp32"),
        ("32", "fp32"),
    ],
)
def test_the_frameworks_spellings_of_precision_are_taken(spelling: str, precision: str) -> None:
    result = estimate(params="7B", optimizer="adamw", precision=spelling, zero_stage=0, dp_size=1)
    canonical = estimate(
        params="7B", optimizer="adamw", precision=precision, zero_stage=0, dp_size=1
    )

    assert result["precision"] == precision
    assert result["bytes"] == canonical["bytes"]


@pytest.mark.django_db
@pytest.mark.parametrize("spelling", ["bf16-mixed", "16-mixed", "bf16-true", "fp16", "--bf16"])
def test_the_api_and_the_page_take_them_too(client: Any, spelling: str) -> None:
    query = {"params": "7B", "optimizer": "adamw", "precision": spelling}

    api = client.get("/api/v1/tools/memory-estimate", query)
    page = client.get("/encyclopedia/tools/memory-estimate/", query)

    assert api.status_code == 200, api.content
    assert api.json()["precision"] in ("mixed", "bf16")
    assert page.status_code == 200
    assert page.context["result"]["precision"] == api.json()["precision"]


def test_an_unknown_precision_names_the_accepted_spellings() -> None:
    with pytest.raises(EstimateError, match="bf16-mixed"):
        estimate(params="7B", optimizer="adamw", precision="fp8", zero_stage=0, dp_size=1)


@settings(max_examples=300, derandomize=True)
@given(st.from_regex(PARAMS_PATTERN))
def test_every_count_the_pattern_matches_is_in_range(value: str) -> None:
    # The pattern is the API's check and the document's: what it matches must be a count the
    # estimator takes, never one it then refuses.
    assert 0 < parse_params(value) < MAX_PARAMS
