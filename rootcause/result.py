"""The diagnosis result: what the engine produces, stage 3 completes, and the API, the pages and
the CLI render.

Stdlib dataclasses; msgspec turns them into JSON-ready builtins (`as_json`), reads stored JSON
back with validation (`result_from_json`) and writes their JSON Schema (`json_schema`, committed
as docs/result.schema.json and published in the OpenAPI document). The field names are the
stored and public JSON, so renaming one breaks stored diagnoses and API clients. Fields are
declared in the order the JSON has always listed them.

`python -m rootcause.result > docs/result.schema.json` rewrites the committed schema.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Annotated, Any, Literal, get_args

import msgspec
from msgspec import UNSET, Meta, UnsetType

from rootcause.catalogue import CATEGORIES
from rootcause.confidence import Level, confidence_level, confidence_words

Outcome = Literal["diagnosed", "no_match"]


@dataclass(frozen=True, kw_only=True)
class Failure:
    """The failure class the log was diagnosed as."""

    slug: Annotated[str, Meta(description="The catalogue entry; the public id of the class.")]
    title: str
    category: Annotated[str, Meta(extra_json_schema={"enum": list(CATEGORIES)})]
    confidence: Annotated[
        float, Meta(description="The measured probability that the diagnosis is right.", ge=0, le=1)
    ]
    confidence_level: Annotated[
        Level | UnsetType,
        Meta(description="certain (0.9 and above), likely (0.6 and above) or possible."),
    ] = UNSET
    confidence_words: Annotated[
        str | UnsetType,
        Meta(
            description='The confidence in words a person acts on: "certain", "likely", or '
            '"possible — confirm with …" naming what would decide it.'
        ),
    ] = UNSET


def failure_of(
    *, slug: str, title: str, category: str, confidence: float, confirm: str | None = None
) -> Failure:
    """A Failure with its confidence in words (rootcause.confidence); `confirm` is what would
    decide it, said when the figure is below "likely"."""
    return Failure(
        slug=slug,
        title=title,
        category=category,
        confidence=confidence,
        confidence_level=confidence_level(confidence),
        confidence_words=confidence_words(confidence, confirm),
    )


@dataclass(frozen=True, kw_only=True)
class RankRow:
    """One rank of a distributed job and the first failure it reported."""

    rank: int
    slug: str
    first_error_line: int
    collateral: Annotated[
        bool,
        Meta(
            description="The failure is a collateral class, or the rank failed after the "
            "initiating one."
        ),
    ]


@dataclass(frozen=True, kw_only=True)
class CollateralFailure:
    """A failure that followed from the root cause (a watchdog timeout on the ranks left
    waiting), and the ranks that reported it."""

    slug: str
    ranks: list[int]


@dataclass(frozen=True, kw_only=True)
class EvidenceLine:
    """A masked line of the log that the diagnosis rests on."""

    file: Annotated[
        str | UnsetType, Meta(description="The file of the line, when per-rank files were merged.")
    ] = UNSET
    line: Annotated[int, Meta(description="1-based line number in its file.")]
    text: str


@dataclass(frozen=True, kw_only=True)
class Remediation:
    """The fix of the failure class, and a command that shows whether the fix worked."""

    steps: list[str]
    command: str
    verification_command: str
    verification_expect: Annotated[
        str, Meta(description="What the verification command prints when the fix worked.")
    ]


@dataclass(frozen=True, kw_only=True)
class Launch:
    """How the run was launched, as far as the log shows it (null: the log does not show it).
    The fix and verification commands are written with it."""

    launcher: str | None
    script: str | None
    command: Annotated[str | None, Meta(description="The launch command line as the log shows it.")]
    batch_size: Annotated[int | None, Meta(description="The micro-batch size the log shows.")]
    world_size: int | None


# A collective's state in a rank's flight recorder (gloo's stay "scheduled": read as pending until
# the process group's last completed sequence id passes them).
CollectiveState = Literal["pending", "completed"]
COLLECTIVE_STATES: tuple[str, ...] = get_args(CollectiveState)


@dataclass(frozen=True, kw_only=True)
class HangCulprit:
    """A rank the hang verdict blames, how sure it is, and on what evidence."""

    rank: int
    confidence: Annotated[float, Meta(ge=0, le=1)]
    reason: str


@dataclass(frozen=True, kw_only=True)
class CollectiveSide:
    """The ranks that issued one version of a collective (op, sizes, dtypes)."""

    ranks: Annotated[str, Meta(description='The ranks as a person writes them: "0-6, 8-15".')]
    op: str
    sizes: Annotated[str, Meta(description="The input sizes, as JSON: [[4, 16]].")]
    dtypes: list[str]
    state: CollectiveState


@dataclass(frozen=True, kw_only=True)
class DivergentCollective:
    """The first collective the ranks did not all issue alike (or did not all reach)."""

    process_group: str
    seq: Annotated[int, Meta(description="The collective sequence id in its process group.")]
    sides: list[CollectiveSide]
    missing_ranks: Annotated[str, Meta(description="Ranks that never issued it, as ranges.")]


@dataclass(frozen=True, kw_only=True)
class StackGroup:
    """Ranks whose main thread stands at the same frame, and what that frame means."""

    ranks: str
    count: int
    frame: Annotated[str, Meta(description="The collective, or the program's own function.")]
    where: Annotated[str, Meta(description="file:line of the program's line.")]
    meaning: Literal[
        "collective", "data", "io", "lock", "input", "sleep", "host-sync", "rank-only-work",
        "skipped-collective", "compute", "unknown",
    ]  # fmt: skip
    meaning_text: str


@dataclass(frozen=True, kw_only=True)
class RankCollective:
    """A rank's last collective in its flight recorder."""

    rank: int
    process_group: str
    seq: int
    op: str
    sizes: str
    dtypes: list[str]
    state: CollectiveState


