"""bench/realruns/generate.py --round 3, 4, 5, 6 and 7: runs drawn by the round-2 rule, each with
a seed of its own, weighted to multi-rank logs where one rank breaks first, and never one of an
earlier round's names or combinations. Rounds 3 and 6 have an open part (corpus/dev_r3, dev_r6)
and a blind one (corpus/sealed3, sealed4); rounds 4 and 5 are development runs only
(corpus/dev_r4, dev_r5), first looks for the calibration; round 7 (corpus/dev_r7, open) is drawn
as round 2 (sealed2) was, launchers and weights included, and so are round 8, halved into an open
part (corpus/dev_r8) and a blind one (corpus/sealed5), and round 9 (corpus/dev_r9, open). Needs no
torch."""

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from bench.realruns.generate import (
    LAUNCHERS,
    ROUND2_RANKED,
    E,
    Scenario,
    _key,
    existing_names,
    fresh_scenarios,
    mirrored_mismatch,
    rank_decidable,
    round2_scenarios,
    round3_scenarios,
    round4_scenarios,
    round5_scenarios,
    round6_scenarios,
    round7_scenarios,
    round8_scenarios,
    round9_scenarios,
    round10_scenarios,
    scenarios,
    sealed,
    sealed4,
    sealed5,
    sealed6,
)

# the seeded rounds in order (round 2 first), listed here apart from the generator's own list
SEEDED = (
    round2_scenarios,
    round3_scenarios,
    round4_scenarios,
    round5_scenarios,
    round6_scenarios,
    round7_scenarios,
    round8_scenarios,
    round9_scenarios,
    round10_scenarios,
)


@dataclass(frozen=True)
class Round:
    number: int
    sizes: range  # how many runs it draws (any for round 3: its split is tested apart)
    ranked_share: float  # at least this share with one initiating rank
    healthy: int  # at least this many healthy runs
    banned_at: int  # a scenario to ban by hand, besides the first and the last
    like: int = 3  # the round whose launcher rule it draws by (2: among a family's launchers)

    @property
    def draw(self) -> Callable[..., list[Scenario]]:
        return SEEDED[self.number - 2]

    @property
    def earlier(self) -> tuple[Callable[..., list[Scenario]], ...]:
        """The seeded rounds before it."""
        return SEEDED[: self.number - 2]


ROUNDS = [
    Round(3, range(0, 1000), 0.7, 6, 7),
    Round(4, range(60, 71), 0.75, 5, 9),
    Round(5, range(50, 61), 0.75, 4, 9),
    Round(6, range(65, 76), 0.8, 5, 11),
    Round(7, range(65, 76), 0.55, 15, 13, like=2),
    Round(8, range(85, 96), 0.55, 20, 17, like=2),
    Round(9, range(60, 91), 0.6, 12, 13, like=2),
    Round(10, range(70, 80), 0.7, 10, 19, like=2),
]
by_number = pytest.mark.parametrize("r", ROUNDS, ids=lambda r: f"round{r.number}")


def _earlier(r: Round) -> list[Scenario]:
    return [sc for draw in r.earlier for sc in draw()]


@by_number
def test_a_round_is_deterministic_for_a_seed(r: Round) -> None:
    first, again = r.draw(), r.draw()
    assert [(sc.name, sc.args, sc.nprocs, sc.initiating_rank) for sc in first] == [
        (sc.name, sc.args, sc.nprocs, sc.initiating_rank) for sc in again
    ]
    assert [sc.name for sc in r.draw(seed=r.number + 1)] != [sc.name for sc in first]


@by_number
def test_a_round_excludes_every_earlier_one(r: Round) -> None:
    earlier = scenarios() + fresh_scenarios() + _earlier(r)
    taken = existing_names() | {sc.name for sc in _earlier(r)}
    for seed in (r.number, r.number + 1):
        drawn = r.draw(seed=seed)
        names = [sc.name for sc in drawn]
        assert len(names) == len(set(names))
        assert not set(names) & taken
        assert not {_key(sc) for sc in drawn} & {_key(sc) for sc in earlier}
        assert len({_key(sc) for sc in drawn}) == len(drawn)


@by_number
def test_a_round_honours_an_explicit_exclude_set(r: Round) -> None:
    default = r.draw()
    banned = {default[0].name, default[r.banned_at].name, default[-1].name}
    drawn = r.draw(exclude=existing_names() | banned)
    assert not {sc.name for sc in drawn} & banned
    assert len(drawn) == len(default)


