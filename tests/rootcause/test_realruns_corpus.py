"""The run-produced corpus (bench/realruns, `make realruns`): every label is well formed and the
corpus holds what the issue asked for. Needs no torch; the only thing read from the logs is
whether they name their own scenario."""

import json
from pathlib import Path

import pytest
import yaml

from bench.realruns.generate import LAUNCHERS
from rootcause.catalogue import CATALOGUE_DIR

CORPUS = Path(__file__).resolve().parents[2] / "bench" / "realruns" / "corpus"
PARTS = ("dev", "sealed")
# every part whose labels and logs must be well formed: the second blind part (--round 2) too,
# round 3's open and blind parts, rounds 4's and 5's open parts, round 6's open and blind parts,
# round 7's open part, round 8's open and blind halves, round 9's open part, round 10's open and
# blind halves
CHECKED = (
    *PARTS,
    "sealed2",
    "dev_r3",
    "sealed3",
    "dev_r4",
    "dev_r5",
    "dev_r6",
    "sealed4",
    "dev_r7",
    "dev_r8",
    "sealed5",
    "dev_r9",
    "dev_r10",
    "sealed6",
)
FIELDS = {"file", "slug", "multi_rank", "initiating_rank", "source", "launcher", "torch", "how"}


def catalogue_slugs() -> set[str]:
    return {
        yaml.safe_load(path.read_text(encoding="utf-8"))["slug"]
        for path in CATALOGUE_DIR.glob("*.yaml")
    }


