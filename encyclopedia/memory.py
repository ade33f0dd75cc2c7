"""Training-memory estimator: bytes per GPU for the model states of one data-parallel rank.

Pure Python (no Django) so the API, the pages and the offline CLI share one formula. It counts the
persistent model states only -- weights, gradients, optimizer states and fp32 master weights -- and
never activations, temporary buffers, the CUDA context or allocator fragmentation.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import TypedDict

OPTIMIZERS = ("adamw", "adam", "sgd+momentum", "adamw-8bit", "adafactor", "adafactor+beta1")
PRECISIONS = ("fp32", "mixed", "bf16")
PRECISION_LABELS = {
    "fp32": "fp32 (weights, gradients and optimizer states in fp32)",
    "mixed": "bf16/fp16 mixed precision with fp32 master weights",
    "bf16": "pure bf16 (no fp32 master copy)",
}
OPTIMIZER_LABELS = {
    "adamw": "AdamW",
    "adam": "Adam",
    "sgd+momentum": "SGD with momentum",
    "adamw-8bit": "8-bit AdamW (bitsandbytes)",
    "adafactor": "Adafactor (beta1=None, the default: factored second moment only)",
    "adafactor+beta1": "Adafactor with beta1 (adds a first moment)",
}
# The spellings people type, from the frameworks' own flags, to the three precisions above.
# Lightning's "bf16-mixed"/"16-mixed" and Hugging Face's --bf16/--fp16 are mixed precision (AMP:
# half-precision compute, fp32 master weights the optimizer updates); "bf16-true" is pure bf16.
# A bare "bf16" keeps its meaning here, pure bf16, as the API has always taken it.
PRECISION_ALIASES = {
    **{name: "fp32" for name in ("32", "32-true", "fp32", "float32", "tf32", "full")},
    **{
        name: "mixed"
        for name in (
            "mixed",
            "amp",
            "16",
            "16-mixed",
            "fp16",
            "fp16-mixed",
            "float16",
            "half",
            "bf16-mixed",
            "--bf16",
            "--fp16",
            "bf16=true",
            "fp16=true",
            "--bf16=true",
            "--fp16=true",
        )
    },
    **{name: "bf16" for name in ("bf16", "bf16-true", "bf16-pure", "pure-bf16", "bfloat16")},
}
COMPONENTS = ("weights", "gradients", "optimizer_states", "master_weights")
# Largest model we accept: far above any real one, small enough that the arithmetic stays exact.
MAX_PARAMS = 10**15
MAX_DP_SIZE = 1_000_000

_SUFFIXES = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "g": 10**9, "t": 10**12}
# A parameter count as people write it: 7000000000 or 7,000,000,000 (or 7_000_000_000), 7e9, 70e9
# or 1.3e9, 7B, 1.3b, 350M, 1.5T (G for B, K for thousands). Every spelling it matches is above 0
# and below MAX_PARAMS (15 digits at most; a mantissa of 1 to 3 digits before its point, with an
# exponent of 14, 13 or 12 at most; under 1,000 of a suffix, T being 10^12), so the pattern alone
# says what the API takes: it is the API's check and its OpenAPI `pattern`, read as JSON Schema
# reads one (`re.search`). A fraction of a parameter is rounded up.
_DECIMALS = r"(?:\.[0-9]{1,9})?"
PARAMS_PATTERN = (
    r"^(?:"
    r"([1-9][0-9]{0,14}|[1-9][0-9]{0,2}(?:,[0-9]{3}){1,4}|[1-9][0-9]{0,2}(?:_[0-9]{3}){1,4})"
    r"|("
    rf"[1-9]{_DECIMALS}[eE]\+?(?:1[0-4]|[0-9])"
    rf"|[1-9][0-9]{_DECIMALS}[eE]\+?(?:1[0-3]|[0-9])"
    rf"|[1-9][0-9]{{2}}{_DECIMALS}[eE]\+?(?:1[0-2]|[0-9]))"
    rf"|([1-9][0-9]{{0,2}}{_DECIMALS}|0?\.[0-9]{{0,8}}[1-9][0-9]{{0,8}})"
    r"([kKmMbBgGtT])"
    r")$"
)
_PARAMS_RE = re.compile(PARAMS_PATTERN)
PARAMS_REFUSED = "not a count like 7e9, 7000000000, 7,000,000,000 or 7B (above 0, under 1e15)"


_STATE_NOTES = {
    "adamw": "AdamW keeps two moments per parameter (exp_avg, exp_avg_sq), {width} B each.",
    "adam": "Adam keeps two moments per parameter (exp_avg, exp_avg_sq), {width} B each.",
    "sgd+momentum": "SGD with momentum keeps one momentum buffer per parameter, {width} B.",
}


class Estimate(TypedDict):
    """What `estimate` answers; the API's MemoryEstimateSerializer and the page render it."""

    params: int
    optimizer: str
    precision: str
    zero_stage: int
    dp_size: int
    bytes_per_param: dict[str, int]
    sharded: list[str]
    bytes: dict[str, int]
    total_bytes: int
    gpu_memory_bytes: int | None
    fits: bool | None
    formula: str
    notes: list[str]


