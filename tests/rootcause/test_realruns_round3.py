"""bench/realruns/generate.py --round 3: development runs (corpus/dev_r3) and a third blind part
(corpus/sealed3), drawn by the round-2 rule with a seed of their own, weighted to multi-rank logs
where one rank breaks first, and never one of round 1's or round 2's names or combinations. Needs
no torch."""

from collections import Counter

from bench.realruns.generate import (
    LAUNCHERS,
    E,
    _key,
    existing_names,
    fresh_scenarios,
    round2_scenarios,
    round3_scenarios,
    scenarios,
    sealed,
)


def test_round3_is_deterministic_for_a_seed() -> None:
    first, again = round3_scenarios(), round3_scenarios()
    assert [(sc.name, sc.args, sc.nprocs, sc.initiating_rank) for sc in first] == [
        (sc.name, sc.args, sc.nprocs, sc.initiating_rank) for sc in again
    ]
    assert [sc.name for sc in round3_scenarios(seed=4)] != [sc.name for sc in first]


def test_round3_excludes_rounds_1_and_2() -> None:
    earlier = scenarios() + fresh_scenarios() + round2_scenarios()
    taken = existing_names() | {sc.name for sc in round2_scenarios()}
    for seed in (3, 4):
        drawn = round3_scenarios(seed=seed)
        names = [sc.name for sc in drawn]
        assert len(names) == len(set(names))
        assert not set(names) & taken
        assert not {_key(sc) for sc in drawn} & {_key(sc) for sc in earlier}
        assert len({_key(sc) for sc in drawn}) == len(drawn)


def test_round3_honours_an_explicit_exclude_set() -> None:
    default = round3_scenarios()
    banned = {default[0].name, default[7].name, default[-1].name}
    drawn = round3_scenarios(exclude=existing_names() | banned)
    assert not {sc.name for sc in drawn} & banned
    assert len(drawn) == len(default)


def test_round3_is_weighted_to_one_rank_breaking_first() -> None:
    drawn = round3_scenarios()
    ranked = [sc for sc in drawn if sc.initiating_rank is not None]
    assert len(ranked) >= 0.7 * len(drawn)
    for sc in drawn:
        assert sc.launcher in LAUNCHERS, sc.name
        assert sc.slug in E, sc.name
        assert sc.nprocs == 1 or 2 <= sc.nprocs <= 4, sc.name
        assert sc.how.startswith("round 3:"), sc.name
        if sc.initiating_rank is not None:
            assert 0 <= sc.initiating_rank < sc.nprocs, sc.name
            assert f"--fail-rank {sc.initiating_rank}" in " ".join(sc.args), sc.name
    launchers = Counter(sc.launcher for sc in ranked)
    # spawn, mp and accelerate are drawn as often as torchrun's forms together
    for launcher in ("spawn", "mp", "accelerate"):
        assert launchers[launcher] >= 4, launchers
    assert sum(n for name, n in launchers.items() if name.startswith("torchrun")) >= 10
    assert {sc.nprocs for sc in ranked} == {2, 3, 4}
    assert sum(sc.slug == "none" for sc in drawn) >= 6
    # a rank dead of a crash signal of its own is among the variants
    assert any(
        "--variant segv" in " ".join(sc.args)
        or "--variant bus" in " ".join(sc.args)
        or "--variant fpe" in " ".join(sc.args)
        for sc in ranked
    )


def test_round3_splits_an_open_and_a_blind_part() -> None:
    drawn = round3_scenarios()
    blind = [sc for sc in drawn if sealed(sc.name)]
    open_part = [sc for sc in drawn if not sealed(sc.name)]
    assert 40 <= len(open_part) <= 60
    assert sum(sc.initiating_rank is not None for sc in blind) >= 12
