"""bench/realruns/generate.py --round 2: the second blind part's scenarios are new variants drawn
by a seeded rule, never the first round's names or combinations. Needs no torch (generate.py
imports it only to run scenarios)."""

from bench.realruns.generate import (
    LAUNCHERS,
    E,
    _key,
    existing_names,
    fresh_scenarios,
    round2_scenarios,
    scenarios,
)


def test_round2_is_deterministic_for_a_seed() -> None:
    first, again = round2_scenarios(), round2_scenarios()
    assert [(sc.name, sc.args, sc.nprocs, sc.initiating_rank) for sc in first] == [
        (sc.name, sc.args, sc.nprocs, sc.initiating_rank) for sc in again
    ]
    other = round2_scenarios(seed=3)
    assert [sc.name for sc in other] != [sc.name for sc in first]


def test_round2_excludes_the_first_rounds_names_and_combinations() -> None:
    taken = existing_names()
    first_round = scenarios() + fresh_scenarios()
    assert {sc.name for sc in first_round} <= taken
    for seed in (2, 3, 4):
        drawn = round2_scenarios(seed=seed)
        names = [sc.name for sc in drawn]
        assert len(names) == len(set(names))
        assert not set(names) & taken
        assert not {_key(sc) for sc in drawn} & {_key(sc) for sc in first_round}
        assert len({_key(sc) for sc in drawn}) == len(drawn)


def test_round2_honours_an_explicit_exclude_set() -> None:
    default = round2_scenarios()
    banned = {default[0].name, default[5].name, default[-1].name}
    drawn = round2_scenarios(exclude=existing_names() | banned)
    assert not {sc.name for sc in drawn} & banned
    assert len(drawn) == len(default)


def test_round2_holds_what_the_blind_check_needs() -> None:
    drawn = round2_scenarios()
    assert 38 <= len(drawn) <= 46
    ranked = [sc for sc in drawn if sc.initiating_rank is not None]
    assert len(ranked) >= 15
    assert sum(sc.slug == "none" for sc in drawn) >= 8
    for sc in drawn:
        assert sc.launcher in LAUNCHERS, sc.name
        assert sc.slug in E, sc.name
        assert sc.nprocs == 1 or 2 <= sc.nprocs <= 4, sc.name
        if sc.initiating_rank is not None:
            assert 0 <= sc.initiating_rank < sc.nprocs, sc.name
            assert f"--fail-rank {sc.initiating_rank}" in " ".join(sc.args), sc.name
    assert len({sc.launcher for sc in ranked}) >= 6
    assert {sc.nprocs for sc in ranked} == {2, 3, 4}
    assert len({sc.slug for sc in drawn}) >= 20
