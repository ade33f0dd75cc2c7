"""bench/realruns/generate.py --round 5: development runs only (corpus/dev_r5, open), a third
first look for the calibration, drawn by round 4's rule with a seed of their own and never one of
rounds 1-4's names or combinations. Needs no torch."""

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
    round5_scenarios,
    scenarios,
)


def _earlier_draws() -> list:
    return round2_scenarios() + round3_scenarios() + round4_scenarios()


def test_round5_is_deterministic_for_a_seed() -> None:
    first, again = round5_scenarios(), round5_scenarios()
    assert [(sc.name, sc.args, sc.nprocs, sc.initiating_rank) for sc in first] == [
        (sc.name, sc.args, sc.nprocs, sc.initiating_rank) for sc in again
    ]
    assert [sc.name for sc in round5_scenarios(seed=6)] != [sc.name for sc in first]


def test_round5_excludes_rounds_1_to_4() -> None:
    earlier = scenarios() + fresh_scenarios() + _earlier_draws()
    taken = existing_names() | {sc.name for sc in _earlier_draws()}
    for seed in (5, 6):
        drawn = round5_scenarios(seed=seed)
        names = [sc.name for sc in drawn]
        assert len(names) == len(set(names))
        assert not set(names) & taken
        assert not {_key(sc) for sc in drawn} & {_key(sc) for sc in earlier}
        assert len({_key(sc) for sc in drawn}) == len(drawn)


def test_round5_honours_an_explicit_exclude_set() -> None:
    default = round5_scenarios()
    banned = {default[0].name, default[9].name, default[-1].name}
    drawn = round5_scenarios(exclude=existing_names() | banned)
    assert not {sc.name for sc in drawn} & banned
    assert len(drawn) == len(default)


def test_round5_is_weighted_to_one_rank_breaking_first() -> None:
    drawn = round5_scenarios()
    assert 50 <= len(drawn) <= 60
    ranked = [sc for sc in drawn if sc.initiating_rank is not None]
    assert len(ranked) >= 0.75 * len(drawn)
    for sc in drawn:
        assert sc.launcher in LAUNCHERS, sc.name
        assert sc.slug in E, sc.name
        assert sc.nprocs == 1 or 2 <= sc.nprocs <= 4, sc.name
        assert sc.how.startswith("round 5:"), sc.name
        if sc.initiating_rank is not None:
            assert 0 <= sc.initiating_rank < sc.nprocs, sc.name
            assert f"--fail-rank {sc.initiating_rank}" in " ".join(sc.args), sc.name
        assert not (sc.slug == "host-oom-killed" and sc.launcher == "mp"), sc.name
    launchers = Counter(sc.launcher for sc in ranked)
    for launcher in ("spawn", "mp", "accelerate"):
        assert launchers[launcher] >= 4, launchers
    assert sum(n for name, n in launchers.items() if name.startswith("torchrun")) >= 10
    assert {sc.nprocs for sc in ranked} == {2, 3, 4}
    assert sum(sc.slug == "none" for sc in drawn) >= 4
    # the programs' seeds of round 5 are its own (3000-3799), none of an earlier round's
    seeds = {sc.args[sc.args.index("--seed") + 1] for sc in drawn if "--seed" in sc.args}
    assert seeds
    assert all(3000 <= int(s) < 3800 for s in seeds)
