"""The typed result: it writes the JSON stored and served before it existed, reads stored rows
back, and the JSON Schema committed in docs/ is the one the types give."""

import re
from pathlib import Path

import jsonschema
import msgspec
import pytest

from rootcause.engine import Engine
from rootcause.remediation import complete_result
from rootcause.result import (
    DiagnosisResult,
    EvidenceLine,
    Remediation,
    as_json,
    json_schema,
    json_schema_text,
    result_from_json,
)
from tests.rootcause.fixture_catalogue import entries

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "docs" / "result.schema.json"

# A result as the pipeline stored it before the result was typed: the engine's dict with the
# remediation added by stage 3, and no masking counts (they were only in their own column).
STORED_FAILURE: dict[str, object] = {
    "slug": "shape-mismatch",
    "title": "Shape mismatch",
    "category": "programming",
    "confidence": 0.93,
}
STORED_BEFORE = {
    "outcome": "diagnosed",
    "failure": STORED_FAILURE,
    "root_cause": "Two tensors disagree. Rank 1 failed first (first error): RuntimeError: …",
    "initiating_rank": 1,
    "ranks": [
        {"rank": 0, "slug": "peer-closed", "first_error_line": 3, "collateral": True},
        {"rank": 1, "slug": "shape-mismatch", "first_error_line": 2, "collateral": False},
    ],
    "collateral": [{"slug": "peer-closed", "ranks": [0]}],
    "evidence": [{"line": 2, "text": "[rank1]: RuntimeError: mat1 and mat2 shapes"}],
    "missing_facts": [],
    "encyclopedia_url": "/encyclopedia/shape-mismatch/",
    "catalogue_version": "0123456789ab",
    "remediation": {
        "steps": ["Print the shapes."],
        "command": "python -c 'print(1)'",
        "verification_command": "python train.py --steps 1",
        "verification_expect": "step 1",
    },
}

LOG = (
    "[rank0]: step 1 loss 2.0\n"
    "[rank1]: RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x3 and 4x2)\n"
    "[rank0]: RuntimeError: gloo/transport: Connection closed by peer\n"
)


@pytest.fixture(scope="module")
def engine():
    return Engine(entries())


def test_the_committed_json_schema_is_current():
    assert SCHEMA_FILE.read_text(encoding="utf-8") == json_schema_text(), (
        "docs/result.schema.json is out of date: "
        "run `python -m rootcause.result > docs/result.schema.json`"
    )


def test_a_result_stored_before_the_type_reads_back_and_writes_the_same_json():
    result = result_from_json(STORED_BEFORE)

    assert result.failure is not None
    assert result.failure.slug == "shape-mismatch"
    assert result.remediation == Remediation(
        steps=["Print the shapes."],
        command="python -c 'print(1)'",
        verification_command="python train.py --steps 1",
        verification_expect="step 1",
    )
    # the words of its confidence, which it lacked, come from its figure
    worded = {
        **STORED_FAILURE,
        "confidence_level": "certain",
        "confidence_words": "certain",
    }
    assert as_json(result) == {**STORED_BEFORE, "failure": worded, "masking": {}}


def test_a_low_figure_stored_without_words_reads_back_as_possible_with_what_to_confirm():
    failure = {**STORED_FAILURE, "confidence": 0.41}
    result = result_from_json({**STORED_BEFORE, "failure": failure})

    assert result.failure is not None
    assert result.failure.confidence_level == "possible"
    assert result.failure.confidence_words == "possible — confirm with what is missing (below)"


def test_stored_words_are_read_as_they_were_stored():
    failure = {
        **STORED_FAILURE,
        "confidence": 0.41,
        "confidence_level": "possible",
        "confidence_words": "possible — confirm with this check: print the shapes",
    }
    result = result_from_json({**STORED_BEFORE, "failure": failure})

    assert as_json(result)["failure"] == failure


def test_keys_it_does_not_know_are_ignored():
    result = result_from_json({**STORED_BEFORE, "id": "x", "status": "done", "progress": 100})

    assert "status" not in as_json(result)


@pytest.mark.parametrize(
    ("change", "where"),
    [
        ({"outcome": "maybe"}, "$.outcome"),
        ({"failure": {"slug": "x"}}, "$.failure"),
        ({"ranks": [{"rank": "one"}]}, "$.ranks[0]"),
    ],
)
def test_a_malformed_result_is_refused_naming_the_field(change, where):
    with pytest.raises(msgspec.ValidationError, match=re.escape(f"`{where}")):
        result_from_json({**STORED_BEFORE, **change})


def test_what_is_unset_is_left_out_of_the_json(engine):
    data = as_json(engine.diagnose([LOG]))

    assert "remediation" not in data
    assert set(data["evidence"][0]) == {"line", "text"}


def test_merged_files_name_the_file_of_each_evidence_line(engine):
    rank1 = "[rank1]: RuntimeError: mat1 and mat2 shapes cannot be multiplied\n"
    result = engine.diagnose_sources([("r0.log", ["step 1\n"]), ("r1.log", [rank1])])

    assert as_json(result)["evidence"] == [{"file": "r1.log", "line": 1, "text": rank1.strip()}]


def test_what_the_engine_writes_fits_the_published_schema(engine):
    diagnosed = complete_result(
        engine.diagnose([LOG]),
        entry=engine.by_slug["shape-mismatch"],
        include_fix=True,
        masking={"EMAIL_ADDRESS": 1},
    )
    no_match = engine.diagnose(["Traceback (most recent call last):\nValueError: odd\n"])

    for result in (diagnosed, no_match):
        jsonschema.validate(as_json(result), json_schema())


def test_stage_three_adds_the_fix_only_when_the_tier_includes_it(engine):
    matched = engine.diagnose([LOG])
    entry = engine.by_slug["shape-mismatch"]

    with_fix = complete_result(matched, entry=entry, include_fix=True, masking={"IP": 2})
    without = complete_result(matched, entry=entry, include_fix=False, masking={"IP": 2})
    no_entry = complete_result(matched, entry=None, include_fix=True, masking={})

    assert with_fix.remediation
    assert with_fix.remediation.command == "fix-shape-mismatch --now"
    assert with_fix.masking == {"IP": 2}
    assert not without.remediation
    assert without.masking == {"IP": 2}
    assert not no_entry.remediation


def test_search_results_are_typed(engine):
    found = engine.search("RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)")

    assert found[0].slug == "shape-mismatch"
    assert found[0].lines[0] == EvidenceLine(
        line=1, text="RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"
    )


def test_the_result_fields_are_the_design_names():
    # The published result format (docs/result.md): renaming one breaks stored rows and API clients
    assert [f for f in DiagnosisResult.__dataclass_fields__] == [
        "outcome",
        "failure",
        "root_cause",
        "initiating_rank",
        "ranks",
        "collateral",
        "evidence",
        "missing_facts",
        "encyclopedia_url",
        "catalogue_version",
        "remediation",
        "masking",
        # issue 32: what the log shows of its launch, for commands written for it (additive)
        "launch",
        "hang",  # issue 30: only for a bundle of per-rank files, absent otherwise
    ]