@by_number
def test_a_round_is_weighted_to_one_rank_breaking_first(r: Round) -> None:
    drawn = r.draw()
    assert len(drawn) in r.sizes
    ranked = [sc for sc in drawn if sc.initiating_rank is not None]
    assert len(ranked) >= r.ranked_share * len(drawn)
    for sc in drawn:
        assert sc.launcher in LAUNCHERS, sc.name
        assert sc.slug in E, sc.name
        assert sc.nprocs == 1 or 2 <= sc.nprocs <= 4, sc.name
        assert sc.how.startswith(f"round {r.number}:"), sc.name
        if sc.initiating_rank is not None:
            assert 0 <= sc.initiating_rank < sc.nprocs, sc.name
            assert f"--fail-rank {sc.initiating_rank}" in " ".join(sc.args), sc.name
    launchers = Counter(sc.launcher for sc in ranked)
    torchrun = sum(n for name, n in launchers.items() if name.startswith("torchrun"))
    if r.like == 2:
        # drawn among a family's launchers: torchrun's five forms outnumber the rest
        assert torchrun >= 2 * (len(ranked) - torchrun), launchers
    else:
        # spawn, mp and accelerate are drawn as often as torchrun's forms together
        for launcher in ("spawn", "mp", "accelerate"):
            assert launchers[launcher] >= 4, launchers
        assert torchrun >= 10
    assert {sc.nprocs for sc in ranked} == {2, 3, 4}
    assert sum(sc.slug == "none" for sc in drawn) >= r.healthy


def test_round3_has_a_rank_dead_of_a_crash_signal_of_its_own() -> None:
    ranked = [sc for sc in round3_scenarios() if sc.initiating_rank is not None]
    variants = [f"--variant {signal}" for signal in ("segv", "bus", "fpe")]
    assert any(v in " ".join(sc.args) for sc in ranked for v in variants)


def test_round3_splits_an_open_and_a_blind_part() -> None:
    drawn = round3_scenarios()
    blind = [sc for sc in drawn if sealed(sc.name)]
    open_part = [sc for sc in drawn if not sealed(sc.name)]
    assert 40 <= len(open_part) <= 60
    assert sum(sc.initiating_rank is not None for sc in blind) >= 12


@pytest.mark.parametrize("draw", [round4_scenarios, round5_scenarios, round6_scenarios])
def test_no_host_oom_kill_under_mp_after_round_3(draw: Callable[..., list[Scenario]]) -> None:
    # round 3 dropped every host-OOM kill under mp (launch.py's report has no kill wording)
    for sc in draw():
        assert not (sc.slug == "host-oom-killed" and sc.launcher == "mp"), sc.name


@pytest.mark.parametrize(
    ("draw", "low", "high"),
    [
        (round5_scenarios, 3000, 3800),
        (round6_scenarios, 4000, 5000),
        (round7_scenarios, 5000, 6000),
        (round8_scenarios, 6000, 7000),
        (round9_scenarios, 7000, 8000),
        (round10_scenarios, 8000, 9000),
    ],
)
def test_a_rounds_programs_seeds_are_its_own(
    draw: Callable[..., list[Scenario]], low: int, high: int
) -> None:
    # the programs' seeds of round 5 (3000-3799), 6 (4000-4999), 7 (5000-5999), 8 (6000-6999) and
    # 9 (7000-7999), none of an earlier round's
    seeds = {sc.args[sc.args.index("--seed") + 1] for sc in draw() if "--seed" in sc.args}
    assert seeds
    assert all(low <= int(s) < high for s in seeds)


def test_round6_splits_an_open_and_a_blind_half() -> None:
    drawn = round6_scenarios()
    blind = [sc for sc in drawn if sealed4(sc.name)]
    open_part = [sc for sc in drawn if not sealed4(sc.name)]
    assert 25 <= len(blind) <= 45
    assert 25 <= len(open_part) <= 45
    # the blind half is mostly one rank breaking first, under every kind of launcher
    ranked = [sc for sc in blind if sc.initiating_rank is not None]
    assert len(ranked) >= 0.8 * len(blind)
    assert {"spawn", "mp", "accelerate"} <= {sc.launcher for sc in ranked}
    assert any(sc.launcher.startswith("torchrun") for sc in ranked)


def test_round6_leaves_the_host_oom_kill_out_of_cat_of_the_rank_files() -> None:
    # rounds 2 and 4 dropped it there: `cat` of the rank files has no kill wording
    for sc in round6_scenarios():
        assert not (sc.slug == "host-oom-killed" and sc.launcher == "torchrun-logdir-cat")


@pytest.mark.parametrize("draw", [round7_scenarios, round8_scenarios, round9_scenarios])
def test_rounds_7_to_9_are_drawn_as_round2_was(draw: Callable[..., list[Scenario]]) -> None:
    # sealed2's rule: round 2's families, their launchers and variants (a rank ending without a
    # traceback by exit code 1 or 3 or abort only, and never under spawn), no single process,
    # and round 2's weights: 22 where one rank breaks first, 6 alike, 9 healthy (scaled)
    families = {
        fault: (variants, slug, launchers) for fault, variants, slug, launchers in ROUND2_RANKED
    }
    drawn = draw()
    ranked = [sc for sc in drawn if sc.initiating_rank is not None]
    for sc in ranked:
        args = dict(zip(sc.args[::2], sc.args[1::2], strict=False))
        variants, slug, launchers = families[args["--fault"]]
        assert sc.slug == slug, sc.name
        assert sc.launcher in launchers, sc.name
        variant = args.get("--variant", "")
        assert not variant or variant in variants, sc.name
    assert all(sc.nprocs > 1 for sc in drawn if sc.slug != "none")
    alike = [sc for sc in drawn if sc.slug != "none" and sc.initiating_rank is None]
    healthy = [sc for sc in drawn if sc.slug == "none"]
    assert abs(len(ranked) / len(drawn) - 22 / 37) < 0.05
    assert abs(len(alike) / len(drawn) - 6 / 37) < 0.05
    assert abs(len(healthy) / len(drawn) - 9 / 37) < 0.05


