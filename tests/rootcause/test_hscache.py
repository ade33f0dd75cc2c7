"""The on-disk cache of compiled Hyperscan databases (rootcause/hscache.py)."""

from __future__ import annotations

from pathlib import Path

import hyperscan
import pytest

from rootcause import hscache
from rootcause.masking import Masker, mask_log

FLAGS = [hyperscan.HS_FLAG_SOM_LEFTMOST] * 2


def _hits(db: hyperscan.Database, data: bytes) -> list[tuple[int, int, int]]:
    found: list[tuple[int, int, int]] = []
    db.scan(data, match_event_handler=lambda pid, s, e, f, c: found.append((pid, s, e)))
    return found


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(hscache.CACHE_ENV, str(tmp_path))
    return tmp_path


def test_a_cached_database_matches_as_the_compiled_one(cache: Path) -> None:
    first = hscache.compiled([b"abc", b"b+c"], FLAGS)
    assert len(list(cache.glob("*.hsdb"))) == 1
    second = hscache.compiled([b"abc", b"b+c"], FLAGS)  # loaded from the file
    data = b"xxabc bbbc abc"
    assert _hits(second, data) == _hits(first, data) != []


def test_a_broken_file_is_compiled_again(cache: Path) -> None:
    hscache.compiled([b"abc"], FLAGS[:1])
    (path,) = cache.glob("*.hsdb")
    path.write_bytes(b"not a database")
    assert _hits(hscache.compiled([b"abc"], FLAGS[:1]), b"abc") == [(0, 0, 3)]
    assert path.read_bytes() != b"not a database"


def test_another_pattern_is_another_file(cache: Path) -> None:
    hscache.compiled([b"abc"], FLAGS[:1])
    hscache.compiled([b"abd"], FLAGS[:1])
    assert len(list(cache.glob("*.hsdb"))) == 2


def test_off_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(hscache.CACHE_ENV, "off")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert _hits(hscache.compiled([b"abc"], FLAGS[:1]), b"abc") == [(0, 0, 3)]
    assert list(tmp_path.rglob("*")) == []


def test_the_cache_is_pruned_to_its_limit(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hscache, "MAX_BYTES", 1)
    for word in (b"one", b"two", b"three"):
        hscache.compiled([word], FLAGS[:1])
    assert len(list(cache.glob("*.hsdb"))) <= 1


def test_names_learned_from_a_log_never_reach_the_cache(cache: Path) -> None:
    log = b"ssh mkowalski@trainer-box-42 ok\nmkowalski trainer-box-42 again\n"
    masked = "".join(mask_log(lambda: [log], Masker(analyzer=None)))
    assert "mkowalski" not in masked
    for path in cache.iterdir():
        content = path.read_bytes()
        assert b"mkowalski" not in content
        assert b"trainer-box-42" not in content
