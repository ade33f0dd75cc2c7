"""iter_line_chunks: line alignment, bounded memory, odd bytes; and masking across chunks."""

import io
import subprocess
import sys
from pathlib import Path

import pytest

from rootcause.masking import Masker, iter_line_chunks

HF = "hf_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3f"


def test_chunks_end_at_newlines_and_rejoin_exactly() -> None:
    data = b"".join(f"line {i} {'x' * (i % 50)}\n".encode() for i in range(5000))
    chunks = list(iter_line_chunks(io.BytesIO(data), chunk_size=4096))
    assert len(chunks) > 10
    assert all(c.endswith("\n") for c in chunks)
    assert all(len(c.encode()) <= 4096 for c in chunks)
    assert "".join(chunks).encode() == data


def test_iterable_source_and_empty_input() -> None:
    assert list(iter_line_chunks(io.BytesIO(b""))) == []
    assert list(iter_line_chunks([])) == []
    assert list(iter_line_chunks([b"a\nb", b"c\n", b"", b"d"], chunk_size=16)) == ["a\nbc\nd"]


def test_secret_near_chunk_boundary_is_masked() -> None:
    # Put the token on the line that straddles every plausible cut position.
    for pad in range(0, 120, 7):
        text = ("x" * pad + "\n") + "\n".join(f"step {i} loss 0.5" for i in range(30))
        text += f"\nexport HF_TOKEN={HF}\n" + "tail\n" * 10
        masker = Masker(secret=b"k")
        out = "".join(masker.mask(c) for c in iter_line_chunks([text.encode()], chunk_size=128))
        assert "hf_aB3" not in out
        assert masker.counts == {"HF_TOKEN": 1}
        assert out.count("\n") == text.count("\n")


def test_invalid_utf8_and_nuls() -> None:
    data = b"ok \xff\xfe bad \x00nul\x00 /home/alice/x\n\xe2\x82\n"
    (chunk,) = iter_line_chunks(io.BytesIO(data))
    assert "\x00" not in chunk
    assert "\ufffd" in chunk
    assert Masker(secret=b"k").mask(chunk) == "ok \ufffd\ufffd bad nul /home/<USER>/x\n\ufffd\n"


def test_multibyte_character_never_split() -> None:
    data = ("é" * 5000).encode()  # one long line of 2-byte characters, no blanks
    chunks = list(iter_line_chunks(io.BytesIO(data), chunk_size=1001))
    assert "".join(chunks) == "é" * 5000
    assert all("\ufffd" not in c for c in chunks)


def test_crlf_and_progress_bar_carriage_returns() -> None:
    bar = "".join(f"{i}%|##| {i}/100\r" for i in range(100))
    data = ("start\r\n" + bar + "\ndone\r\n").encode()
    chunks = list(iter_line_chunks(io.BytesIO(data), chunk_size=256))
    text = "".join(chunks)
    assert text == "start\n" + bar[:-1] + "\ndone\n"  # the final \r\n is a line end
    assert all(len(c.encode()) <= 256 for c in chunks)
    assert all(c.endswith(("\n", "\r")) for c in chunks)


def test_ten_megabyte_single_line_is_cut_and_masked() -> None:
    size = 10 * (1 << 20)
    line = (b"tok " * (size // 4))[:size] + b" bob@example.com\n"
    chunks = iter_line_chunks(io.BytesIO(line), chunk_size=1 << 20)
    masker = Masker(secret=b"k")
    total = 0
    pieces = 0
    tail = ""
    for chunk in chunks:
        assert len(chunk.encode()) <= 1 << 20
        total += len(chunk)
        pieces += 1
        tail = masker.mask(chunk)
    assert pieces == 11
    assert total == len(line)
    assert tail.endswith(" <EMAIL_1>\n")


def test_iterable_with_one_huge_piece_is_sliced() -> None:
    big = b"a" * (3 << 20) + b"\n"
    chunks = list(iter_line_chunks([big], chunk_size=1 << 20))
    assert [len(c) for c in chunks] == [1 << 20, 1 << 20, 1 << 20, 1]


MEMORY_PROBE = """
from bench.masking import peak_rss_mb
from bench.genlog import generate_log
from rootcause.masking import Masker, iter_line_chunks
masker = Masker(secret=b"k")
before = 0
for i, chunk in enumerate(iter_line_chunks(generate_log(30 << 20, seed=7))):
    masker.mask(chunk)
    if i == 1:  # after the database compile and the first chunks
        before = peak_rss_mb()
print(int(before), int(peak_rss_mb()), masker.counts.get("HOSTNAME", 0))
"""


@pytest.mark.heavy  # 30 MB through the masker
def test_streaming_30_mb_keeps_memory_flat() -> None:
    # Memory must not grow with the log: a 100 MB log has to fit a 300 MB worker.
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", MEMORY_PROBE], cwd=root, capture_output=True, text=True, timeout=240
    )
    assert out.returncode == 0, out.stderr[-2000:]
    before_mb, after_mb, hosts = (int(x) for x in out.stdout.split())
    assert hosts > 1000
    assert after_mb - before_mb < 15
    assert after_mb < 150
