"""A property: a value planted anywhere in a real log line is masked.

Any IPv4 or IPv6 address, e-mail address, token of a known format or home-path user, planted at
a random place in a line of tests/logs, in a random setting (inside a path, after '_', '-' or
'.', in quotes, in JSON, after a key), never survives masking. hypothesis is not installed here,
so the cases come from a seeded generator: the same 3,000 on every run, and a failure names its
case. The corpus of bench/masking_corpus measures the same on labelled lines, with decoys.
"""

from __future__ import annotations

import base64
import ipaddress
import json
import random
import re
import string
from collections.abc import Callable
from pathlib import Path

import pytest

from rootcause.masking import Masker

ROOT = Path(__file__).resolve().parents[2]
CASES = 3000
ALNUM = string.ascii_letters + string.digits


def carrier_lines() -> list[str]:
    lines = []
    for path in sorted((ROOT / "tests/logs").rglob("*.log")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if 10 < len(line) < 240:
                lines.append(line)
    return lines


def _s(rng: random.Random, n: int, alphabet: str = ALNUM) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def ipv4(rng: random.Random) -> str:
    while True:
        address = ipaddress.IPv4Address(rng.getrandbits(32))
        if not (address.is_loopback or address.is_unspecified or address.is_multicast):
            return str(address)


def ipv6(rng: random.Random) -> str:
    groups = [rng.getrandbits(16) for _ in range(8)]
    if rng.random() < 0.6:  # a run of zeros, written '::'
        i = rng.randrange(8)
        for j in range(i, min(8, i + rng.randint(1, 5))):
            groups[j] = 0
    address = ipaddress.IPv6Address(b"".join(g.to_bytes(2, "big") for g in groups))
    if address.is_loopback or address.is_unspecified or address.ipv4_mapped:
        return ipv6(rng)
    return address.compressed if rng.random() < 0.8 else address.exploded


def email(rng: random.Random) -> str:
    local = _s(rng, rng.randint(3, 8), string.ascii_lowercase)
    if rng.random() < 0.5:
        local += rng.choice("._-+") + _s(rng, rng.randint(2, 6), string.ascii_lowercase)
    domain = _s(rng, rng.randint(3, 9), string.ascii_lowercase)
    tld = rng.choice(["com", "org", "io", "de", "co.uk", "ai", "dev", "fr", "research"])
    return f"{local}@{domain}.{tld}"


def _jwt(rng: random.Random) -> str:
    def part(obj: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    return ".".join([part({"alg": "HS256"}), part({"sub": _s(rng, 10)}), _s(rng, 43, ALNUM + "-_")])


TOKENS: list[Callable[[random.Random], str]] = [
    lambda r: "hf_" + _s(r, 34),
    lambda r: "api_org_" + _s(r, 34),
    lambda r: "wandb_v1_" + _s(r, 40),
    lambda r: "AKIA" + _s(r, 16, string.ascii_uppercase + string.digits),
    lambda r: "ASIA" + _s(r, 16, string.ascii_uppercase + string.digits),
    lambda r: "ghp_" + _s(r, 36),
    lambda r: "github_pat_11" + _s(r, 20) + "_" + _s(r, 59),
    lambda r: "sk-proj-" + _s(r, 24) + "1a" + _s(r, 20),
    lambda r: "sk-ant-api03-" + _s(r, 60, ALNUM + "-_") + "AA",
    lambda r: "xoxb-" + _s(r, 12, string.digits) + "-" + _s(r, 24),
    lambda r: "sk_live_" + _s(r, 24),
    lambda r: "nvapi-" + _s(r, 48, ALNUM + "-_") + "x9",
    _jwt,
]


def token(rng: random.Random) -> str:
    return rng.choice(TOKENS)(rng)


def home_user(rng: random.Random) -> str:
    user = "q" + _s(rng, rng.randint(3, 8), string.ascii_lowercase)
    if rng.random() < 0.3:
        user += rng.choice("._-") + _s(rng, 3, string.ascii_lowercase)
    return user


SETTINGS = [
    " {v} ",
    "/data/ckpt_{v}/step_1000.pt",
    "run_{v}.log",
    "dump-{v}-rank3.txt",
    "out.{v}.err",
    "'{v}'",
    '"{v}"',
    '{{"value": "{v}", "step": 12}}',
    "key={v},",
    "({v})",
    "_{v}_",
    "<{v}>",
    "value: {v}",
]
HOME_SETTINGS = [
    "/home/{v}/runs/exp1/train.py",
    'File "/home/{v}/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1',
    "'/Users/{v}/data/shard_0001.tar'",
    '{{"cwd": "/home/{v}", "rank": 3}}',
    "ckpt_/home/{v}/out",
    "--output_dir=/home/{v}/ckpt-100",
]
KINDS: dict[str, Callable[[random.Random], str]] = {
    "ipv4": ipv4,
    "ipv6": ipv6,
    "email": email,
    "token": token,
    "home_user": home_user,
}
# A four-part dotted number right after these words is a version (cudnn 8.9.2.26), on purpose.
_VERSION_BEFORE = re.compile(r"(?i)(?:cudnn|nccl|cuda|cublas|driver|version|release|ver|v)\s*$")


def planted(rng: random.Random, lines: list[str]) -> tuple[str, str, str]:
    kind = rng.choice(sorted(KINDS))
    value = KINDS[kind](rng)
    setting = rng.choice(HOME_SETTINGS if kind == "home_user" else SETTINGS)
    if kind == "ipv6" and setting == "value: {v}":
        setting = "[{v}]:29500"
    line = rng.choice(lines)
    spaces = [0, len(line)] + [m.start() for m in re.finditer(" ", line)]
    at = rng.choice(spaces)
    if kind == "ipv4" and _VERSION_BEFORE.search(line[:at]):
        at = len(line)
    rest = line[at:]
    if setting.endswith("{v}") and rest[:1].isalnum():
        # planted at a line's start before a letter or digit, the value would run on into it
        # ("value: 84.21.160.67" + "8790 ..." is no address): a space keeps it a value
        rest = " " + rest
    return kind, value, line[:at] + setting.format(v=value) + rest


def _cases() -> list[tuple[str, str, str]]:
    rng = random.Random(13)
    lines = carrier_lines()
    return [planted(rng, lines) for _ in range(CASES)]


def test_every_planted_value_is_masked() -> None:
    leaks = []
    kinds: set[str] = set()
    for kind, value, line in _cases():
        kinds.add(kind)
        out = Masker(secret=b"k").mask(line + "\n")
        if value in out:
            leaks.append((kind, value, line))
    assert kinds == set(KINDS)
    assert not leaks, f"{len(leaks)} of {CASES} leaked, e.g. {leaks[:5]}"


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_the_generator_plants_what_it_says(kind: str) -> None:
    rng = random.Random(kind)
    value = KINDS[kind](rng)
    assert value
    if kind in ("ipv4", "ipv6"):
        ipaddress.ip_address(value)
