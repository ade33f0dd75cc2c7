"""What a catalogue entry holds, as msgspec structs: the one definition of its fields.

The files' JSON Schema (`schema.json`) is generated from these structs, as the result's is from
`rootcause.result`, and decoding a file (`rootcause.catalogue.decode_entry`) checks the same
constraints.

Optional fields default to UNSET, not to their meaning (`kind` "error", `collateral` false), so
that an entry converted back to JSON (`entry_data`) is exactly what its file says: the
encyclopedia stores and shows that, and the catalogue version is a digest of it. Read them
through the properties that apply the defaults (`FingerprintSignal.signal_kind`,
`Fingerprints.is_collateral`).
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType

# In the order the encyclopedia shows them (CATEGORIES keeps this order; the schema sorts it).
Category = Literal[
    "memory",
    "distributed",
    "cuda",
    "hardware",
    "numerics",
    "programming",
    "data",
    "checkpoint",
    "environment",
    "compile",
    "serving",
]
Severity = Literal["high", "medium", "low"]
Framework = Literal[
    "PyTorch",
    "DeepSpeed",
    "HF Trainer",
    "Lightning",
    "accelerate",
    "Megatron-LM",
    "vLLM",
    "JAX",
    "TensorFlow",
    "NCCL",
    "CUDA",
]
SignalKind = Literal["error", "support"]
# The questions readers of the reference entry find answered for every failure class, in the
# reference's order (tests/encyclopedia/test_catalogue_faq.py requires one of each per entry),
# and "live": what `rootcause run` / `rootcause watch` would have shown, and when.
FaqTopic = Literal[
    "hardware-or-software",
    "fix-time",
    "inference",
    "confirm",
    "recurrence",
    "scaling",
    "monitor",
    "live",
]

Slug = Annotated[str, Meta(pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$")]
Command = Annotated[str, Meta(min_length=3)]
# A list of at least one string (tags, observations, causes, steps…).
Strings = Annotated[list[str], Meta(min_length=1)]
# A signal's numeric condition: named groups compared, `free > 2 * req` or `reserved - allocated >
# req` (see docs/fingerprints.md).
Numeric = Annotated[
    str, Meta(pattern=r"^[a-z_]+ *(- *[a-z_]+ *)?(>|<|>=|<=) *[0-9.]*( *\* *)?[a-z_]*$")
]


class _Part(Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """Base of every struct here: a misspelt field is an error, not a silently ignored key.

    Frozen and keyword-only (each subclass says so again: msgspec applies them per class), so
    that the fields keep the files' order, optional ones among required ones.
    """


class Symptom(_Part, kw_only=True, frozen=True):
    symptom: str
    why: str


class Fix(_Part, kw_only=True, frozen=True):
    steps: Strings
    command: Command


class Verification(_Part, kw_only=True, frozen=True):
    command: Command
    expect: str


class CodeExample(_Part, kw_only=True, frozen=True):
    stack: str
    language: str
    title: str | UnsetType = UNSET
    code: str


class Reference(_Part, kw_only=True, frozen=True):
    title: str
    url: Annotated[str, Meta(pattern="^https://")]


class Faq(_Part, kw_only=True, frozen=True):
    """A question and its answer; `topic` marks the standard questions (FaqTopic)."""

    topic: FaqTopic | UnsetType = UNSET
    q: str
    a: str


class FingerprintSignal(_Part, kw_only=True, frozen=True):
    """One signal of an entry's fingerprint; docs/fingerprints.md says what each field does."""

    id: Annotated[str, Meta(pattern="^[a-z0-9-]+$")]
    pattern: Annotated[str, Meta(min_length=3)]
    weight: Annotated[float, Meta(gt=0, le=1)]
    kind: SignalKind | UnsetType = UNSET
    within_lines: Annotated[int, Meta(ge=1, le=500)] | UnsetType = UNSET
    in_frame: str | UnsetType = UNSET
    numeric: Numeric | UnsetType = UNSET
    # holds only where the log ends inside this line's traceback, before its exception line (a
    # paste cut mid-traceback: the deepest frames are all there is of the failure)
    cut_traceback: bool | UnsetType = UNSET
    # reads a figure the training loop logs on every step (a loss, a grad norm), not an error
    # line: `rootcause run`/`watch` read it in a sample of the newest lines once a second rather
    # than in every block (rootcause/live/buffer.py says why)
    figure: bool | UnsetType = UNSET
    # what would settle a diagnosis that rests on this signal alone (every error signal of the
    # entry that held has one): a bare crash signal, a paste cut before its exception line.
    # The result says it among the missing facts and in the words beside the confidence.
    decided_by: Annotated[str, Meta(min_length=20)] | UnsetType = UNSET

    @property
    def signal_kind(self) -> SignalKind:
        return "error" if isinstance(self.kind, UnsetType) else self.kind


class Fingerprints(_Part, kw_only=True, frozen=True):
    collateral: bool | UnsetType = UNSET
    signals: Annotated[list[FingerprintSignal], Meta(min_length=2)]

    @property
    def is_collateral(self) -> bool:
        """A failure that usually follows from another elsewhere (a watchdog timeout)."""
        return self.collateral is True


class Entry(_Part, kw_only=True, frozen=True):
    """A rootcause encyclopedia entry: one failure class, as `entries/<slug>.yaml` holds it."""

    slug: Slug
    title: Annotated[str, Meta(min_length=5)]
    category: Category
    tags: Strings
    severity: Severity
    quick_answer: Annotated[str, Meta(min_length=80)]
    mechanism: Annotated[str, Meta(min_length=120)]
    observe: Strings
    symptoms: Annotated[list[Symptom], Meta(min_length=1)]
    affected: Annotated[list[Framework], Meta(min_length=1)]
    checklist: Annotated[list[str], Meta(min_length=2)]
    signatures: Strings
    root_causes: Strings
    fix: Fix
    prevention: Strings
    verification: Verification
    code_examples: list[CodeExample] | UnsetType = UNSET
    references: Annotated[list[Reference], Meta(min_length=1)]
    related: list[str]
    faq: list[Faq] | UnsetType = UNSET
    fingerprints: Fingerprints


def json_schema() -> dict[str, object]:
    """The JSON Schema (2020-12) of an entry file."""
    schema: dict[str, object] = msgspec.json.schema(Entry)
    return schema
