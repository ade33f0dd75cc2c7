"""bench/realruns/generate.py --round 4: development runs only (corpus/dev_r4, open), drawn by the
round-2 rule with a seed of their own, weighted further to multi-rank logs where one rank breaks
first, and never one of rounds 1-3's names or combinations. Needs no torch."""

from collections import Counter

from bench.realruns.generate import (
    LAUNCHERS,
    E,
    _key,
    existing_names,
    fresh_scenarios,
    round2_scenarios,
    round3_scenarios,
    round4_scenarios,
    scenarios,
)


def test_round4_is_deterministic_for_a_seed() -> None:
    first, again = round4_scenarios(), round4_scenarios()
    assert [(sc.name, sc.args, sc.nprocs, sc.initiating_rank) for sc in first] == [
        (sc.name, sc.args, sc.nprocs, sc.initiating_rank) for sc in again
    ]
    assert [sc.name for sc in round4_scenarios(seed=5)] != [sc.name for sc in first]


def test_round4_excludes_rounds_1_to_3() -> None:
    earlier = scenarios() + fresh_scenarios() + round2_scenarios() + round3_scenarios()
    taken = existing_names() | {sc.name for sc in round2_scenarios() + round3_scenarios()}
    for seed in (4, 5):
        drawn = round4_scenarios(seed=seed)
        names = [sc.name for sc in drawn]
        assert len(names) == len(set(names))
        assert not set(names) & taken
        assert not {_key(sc) for sc in drawn} & {_key(sc) for sc in earlier}
        assert len({_key(sc) for sc in drawn}) == len(drawn)


def test_round4_honours_an_explicit_exclude_set() -> None:
    default = round4_scenarios()
    banned = {default[0].name, default[9].name, default[-1].name}
    drawn = round4_scenarios(exclude=existing_names() | banned)
    assert not {sc.name for sc in drawn} & banned
    assert len(drawn) == len(default)


def test_round4_is_weighted_to_one_rank_breaking_first() -> None:
    drawn = round4_scenarios()
    assert 60 <= len(drawn) <= 70
    ranked = [sc for sc in drawn if sc.initiating_rank is not None]
    assert len(ranked) >= 0.75 * len(drawn)
    for sc in drawn:
        assert sc.launcher in LAUNCHERS, sc.name
        assert sc.slug in E, sc.name
        assert sc.nprocs == 1 or 2 <= sc.nprocs <= 4, sc.name
        assert sc.how.startswith("round 4:"), sc.name
        if sc.initiating_rank is not None:
            assert 0 <= sc.initiating_rank < sc.nprocs, sc.name
            assert f"--fail-rank {sc.initiating_rank}" in " ".join(sc.args), sc.name
        # round 3 dropped every host-OOM kill under mp (launch.py's report has no kill wording)
        assert not (sc.slug == "host-oom-killed" and sc.launcher == "mp"), sc.name
    launchers = Counter(sc.launcher for sc in ranked)
    for launcher in ("spawn", "mp", "accelerate"):
        assert launchers[launcher] >= 4, launchers
    assert sum(n for name, n in launchers.items() if name.startswith("torchrun")) >= 10
    assert {sc.nprocs for sc in ranked} == {2, 3, 4}
    assert sum(sc.slug == "none" for sc in drawn) >= 5
