import pytest

from rootcause.catalogue import load_entries
from rootcause.engine import Engine
from rootcause.matching import Matcher, PatternError, check_pattern, parse_numeric, to_number
from tests.rootcause.fixture_catalogue import data, typed


def test_every_catalogue_pattern_compiles_in_one_engine():
    shipped = load_entries()
    engine = Engine(shipped)
    assert len(engine.signals) == sum(len(e.fingerprints.signals) for e in shipped)
    for entry in shipped:
        ids = [s.id for s in entry.fingerprints.signals]
        assert len(ids) == len(set(ids)), entry.slug


@pytest.mark.parametrize(
    "pattern",
    [
        r"(a)\1",  # backreference
        r"foo(?=bar)",  # lookahead
        r"(?<=foo)bar",  # lookbehind
        r"(?>atomic)",  # atomic group (Python 3.11 accepts it, Hyperscan does not)
        r"a++",  # possessive
        r"unclosed(",
    ],
)
def test_patterns_outside_the_contract_are_rejected(pattern):
    with pytest.raises(PatternError):
        check_pattern(pattern)


def test_an_entry_with_a_bad_pattern_names_itself():
    bad = data()
    bad[0]["fingerprints"]["signals"][0]["pattern"] = r"(x)\1"
    with pytest.raises(PatternError, match="optimizer-oom/oom"):
        Engine(typed(bad))


def test_named_groups_and_case_flag_are_accepted():
    check_pattern(r"(?i)tried to allocate (?P<req>[0-9.]+ [GM]iB)")


def test_matcher_maps_hits_to_lines():
    m = Matcher(["alpha", "beta"])
    data = b"x\nalpha beta\n\nbeta\nalpha alpha\n"
    hits, starts = m.scan(data)
    assert hits == [(1, 0), (1, 1), (3, 1), (4, 0)]
    assert starts == {0: 0, 1: 2, 3: 14, 4: 19}


def test_sizes_and_comparisons():
    assert to_number("20.00 MiB") == 20 * 1024**2
    assert to_number("3.4 GiB") == pytest.approx(3.4 * 1024**3)
    assert to_number("512 bytes") == 512
    assert to_number("7") == 7
    assert to_number(None) is None
    assert parse_numeric("free > 2 * req").holds({"free": "5 GiB", "req": "2 GiB"})
    assert not parse_numeric("free > 2 * req").holds({"free": "3 GiB", "req": "2 GiB"})
    assert parse_numeric("n >= 8").holds({"n": "8"})
    assert not parse_numeric("free > req").holds({"free": None, "req": "1 MiB"})
    with pytest.raises(PatternError):
        parse_numeric("free >> req")


def test_matcher_scans_from_several_threads():
    from concurrent.futures import ThreadPoolExecutor

    m = Matcher(["alpha", "beta"])
    data = b"alpha\nbeta\n" * 10_000
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: len(m.scan(data)[0]), range(16)))
    assert results == [400] * 16  # 200 hits kept per pattern per scan