@dataclass(frozen=True, kw_only=True)
class HangSection:
    """What a bundle of per-rank files (flight-recorder dumps, stack dumps, logs) says about a
    hang. The verdict is also the diagnosis' `failure.slug`, a single culprit its
    `initiating_rank`."""

    verdict: Annotated[
        str,
        Meta(
            description="rank-stalled-before-collective, collective-mismatch, "
            "hang-inside-collective, straggler-rank, the class of a rank that died while the "
            "others waited on it, or none (the job progresses or finished)."
        ),
    ]
    summary: str
    world_size: int
    culprits: list[HangCulprit]
    divergent: DivergentCollective | None
    stacks: list[StackGroup]
    last_collectives: list[RankCollective]
    collateral_ranks: Annotated[str, Meta(description="Ranks that only waited on the culprit.")]
    missing: Annotated[list[str], Meta(description="Dumps the bundle lacks, by rank.")]
    artefacts: Annotated[dict[str, int], Meta(description="Files read, by kind.")]


@dataclass(frozen=True, kw_only=True)
class DiagnosisResult:
    """What rootcause concluded about one log (or one job's merged per-rank logs)."""

    outcome: Outcome
    failure: Failure | None
    root_cause: str | None
    initiating_rank: Annotated[
        int | None,
        Meta(
            description="The rank that failed first; null for single-process logs, or when "
            "no rank can be singled out."
        ),
    ]
    ranks: list[RankRow]
    collateral: list[CollateralFailure]
    evidence: list[EvidenceLine]
    missing_facts: Annotated[
        list[str], Meta(description="What to add to the log when the evidence cannot settle it.")
    ]
    encyclopedia_url: str | None
    catalogue_version: Annotated[
        str, Meta(description="The version of the catalogue the log was matched against.")
    ]
    remediation: Annotated[
        Remediation | UnsetType,
        Meta(description="Present only when the caller's tier includes fixes."),
    ] = UNSET
    masking: Annotated[
        dict[str, int], Meta(description="How many values of each kind were masked.")
    ] = field(default_factory=dict)
    launch: Annotated[
        Launch | UnsetType,
        Meta(description="How the run was launched, when the log shows any of it."),
    ] = UNSET
    hang: Annotated[
        HangSection | UnsetType,
        Meta(description="Present when the input was a bundle of per-rank files."),
    ] = UNSET


