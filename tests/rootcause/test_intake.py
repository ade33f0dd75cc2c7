"""The one rule for "is this a text log?", shared by the service's intake and the CLI."""

import gzip
import lzma
import random
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rootcause.intake import SNIFF_BYTES, control_share, not_a_log, undecodable_share

LOG = b"epoch 1 step 3 loss 0.1\nRuntimeError: CUDA out of memory.\n" * 20
RUSSIAN_CP1251 = "Ошибка: недостаточно памяти на устройстве\n".encode("cp1251") * 40


@pytest.mark.parametrize(
    "head",
    [
        LOG,
        b"\xef\xbb\xbf" + LOG,  # UTF-8 with a byte order mark
        "Überprüfung fehlgeschlagen: Fehler ✗\n".encode() + LOG,
        b"caf\xe9 au lait\n" + LOG,  # one Latin-1 byte
        b"100%|\xdb\xdb\xdb\xdb\xdb\xdb\xdb\xdb\xdb\xdb| 2/2\n" + LOG,  # a cp437 progress bar
        LOG + "ü".encode()[:1],  # a character cut at the end of the sample
        b"\xff\xfd\xfc\n" + b"x" * 10,  # a few bad bytes, then text
        b"x\n" * SNIFF_BYTES + b"\x00",  # a NUL past the bytes judged
        ("训练失败 显存不足\n".encode("gbk") + LOG[:80]) * 20,  # GBK messages, English errors
        LOG[:100] + b"\x00" + LOG[100:],  # a stray NUL a crashing worker wrote
        LOG[:300] + b"\x00" * 4096 + LOG[300:],  # a block of the file that was never written
        b"\x1b[31mERROR\x1b[0m 10%|\x08\x08##\r 20%|####\x0c\n" * 100
        + LOG,  # a terminal's controls
        LOG[:200] + b"\x03" + LOG[200:],  # a stray ^C echoed into the log
    ],
    ids=[
        "ascii",
        "bom",
        "utf8",
        "latin1-byte",
        "cp437-bar",
        "cut-char",
        "bad-start",
        "nul-late",
        "gbk-with-tracebacks",
        "stray-nul",
        "nul-block",
        "terminal-controls",
        "stray-control",
    ],
)
def test_logs_are_logs(head):
    assert not_a_log(head) is None


@pytest.mark.parametrize(
    ("head", "says"),
    [
        (b"\x7fELF\x02\x01\x01" + b"\x00" * 9, "binary file"),
        (b"PK\x03\x04\x14\x00", "binary file"),
        (gzip.compress(LOG), "binary file"),
        (b"GIF89a\x01\x00\x01\x00", "binary file"),
        (b"".join(bytes([i, 0, 0, 0]) for i in range(256)) * 8, "binary file"),  # NULs all over
        ("log line\n".encode("utf-16"), "UTF-16"),
        (bytes(range(128, 256)) * 8, "not UTF-8 text"),
        (RUSSIAN_CP1251, "not UTF-8 text"),
        (random.Random(7).randbytes(SNIFF_BYTES), "binary file"),  # few NULs, half decodable
        (lzma.compress(LOG * 50)[6:], "binary file"),  # compressed, its header cut off
    ],
    ids=[
        "elf",
        "zip",
        "gzip",
        "gif",
        "nuls",
        "utf16",
        "high-bytes",
        "cp1251",
        "random",
        "compressed",
    ],
)
def test_what_is_not_a_log_is_named(head, says):
    reason = not_a_log(head)

    assert reason is not None
    assert says in reason


def test_the_share_counts_bytes_not_characters():
    assert undecodable_share(b"ab\xff\xfe") == 0.5
    assert undecodable_share("ü".encode() * 4) == 0.0
    assert undecodable_share(b"") == 0.0


@given(st.binary(max_size=600))
def test_the_control_share_counts_the_controls_no_terminal_output_carries(data: bytes) -> None:
    controls = re.findall(rb"[\x01-\x07\x0b\x0e-\x1a\x1c-\x1f\x7f]", data)
    assert control_share(data) == (len(controls) / len(data) if data else 0.0)