def assert_split(
    drawn: list[Scenario],
    blind: Callable[[str], bool],
    sizes: range,
    ranked: int,
    others: tuple[Callable[[str], bool], ...],
) -> None:
    """A round's open and blind halves: each of `sizes` runs, at least `ranked` runs with a known
    initiating rank in the blind one, picked by a hash of its own (not one of `others`')."""
    picked = [blind(sc.name) for sc in drawn]
    assert sum(picked) in sizes
    assert len(drawn) - sum(picked) in sizes
    assert (
        sum(sc.initiating_rank is not None for sc, p in zip(drawn, picked, strict=True) if p)
        >= ranked
    )
    for other in others:
        assert picked != [other(sc.name) for sc in drawn]


def test_round8_splits_an_open_and_a_blind_half() -> None:
    # the blind half has at least sealed2's 21 runs with a known initiating rank before any drop;
    # a hash of its own: not sealed()'s third nor sealed4()'s half
    assert_split(round8_scenarios(), sealed5, range(35, 56), 24, (sealed4,))


def test_round10_is_drawn_as_round2_was_with_a_rank_ending_silent_twice_as_often() -> None:
    # the launcher among a family's launchers (test_a_round_is_weighted_...), round 6's families:
    # the rank that ends without a traceback also by a crash signal, under spawn too, drawn as
    # two families' worth; no host-OOM kill where the log has no kill wording
    drawn = round10_scenarios()
    ranked = [sc for sc in drawn if sc.initiating_rank is not None]
    silent = [sc for sc in ranked if "--fault child-exit" in " ".join(sc.args)]
    assert len(silent) >= 1.5 * len(ranked) / 18
    assert any(v in " ".join(sc.args) for sc in silent for v in ("segv", "bus", "fpe"))
    for sc in ranked:
        assert not (sc.slug == "host-oom-killed" and sc.launcher in ("mp", "torchrun-logdir-cat"))
    assert all(sc.nprocs > 1 for sc in drawn if sc.slug != "none")


def test_round10_splits_an_open_and_a_blind_half() -> None:
    assert_split(round10_scenarios(), sealed6, range(28, 47), 20, (sealed4, sealed5))


def every_scenario() -> list[Scenario]:
    return [
        *scenarios(),
        *fresh_scenarios(),
        *(sc for r in ROUNDS for sc in r.draw()),
        *round2_scenarios(),
    ]


def test_the_rank_rule_read_from_a_name_is_the_scenarios_structure() -> None:
    # rank_decidable reads the name; mirrored_mismatch is the rule over what the scenario runs:
    # the fault `collective` (the only one labelled collective-mismatch), two ranks, and a
    # launcher that shows both ranks' reports (not spawn, whose parent reports one)
    left_out = []
    for sc in every_scenario():
        args = dict(zip(sc.args[::2], sc.args[1::2], strict=False))
        assert (sc.slug == "collective-mismatch") == (args.get("--fault") == "collective"), sc.name
        structural = (
            args.get("--fault") == "collective" and sc.nprocs == 2 and sc.launcher != "spawn"
        )
        assert rank_decidable(sc.name) is not structural, sc.name
        assert rank_decidable(f"run-{sc.name}.log".removesuffix(".log")) is not structural
        if structural:
            left_out.append(sc)
    # the kind exists in the draws (dev_r4's, dev_r6's and dev_r9's misses among them) and is
    # always one broken rank
    assert len(left_out) >= 4
    assert all(sc.initiating_rank is not None for sc in left_out)


def test_a_spawn_two_rank_mismatch_and_three_ranks_stay_decidable() -> None:
    assert not rank_decidable("collective-mismatch__mp_w2_rank0_op_step5")
    assert mirrored_mismatch("collective-mismatch", "torchrun-tee", 2)
    assert rank_decidable("collective-mismatch__spawn_w2_rank1_op")  # one raiser in the log
    assert rank_decidable("collective-mismatch__torchrun-tee_w3_rank1_numel")  # a majority
    assert rank_decidable("shape-mismatch__mp_w2_rank0_step3")
    assert rank_decidable("gh-collective-mismatch__pytorch-1")  # not a scenario's name