def labels(part: str) -> list[dict]:
    text = (CORPUS / part / "labels.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def all_labels() -> list[tuple[str, dict]]:
    return [(part, label) for part in PARTS for label in labels(part)]


@pytest.mark.parametrize("part", CHECKED)
def test_every_label_is_well_formed(part: str) -> None:
    known = catalogue_slugs() | {"none"}
    rows = labels(part)
    assert rows, f"{part} is empty"
    files = [row["file"] for row in rows]
    assert len(files) == len(set(files))
    for row in rows:
        where = f"{part}/{row.get('file')}"
        assert set(row) >= FIELDS, where
        assert (CORPUS / part / row["file"]).is_file(), where
        assert (CORPUS / part / row["file"]).stat().st_size > 0, where
        assert row["slug"] in known, f"{where}: {row['slug']} is not a catalogue slug"
        assert row["launcher"] in LAUNCHERS, where
        assert isinstance(row["multi_rank"], bool), where
        rank = row["initiating_rank"]
        assert rank is None or (isinstance(rank, int) and not isinstance(rank, bool)), where
        if rank is not None:
            # a named rank needs a multi-rank log and must be one of its ranks
            assert row["multi_rank"], where
            assert 0 <= rank < row["nprocs"], where
        assert row["multi_rank"] == (row["nprocs"] > 1), where
        if row["slug"] == "none":
            assert rank is None, where
        assert row["torch"].startswith("2."), where
        assert row["source"].startswith("bench/realruns/programs/"), where


def test_every_log_has_a_label() -> None:
    for part in CHECKED:
        labelled = {row["file"] for row in labels(part)}
        assert {path.name for path in (CORPUS / part).glob("*.log")} == labelled


def test_counts_the_issue_asks_for() -> None:
    rows = [label for _, label in all_labels()]
    assert sum(row["multi_rank"] for row in rows) >= 60
    assert sum(row["slug"] == "none" for row in rows) >= 40
    # one rank failing first with the others collateral, under several launchers
    named = [row for row in rows if row["initiating_rank"] is not None]
    assert len(named) >= 40
    assert len({row["launcher"] for row in named}) >= 7
    assert {row["initiating_rank"] for row in named} >= {0, 1, 2, 3}
    # every launcher prefix form, failing and healthy
    assert {row["launcher"] for row in rows} == set(LAUNCHERS)
    assert len({row["slug"] for row in rows}) >= 30


def test_sealed_part_is_about_a_third_and_disjoint() -> None:
    dev = {row["file"] for row in labels("dev")}
    sealed = {row["file"] for row in labels("sealed")}
    assert not dev & sealed
    assert 0.2 <= len(sealed) / (len(dev) + len(sealed)) <= 0.45


def test_second_sealed_part_is_new_runs() -> None:
    """corpus/sealed2 (generate.py --round 2) shares no scenario with dev or sealed, and holds
    what a blind check needs: multi-rank logs with a known initiating rank, and healthy runs."""
    first = {row["file"] for part in PARTS for row in labels(part)}
    rows = labels("sealed2")
    assert not {row["file"] for row in rows} & first
    assert len(rows) >= 30
    assert sum(row["initiating_rank"] is not None for row in rows) >= 15
    assert sum(row["slug"] == "none" for row in rows) >= 6


def test_round_3_parts_are_new_runs_weighted_to_one_rank_breaking_first() -> None:
    """corpus/dev_r3 and corpus/sealed3 (generate.py --round 3) share no scenario with the earlier
    parts nor with each other; most of their runs have a known initiating rank."""
    earlier = {row["file"] for part in (*PARTS, "sealed2") for row in labels(part)}
    dev, blind = labels("dev_r3"), labels("sealed3")
    assert not {row["file"] for row in dev + blind} & earlier
    assert not {row["file"] for row in dev} & {row["file"] for row in blind}
    assert len(dev) >= 40
    assert len(blind) >= 15
    for rows in (dev, blind):
        assert sum(row["initiating_rank"] is not None for row in rows) >= 0.6 * len(rows)


def test_round_4_is_new_runs_weighted_to_one_rank_breaking_first() -> None:
    """corpus/dev_r4 (generate.py --round 4) shares no scenario with the earlier parts; three in
    four of its runs have a known initiating rank."""
    earlier = {
        row["file"] for part in (*PARTS, "sealed2", "dev_r3", "sealed3") for row in labels(part)
    }
    rows = labels("dev_r4")
    assert not {row["file"] for row in rows} & earlier
    assert len(rows) >= 50
    assert sum(row["initiating_rank"] is not None for row in rows) >= 0.7 * len(rows)


def test_round_6_parts_are_new_runs_weighted_to_one_rank_breaking_first() -> None:
    """corpus/dev_r6 and corpus/sealed4 (generate.py --round 6) share no scenario with the earlier
    parts nor with each other; four in five of their runs have a known initiating rank."""
    earlier_parts = (*PARTS, "sealed2", "dev_r3", "sealed3", "dev_r4", "dev_r5")
    earlier = {row["file"] for part in earlier_parts for row in labels(part)}
    dev, blind = labels("dev_r6"), labels("sealed4")
    assert not {row["file"] for row in dev + blind} & earlier
    assert not {row["file"] for row in dev} & {row["file"] for row in blind}
    for rows in (dev, blind):
        assert len(rows) >= 25
        assert sum(row["initiating_rank"] is not None for row in rows) >= 0.75 * len(rows)


def test_round_7_is_new_runs_drawn_as_sealed2_was() -> None:
    """corpus/dev_r7 (generate.py --round 7) shares no scenario with the earlier parts; like
    sealed2's draw, more than half of its runs have a known initiating rank, and the launcher's
    torchrun forms outnumber the rest."""
    earlier = {row["file"] for part in CHECKED[: CHECKED.index("dev_r7")] for row in labels(part)}
    rows = labels("dev_r7")
    assert not {row["file"] for row in rows} & earlier
    assert len(rows) >= 55
    ranked = [row for row in rows if row["initiating_rank"] is not None]
    assert len(ranked) >= 0.5 * len(rows)
    assert sum(row["launcher"].startswith("torchrun") for row in ranked) >= 0.6 * len(ranked)
    assert all(row["how"].startswith("round 7:") for row in rows)


def test_round_8_halves_are_new_runs_drawn_as_sealed2_was() -> None:
    """corpus/dev_r8 and corpus/sealed5 (generate.py --round 8) share no scenario with the earlier
    parts nor with each other; the blind half has at least as many runs with a known initiating
    rank as sealed2 (21), so its rank figure is not one answer in ten."""
    earlier = {row["file"] for part in CHECKED[: CHECKED.index("dev_r8")] for row in labels(part)}
    dev, blind = labels("dev_r8"), labels("sealed5")
    assert not {row["file"] for row in dev + blind} & earlier
    assert not {row["file"] for row in dev} & {row["file"] for row in blind}
    assert sum(row["initiating_rank"] is not None for row in blind) >= 21
    for rows in (dev, blind):
        assert len(rows) >= 35
        assert all(row["how"].startswith("round 8:") for row in rows)


def test_round_9_is_new_runs_drawn_as_sealed2_was() -> None:
    """corpus/dev_r9 (generate.py --round 9) shares no scenario with the earlier parts; most of
    its runs have a known initiating rank, and it keeps runs where every rank fails alike and
    healthy ones, where no rank is to be named."""
    earlier = {row["file"] for part in CHECKED[: CHECKED.index("dev_r9")] for row in labels(part)}
    rows = labels("dev_r9")
    assert not {row["file"] for row in rows} & earlier
    assert len(rows) >= 55
    assert sum(row["initiating_rank"] is not None for row in rows) >= 0.55 * len(rows)
    assert sum(row["slug"] == "none" for row in rows) >= 10
    assert sum(row["slug"] != "none" and row["initiating_rank"] is None for row in rows) >= 6
    assert all(row["how"].startswith("round 9:") for row in rows)


def test_round_10_halves_are_new_runs_drawn_as_sealed2_was() -> None:
    """corpus/dev_r10 and corpus/sealed6 (generate.py --round 10) share no scenario with the
    earlier parts nor with each other; the blind half has at least as many runs with a known
    initiating rank as sealed5 (24) less what a generation drops."""
    earlier = {row["file"] for part in CHECKED[: CHECKED.index("dev_r10")] for row in labels(part)}
    dev, blind = labels("dev_r10"), labels("sealed6")
    assert not {row["file"] for row in dev + blind} & earlier
    assert not {row["file"] for row in dev} & {row["file"] for row in blind}
    assert sum(row["initiating_rank"] is not None for row in blind) >= 20
    for rows in (dev, blind):
        assert len(rows) >= 28
        assert all(row["how"].startswith("round 10:") for row in rows)


def test_logs_do_not_name_their_scenario() -> None:
    """The programs take their options from the environment, so no launcher's echo of a command
    line hands the engine the fault's name."""
    for part in CHECKED:
        for path in (CORPUS / part).glob("*.log"):
            text = path.read_text(encoding="utf-8", errors="replace")
            assert "--fault" not in text, path.name
            assert "REALRUNS_ARGS" not in text, path.name