class EstimateError(ValueError):
    """An input the estimator cannot use; the message says which and why."""


def parse_params(value: object) -> int:
    """7000000000, 7e9, "7e9", "7B", "1.3b", "350M", "7,000,000,000" -> a positive integer (a
    string as PARAMS_PATTERN says)."""
    if isinstance(value, bool):
        raise EstimateError("params must be a number such as 7e9 or 7B")
    if isinstance(value, int):
        count = value
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise EstimateError("params must be finite")
        count = round(value)
    elif isinstance(value, str):
        return _parse_params_text(value)
    else:
        raise EstimateError("params must be a number such as 7e9 or 7B")
    if count <= 0:
        raise EstimateError("params must be positive")
    if count > MAX_PARAMS:
        raise EstimateError(f"params must be at most {MAX_PARAMS:.0e}")
    return count


def _parse_params_text(value: str) -> int:
    match = _PARAMS_RE.search(value)
    if match is None:
        raise EstimateError(f"params {value!r}: {PARAMS_REFUSED}")
    # Groups by number: the pattern is also the document's (ECMA-262 has no `(?P<name>`).
    plain, scientific, amount, suffix = match.groups()
    if plain:
        return int(plain.replace(",", "").replace("_", ""))
    exact = Decimal(scientific) if scientific else Decimal(amount) * _SUFFIXES[suffix.lower()]
    return math.ceil(exact)


def normalize_precision(value: str) -> str:
    """ "bf16-mixed", "16-mixed", "fp16", "--bf16", "bf16-true", "32-true", … -> fp32, mixed or
    bf16; a spelling it does not know is returned as it came, for the caller to refuse."""
    name = value.strip().lower().replace("_", "-").replace(" ", "-")
    return PRECISION_ALIASES.get(name, name)


def normalize_optimizer(value: str) -> str:
    # "sgd+momentum" arrives as "sgd momentum" when a query string is not percent-encoded.
    name = value.strip().lower().replace(" ", "+").replace("_", "-")
    return {"sgd-momentum": "sgd+momentum", "adamw8bit": "adamw-8bit"}.get(name, name)


def _bytes_per_param(optimizer: str, precision: str) -> dict[str, int]:
    low = precision in ("mixed", "bf16")
    weights = 2 if low else 4
    # Under mixed precision the optimizer runs on the fp32 master copy, so its states are fp32;
    # in pure bf16 torch creates them with zeros_like(param), i.e. in bf16.
    state_width = 2 if precision == "bf16" else 4
    states = {
        "adamw": 2 * state_width,
        "adam": 2 * state_width,
        "sgd+momentum": 1 * state_width,
        "adamw-8bit": 2,
        # the factored second moment is a row and a column vector per matrix: O(rows + cols),
        # nothing per parameter; beta1 adds a full first moment
        "adafactor": 0,
        "adafactor+beta1": 1 * state_width,
    }[optimizer]
    return {
        "weights": weights,
        "gradients": weights,
        "optimizer_states": states,
        "master_weights": 4 if precision == "mixed" else 0,
    }


def _sharded(zero_stage: int) -> set[str]:
    # DeepSpeed ZeRO: stage 1 partitions optimizer states and the fp32 master weights it keeps
    # with them, stage 2 adds gradients, stage 3 adds the weights themselves.
    shards = set()
    if zero_stage >= 1:
        shards |= {"optimizer_states", "master_weights"}
    if zero_stage >= 2:
        shards.add("gradients")
    if zero_stage >= 3:
        shards.add("weights")
    return shards


def _gb(n: float) -> str:
    return f"{n / 1e9:,.2f} GB"


def human_bytes(n: int) -> str:
    """Both units, because GPU vendors sell "80 GB" cards that hold 80 GiB."""
    return f"{n / 1e9:,.2f} GB ({n / 2**30:,.2f} GiB)"


