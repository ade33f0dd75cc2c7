"""Verdicts on real bundles (labels from the scenario that made them, hang_bundles/labels.jsonl),
on the same bundles with dumps removed, and through `diagnose --offline`."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import rootcause.cli
from rootcause.hangs import analyse, diagnose_bundle, members, read_bundle
from rootcause.result import HangSection, as_json, result_from_json

BUNDLES = Path(__file__).parent / "hang_bundles"
LABELS = [json.loads(line) for line in (BUNDLES / "labels.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("label", LABELS, ids=[lb["name"] for lb in LABELS])
def test_verdict_and_culprit_match_the_scenario(label):
    section = analyse(read_bundle(BUNDLES / f"{label['name']}.tar.gz"))
    assert section.verdict == label["verdict"]
    assert [c.rank for c in section.culprits][:1] == label["culprits"]
    assert section.world_size == label["world"]


def test_the_result_carries_the_verdict_as_its_class_and_the_culprit_as_initiating_rank():
    result = diagnose_bundle(BUNDLES / "lock__0.tar.gz")
    assert result.failure is not None
    assert result.failure.slug == "rank-stalled-before-collective"
    assert result.initiating_rank == 3
    assert isinstance(result.hang, HangSection)
    assert result.hang.verdict == result.failure.slug
    assert result.collateral
    assert result.collateral[0].ranks == [0, 1, 2]
    groups = {g.ranks: g for g in result.hang.stacks}
    assert groups["0-2"].meaning == "collective"
    assert groups["0-2"].frame == "all_reduce"
    assert groups["3"].meaning == "lock"
    # the JSON round-trips through the public type
    assert result_from_json(as_json(result)) == result


def test_a_crash_is_the_crashed_ranks_own_class_with_the_rest_collateral():
    result = diagnose_bundle(BUNDLES / "shape-error__0.tar.gz")
    assert result.failure is not None
    assert result.failure.slug == "shape-mismatch"
    assert result.initiating_rank == 1
    assert 1 not in result.collateral[0].ranks


def test_the_first_divergent_collective_names_both_sides():
    section = analyse(read_bundle(BUNDLES / "mismatch-op__0.tar.gz"))
    assert section.divergent is not None
    ops = {s.op for s in section.divergent.sides}
    assert ops == {"all_reduce", "broadcast"}


def _without(name, drop):
    return [(n, d) for n, d in members((BUNDLES / name).read_bytes()) if not drop(n)]


def test_missing_dumps_are_named_and_the_verdict_still_given():
    files = _without("lock__0.tar.gz", lambda n: n in ("fr_trace_rank1.json", "pyspy_rank2.txt"))
    section = analyse(read_bundle(files))
    assert section.verdict == "rank-stalled-before-collective"
    assert [c.rank for c in section.culprits] == [3]
    assert "flight-recorder dump: rank 1" in section.missing
    assert "stack dump: rank 2" in section.missing


def test_stacks_alone_still_name_the_stalled_rank():
    files = _without("lock__0.tar.gz", lambda n: n.startswith("fr_trace"))
    section = analyse(read_bundle(files))
    assert section.verdict == "rank-stalled-before-collective"
    assert [c.rank for c in section.culprits] == [3]


def test_a_frozen_rank_is_the_one_that_gave_no_dump():
    section = analyse(read_bundle(BUNDLES / "freeze__0.tar.gz"))
    assert section.verdict == "hang-inside-collective"
    assert [c.rank for c in section.culprits] == [10]
    assert any(m.startswith("flight-recorder dump: rank 10") for m in section.missing)


def test_a_frozen_rank_that_py_spy_could_read_is_the_one_that_ran_no_faulthandler():
    # freeze__10: no flight recorder; py-spy read every rank (the frozen one with --nonblocking),
    # all inside the same all_reduce; rank 2's log has no faulthandler dump, the others' have one.
    section = analyse(read_bundle(BUNDLES / "freeze__10.tar.gz"))
    assert section.verdict == "hang-inside-collective"
    assert [c.rank for c in section.culprits] == [2]
    assert "faulthandler" in section.culprits[0].reason
    # Without the faulthandler dumps: rank 2 alone did not report the timeout, a weaker sign.
    files = [
        (n, d.replace(b"most recent call first", b"")) for n, d in _members("freeze__10.tar.gz")
    ]
    without_fh = analyse(read_bundle(files)).culprits
    assert [c.rank for c in without_fh] == [2]
    assert without_fh[0].confidence < section.culprits[0].confidence
    # Without either, nothing tells the ranks apart: no culprit is guessed.
    files = [(n, d.replace(b"Timed out waiting", b"")) for n, d in files]
    assert [c.rank for c in analyse(read_bundle(files)).culprits] == []


def test_a_frozen_rank_whose_stack_was_read_but_wrote_no_flight_recorder_dump():
    # freeze__0 with two other ranks' dumps (flight recorder and stack) removed: three ranks gave
    # no flight-recorder dump, and only rank 10 was there for py-spy.
    files = _without("freeze__0.tar.gz", lambda n: "rank6." in n or "rank8." in n)
    section = analyse(read_bundle(files))
    assert section.verdict == "hang-inside-collective"
    assert [c.rank for c in section.culprits][:1] == [10]


def test_a_mismatch_seen_only_as_its_crash_names_the_rank_at_another_step():
    # No flight recorder: gloo aborts rank 3 ("collective mismatch"); rank 4's log went on to
    # step 4 ("skipping metrics") where the others stopped at step 3.
    section = analyse(read_bundle(BUNDLES / "skip-branch__4.tar.gz"))
    assert section.verdict == "collective-mismatch"
    assert [c.rank for c in section.culprits] == [4]
    assert section.summary.startswith("Rank 3 reported a collective mismatch")
    # The same logs without the step lines: the mismatch is named, no rank guessed.
    files = [
        (n, b"\n".join(x for x in d.splitlines() if b"step" not in x))
        for n, d in _members("skip-branch__4.tar.gz")
    ]
    section = analyse(read_bundle(files))
    assert section.verdict == "collective-mismatch"
    assert section.culprits == []


def test_one_rank_away_from_the_collective_is_no_hang_while_every_log_moves():
    # jitter__5: py-spy caught rank 0 in its jitter sleep and the rest waiting in backward, but
    # every rank's time-stamped log went on past the collection.
    section = analyse(read_bundle(BUNDLES / "jitter__5.tar.gz"))
    assert section.verdict == "none"
    # The same stacks with the logs stopped a few seconds before the collection: a hang.
    files = [
        (n, d) if not n.startswith("rank") else (n, _stopped_log(d))
        for n, d in _members("jitter__5.tar.gz")
    ]
    section = analyse(read_bundle(files))
    assert section.verdict == "rank-stalled-before-collective"
    assert [c.rank for c in section.culprits] == [0]


def _members(name):
    return list(members((BUNDLES / name).read_bytes()))


def _stopped_log(data: bytes) -> bytes:
    # keep the lines stamped before 04:28:07 (the bundle was collected at 04:28:09.37)
    return b"\n".join(x for x in data.splitlines() if x[:19] < b"2026-12-07 04:28:07")


def test_diagnose_offline_prints_the_hang_verdict(tmp_path):
    runner = CliRunner()
    out = runner.invoke(
        rootcause.cli.app, ["diagnose", "--offline", str(BUNDLES / "lock__0.tar.gz")]
    )
    assert "class:      rank-stalled-before-collective" in out.output
    assert "initiating rank: 3" in out.output
    assert "rank 3: in `wait_for_checkpoint_lock`" in out.output
    for name, data in members((BUNDLES / "lock__0.tar.gz").read_bytes()):
        (tmp_path / name).write_bytes(data)
    out = runner.invoke(rootcause.cli.app, ["diagnose", "--offline", "--json", str(tmp_path)])
    record = json.loads(out.output.splitlines()[0])
    assert record["hang"]["verdict"] == "rank-stalled-before-collective"
    assert record["initiating_rank"] == 3
    assert record["remediation"]["verification_command"]


def test_diagnose_offline_refuses_a_planted_pickle_with_a_usage_error(tmp_path):
    import pickle

    from tests.rootcause.test_hangs_reader import Planted

    (tmp_path / "nccl_trace_rank_0").write_bytes(pickle.dumps({"entries": [Planted()]}))
    out = CliRunner().invoke(rootcause.cli.app, ["diagnose", "--offline", str(tmp_path)])
    assert out.exit_code == 2
    assert "refused" in out.output