@dataclass(frozen=True, kw_only=True)
class MatchedLine:
    """A line of the searched text and the part of the entry it matched."""

    line: int  # 1-based, in the searched text
    text: str
    entry_field: str  # "fingerprint <id>", "signature", "title", "slug", "category" or "tag"
    entry_text: str  # that field's text (a fingerprint's pattern)


@dataclass(frozen=True, kw_only=True)
class SearchMatch:
    """A catalogue entry whose signals match pasted error text, with the lines that matched."""

    slug: str
    title: str
    score: float
    lines: list[EvidenceLine]  # the lines of the searched text that matched
    matched: list[MatchedLine] = field(default_factory=list)


def _ranks_phrase(ranks: list[int]) -> str:
    """rank 3; ranks 0 and 1; ranks 0, 1 and 2; ranks 0-6 and 8-15 for longer runs."""
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    if len(ranks) > 4:
        runs: list[list[int]] = []
        for rank in ranks:
            if runs and rank == runs[-1][-1] + 1:
                runs[-1].append(rank)
            else:
                runs.append([rank])
        parts = [p for r in runs for p in ([f"{r[0]}-{r[-1]}"] if len(r) > 2 else map(str, r))]
    else:
        parts = [str(rank) for rank in ranks]
    return "ranks " + (", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0])


def rank_sentence(initiating_rank: int | None, ranks: list[RankRow]) -> str:
    """Which rank failed first, in one sentence that says what the rank table says: the page, the
    CLI, alerts and the root cause all take it from here, so the words never contradict the
    rows. Empty when there is nothing to say (a single process, or one rank and none singled out).
    """
    others = sorted({row.rank for row in ranks if row.rank != initiating_rank})
    if initiating_rank is None:
        if len(others) < 2:
            return ""
        slugs = {row.slug for row in ranks}
        what = f"the same failure, {slugs.pop()}" if len(slugs) == 1 else "an error"
        return (
            f"No rank can be singled out as the first to fail: {_ranks_phrase(others)} "
            f"each reported {what}."
        )
    own = next((row for row in ranks if row.rank == initiating_rank), None)
    rank = f"Rank {initiating_rank}"
    if own is None and others:
        return (
            f"{rank} reported no error of its own while {_ranks_phrase(others)} reported "
            "collateral ones: it is the rank they waited for, so it most likely failed first."
        )
    if own is None:
        return (
            f"{rank} most likely failed first, from what other lines (the launcher's) say of "
            "it: none of its own output is in the log."
        )
    if own.collateral:
        also = f" like those of {_ranks_phrase(others)}" if others else ""
        return (
            f"{rank} most likely failed first, but its own error ({own.slug}) is collateral"
            f"{also}: what started the failure is not in the log."
        )
    if not others:
        return f"{rank} failed first."
    return f"{rank} failed first; the failures of {_ranks_phrase(others)} followed from it."


def as_json(value: DiagnosisResult | SearchMatch) -> dict[str, Any]:  # see below
    """JSON-ready builtins; unset fields are left out."""
    # Not JSONValue: the apps read the result back by its known shape (result["failure"]
    # ["slug"]), which a JSON union would make a cast at every step.
    return msgspec.to_builtins(value)


def result_from_json(data: object) -> DiagnosisResult:
    """A stored or received result, validated; msgspec.ValidationError names the bad field.

    Keys the result does not know are ignored, so JSON that carries more (the API's record
    fields around the result) reads too. A result stored before the confidence had its words
    gets them from its figure.
    """
    result = msgspec.convert(data, type=DiagnosisResult)
    f = result.failure
    if f is None or isinstance(f.confidence_words, str):
        return result
    worded = failure_of(slug=f.slug, title=f.title, category=f.category, confidence=f.confidence)
    return replace(result, failure=worded)


def json_schema() -> dict[str, object]:
    """The JSON Schema (2020-12) of DiagnosisResult."""
    schema: dict[str, object] = msgspec.json.schema(DiagnosisResult)
    return schema


def json_schema_text() -> str:
    """The committed docs/result.schema.json, byte for byte."""
    return json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    print(json_schema_text(), end="")