def estimate(
    *,
    params: object,
    optimizer: str,
    precision: str,
    zero_stage: int,
    dp_size: int,
    gpu_memory_bytes: int | None = None,
) -> Estimate:
    """Bytes per GPU for each model-state component, their total, the formula, and `fits`."""
    count = parse_params(params)
    optimizer = normalize_optimizer(optimizer)
    if optimizer not in OPTIMIZERS:
        raise EstimateError(f"optimizer must be one of {', '.join(OPTIMIZERS)}")
    precision = normalize_precision(precision)
    if precision not in PRECISIONS:
        raise EstimateError(
            f"precision must be one of {', '.join(PRECISIONS)} (or a framework's spelling: "
            "bf16-mixed, 16-mixed, fp16, --bf16, bf16-true, 32-true)"
        )
    if isinstance(zero_stage, bool) or not isinstance(zero_stage, int) or not 0 <= zero_stage <= 3:
        raise EstimateError("zero_stage must be 0, 1, 2 or 3")
    if isinstance(dp_size, bool) or not isinstance(dp_size, int) or not 1 <= dp_size <= MAX_DP_SIZE:
        raise EstimateError(f"dp_size must be an integer from 1 to {MAX_DP_SIZE}")
    if gpu_memory_bytes is not None and gpu_memory_bytes <= 0:
        raise EstimateError("gpu_memory_bytes must be positive")

    per_param = _bytes_per_param(optimizer, precision)
    sharded = _sharded(zero_stage)
    components: dict[str, int] = {}
    lines = []
    for name in COMPONENTS:
        divisor = dp_size if name in sharded else 1
        # Ceiling division: the largest shard is what must fit on a GPU.
        size = math.ceil(per_param[name] * count / divisor)
        components[name] = size
        shard_text = f" / {dp_size} ranks (ZeRO-{zero_stage})" if divisor > 1 else ""
        lines.append(
            f"{name.replace('_', ' ')}: {per_param[name]:g} B/param x {count:,} params"
            f"{shard_text} = {size:,} B ({_gb(size)})"
        )
    total = sum(components.values())
    terms = " + ".join(
        f"{per_param[name]:g} [{name.replace('_', ' ')}]"
        + (f" / {dp_size}" if name in sharded and dp_size > 1 else "")
        for name in COMPONENTS
    )
    lines.insert(0, f"bytes per GPU = P x ({terms}), P = {count:,} parameters")
    lines.append(
        f"total: {total:,} B ({_gb(total)}) per GPU, model states only (activations not counted)"
    )

    notes = [
        "Activations, temporary buffers, the CUDA context (~0.5-1 GB) and allocator fragmentation "
        "are not counted: leave headroom on top of this total.",
    ]
    if optimizer in _STATE_NOTES:
        notes.append(_STATE_NOTES[optimizer].format(width=4 if precision != "bf16" else 2))
    if precision == "mixed":
        notes.append(
            "Mixed precision: 2-byte weights and gradients plus a 4-byte fp32 master copy "
            "that the optimizer updates."
        )
    if precision == "bf16":
        notes.append(
            "Pure bf16: the optimizer states are kept in bf16 (zeros_like of the "
            "parameters) and there is no fp32 master copy."
        )
    if optimizer == "adamw-8bit":
        notes.append(
            "8-bit AdamW: two 1-byte moments per parameter; the block-wise quantisation "
            "statistics and the small tensors bitsandbytes keeps in 32 bit are ignored."
        )
    if optimizer == "adafactor":
        notes.append(
            "Adafactor (beta1=None, the default in Hugging Face and T5): the factored second "
            "moment is a row and a column vector per matrix, O(rows + cols), counted as 0 "
            "B/param. With beta1 set, choose 'Adafactor with beta1': a full first moment."
        )
    if optimizer == "adafactor+beta1":
        notes.append(
            f"Adafactor with beta1: a first moment of {per_param['optimizer_states']} B/param; "
            "the factored second moment, O(rows + cols) per matrix, is not counted."
        )
    if zero_stage and dp_size == 1:
        notes.append("ZeRO with one data-parallel rank shards nothing.")

    fits = None if gpu_memory_bytes is None else total <= gpu_memory_bytes
    return {
        "params": count,
        "optimizer": optimizer,
        "precision": precision,
        "zero_stage": zero_stage,
        "dp_size": dp_size,
        "bytes_per_param": per_param,
        "sharded": [name for name in COMPONENTS if name in sharded and dp_size > 1],
        "bytes": components,
        "total_bytes": total,
        "gpu_memory_bytes": gpu_memory_bytes,
        "fits": fits,
        "formula": "\n".join(lines),
        "notes": notes,
    }
