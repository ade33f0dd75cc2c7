"""Writes the labelled masking corpus, bench/masking_corpus/corpus.jsonl, from a fixed seed.

Each record is a real log line (from tests/logs, or real-looking library output written below)
with values of one entity type planted in a setting where logs hold them (a path, a file name,
a key, a printed dict or dataset sample, after '_' '-' '.', in quotes, in JSON), and decoys
planted beside them that masking must keep: versions, shapes, SHAs, SeqNums, hex addresses,
step counters, seeds, dates, durations, sizes, ports. Some records hold a short host or user
name twice, once where it can be learned and once bare, earlier in the record.

    {"id": 17, "entity": "PHONE_NUMBER", "text": "...", "values": ["(212) 555-0143"],
     "decoys": ["SeqNum=48213"]}

A value is found when none of it is left in the masked text; a decoy is kept when it is still
there whole. Run: python -m bench.masking_corpus.generate (rewrites the file; same seed, same
bytes).
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import json
import random
import string
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent / "corpus.jsonl"
SEED = 20261130
PER_TYPE = 120
ALNUM = string.ascii_letters + string.digits
LOWER = string.ascii_lowercase

# Real-looking output of the libraries training logs come from (tests/logs has the rest).
LIBRARY_LINES = [
    "{'loss': 2.3013, 'grad_norm': 1.0234, 'learning_rate': 1e-05, 'epoch': 0.02}",
    "  5%|▌         | 120/2400 [01:12<22:48,  1.67it/s]",
    "[INFO|trainer.py:2128] 2026-11-30 10:00:01,551 >> ***** Running training *****",
    "[INFO|trainer.py:2129] 2026-11-30 10:00:01,551 >>   Num examples = 52,002",
    "[INFO|configuration_utils.py:731] 2026-11-30 10:00:00,114 >> loading configuration file",
    "node-3:18802:18899 [0] NCCL INFO Channel 00/02 :    0   1   2   3",
    "[2026-11-30 10:00:04,118] [INFO] [logging.py:96:log_dist] [Rank 0] DeepSpeed info",
    "[2026-11-30 10:00:04,118] [INFO] [config.py:988:print] train_batch_size ...... 64",
    "wandb: Tracking run with wandb version 0.16.3",
    "wandb: Run data is saved locally in ./wandb/run-20261130_100005-a1b2c3d4",
    "Epoch 3:  41%|████      | 410/1000 [02:01<02:54, 3.38it/s, v_num=7, train_loss=0.412]",
    "W1130 23:13:03.743000 18801 torch/distributed/run.py:793] Setting OMP_NUM_THREADS=1",
    "INFO:torch.distributed.elastic.agent.server.api:[default] Starting worker group",
    "GPU available: True (cuda), used: True",
    "LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0,1,2,3,4,5,6,7]",
    "[rank0]: step 1200/10000 | loss 2.3456 | lr 3.000e-04 | grad_norm 0.871",
    "iteration      100/  500000 | consumed samples: 51200 | "
    "elapsed time per iteration (ms): 812.4",
    "Loading checkpoint shards: 100%|██████████| 2/2 [00:03<00:00,  1.60s/it]",
    "Downloading data: 100%|██████████| 1.16G/1.16G [00:41<00:00, 28.1MB/s]",
    "  | Name  | Type             | Params | Mode",
    "vLLM INFO 11-30 10:00:05 model_runner.py:1008] Loading model weights took 14.9888 GB",
    "Map (num_proc=8): 100%|██████████| 52002/52002 [00:05<00:00, 9655.57 examples/s]",
]


def carrier_lines() -> list[str]:
    lines = list(LIBRARY_LINES)
    for path in sorted((ROOT / "tests/logs").rglob("*.log")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if 12 < len(line) < 200 and "<" not in line:
                lines.append(line)
    return lines


def _s(rng: random.Random, n: int, alphabet: str = ALNUM) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


# ---- values -----------------------------------------------------------------------------------

FIRST = [
    "alice",
    "bob",
    "carol",
    "dave",
    "erin",
    "frank",
    "gina",
    "hugo",
    "ines",
    "jan",
    "kofi",
    "lena",
    "mira",
    "noor",
    "omar",
    "priya",
]
LAST = [
    "smith",
    "doe",
    "kowalski",
    "nguyen",
    "garcia",
    "muller",
    "rossi",
    "tanaka",
    "okafor",
    "silva",
    "jensen",
]


def user_name(rng: random.Random) -> str:
    first, last = rng.choice(FIRST), rng.choice(LAST)
    shape = rng.randrange(4)
    if shape == 0:
        return first[0] + last
    if shape == 1:
        return f"{first}.{last}"
    if shape == 2:
        return f"{first}{rng.randint(1, 99)}"
    return f"{first}_{last[:3]}"


def short_host(rng: random.Random) -> str:
    return rng.choice(
        [
            f"gpu-node-{rng.randint(1, 64):02d}",
            f"dgx{rng.randint(1, 32):02d}",
            f"trainer-box-{rng.randint(1, 99)}",
            f"a100-{rng.randint(1, 16)}-{rng.randint(1, 8)}",
            f"worker{rng.randint(1, 256)}",
        ]
    )


def fqdn(rng: random.Random) -> str:
    org = rng.choice(["acme", "contoso-research", "initech", "umbrella-ai", "globex"])
    return rng.choice(
        [
            f"{short_host(rng)}.corp.{org}.internal",
            f"ip-10-{rng.randint(0, 255)}-{rng.randint(0, 255)}-{rng.randint(1, 254)}.ec2.internal",
            f"{short_host(rng)}.cluster.local",
            f"{short_host(rng)}.{org}.com",
            f"login{rng.randint(1, 4)}.hpc.{org}.edu",
        ]
    )


def ipv4(rng: random.Random) -> str:
    while True:
        a = ipaddress.IPv4Address(rng.getrandbits(32))
        if not (a.is_loopback or a.is_unspecified or a.is_multicast or a.is_reserved):
            return str(a)


def ipv6(rng: random.Random) -> str:
    groups = [rng.getrandbits(16) for _ in range(8)]
    if rng.random() < 0.6:
        i = rng.randrange(1, 7)
        for j in range(i, min(7, i + rng.randint(1, 4))):
            groups[j] = 0
    if rng.random() < 0.3:
        groups[0] = 0xFE80
    a = ipaddress.IPv6Address(b"".join(g.to_bytes(2, "big") for g in groups))
    return a.compressed


def email(rng: random.Random) -> str:
    domain = rng.choice(["acme.com", "contoso-research.com", "uni-bonn.de", "lab.ox.ac.uk", "x.ai"])
    return f"{user_name(rng)}@{domain}"


def _luhn_complete(prefix: str, length: int, rng: random.Random) -> str:
    digits = prefix + "".join(rng.choice(string.digits) for _ in range(length - len(prefix) - 1))
    for check in string.digits:
        total = 0
        for i, c in enumerate(reversed(digits + check)):
            d = int(c) * (2 if i % 2 else 1)
            total += d - 9 if d > 9 else d
        if total % 10 == 0:
            return digits + check
    raise AssertionError


def card(rng: random.Random) -> str:
    kind = rng.randrange(5)
    if kind == 0:  # Amex 4-6-5
        n = _luhn_complete(rng.choice(["34", "37"]), 15, rng)
        return f"{n[:4]} {n[4:10]} {n[10:]}"
    if kind == 1:  # Diners 4-6-4
        n = _luhn_complete("36", 14, rng)
        return f"{n[:4]} {n[4:10]} {n[10:]}"
    n = _luhn_complete(rng.choice(["4", "51", "55", "2221", "6011"]), 16, rng)
    sep = rng.choice([" ", "-", ""])
    return sep.join(n[i : i + 4] for i in range(0, 16, 4))


def phone(rng: random.Random) -> str:
    def d(n: int) -> str:
        return "".join(rng.choice(string.digits) for _ in range(n))

    area, exch = f"{rng.randint(2, 9)}{d(2)}", f"{rng.randint(2, 9)}{d(2)}"
    return rng.choice(
        [
            f"({area}) {exch}-{d(4)}",
            f"{area}-{exch}-{d(4)}",
            f"{area}.{exch}.{d(4)}",
            f"1-{area}-{exch}-{d(4)}",
            f"+1 {area} {exch} {d(4)}",
            f"+49 30 {rng.randint(1, 9)}{d(7)}",
            f"+44 20 {rng.randint(7, 8)}{d(3)} {d(4)}",
            f"+33 {rng.randint(1, 9)} {d(2)} {d(2)} {d(2)} {d(2)}",
            f"+91 {rng.randint(7, 9)}{d(4)} {d(5)}",
            f"+86 13{d(1)} {d(4)} {d(4)}",
        ]
    )


def _iban(country: str, bban: str) -> str:
    digits = "".join(str(int(c, 36)) for c in bban + country + "00")
    check = 98 - int(digits) % 97
    return f"{country}{check:02d}{bban}"


def iban(rng: random.Random) -> str:
    country = rng.choice(["DE", "GB", "NL", "FR"])
    if country == "DE":
        value = _iban("DE", "".join(rng.choice(string.digits) for _ in range(18)))
    elif country == "GB":
        value = _iban("GB", _s(rng, 4, string.ascii_uppercase) + _s(rng, 14, string.digits))
    elif country == "NL":
        value = _iban("NL", _s(rng, 4, string.ascii_uppercase) + _s(rng, 10, string.digits))
    else:
        value = _iban("FR", _s(rng, 10, string.digits) + _s(rng, 11, string.digits) + "97")
    if rng.random() < 0.4:
        return " ".join(value[i : i + 4] for i in range(0, len(value), 4))
    return value


_B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def btc_address(rng: random.Random) -> str:
    payload = bytes([rng.choice([0, 5])]) + rng.randbytes(20)
    raw = payload + hashlib.sha256(hashlib.sha256(payload).digest()).digest()[:4]
    n = int.from_bytes(raw, "big")
    out = ""
    while n:
        n, r = divmod(n, 58)
        out = _B58[r] + out
    return "1" * (len(raw) - len(raw.lstrip(b"\0"))) + out


def _jwt(rng: random.Random) -> str:
    def part(obj: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    return ".".join([part({"alg": "HS256"}), part({"sub": _s(rng, 10)}), _s(rng, 43)])


def password(rng: random.Random) -> str:
    body = _s(rng, rng.randint(8, 14), ALNUM + "!#%*+-_.;@")
    if rng.random() < 0.4:  # starts or ends with punctuation
        body = rng.choice("%!*#$") + body + rng.choice("%!#")
    return body


TOKENS: dict[str, Callable[[random.Random], str]] = {
    "HF_TOKEN": lambda r: "hf_" + _s(r, 34),
    "WANDB_API_KEY": lambda r: "wandb_v1_" + _s(r, 40),
    "AWS_ACCESS_KEY": lambda r: (
        r.choice(["AKIA", "ASIA"]) + _s(r, 16, string.ascii_uppercase + string.digits)
    ),
    "GITHUB_TOKEN": lambda r: r.choice(["ghp_", "gho_"]) + _s(r, 36),
    "OPENAI_API_KEY": lambda r: "sk-proj-" + _s(r, 20) + "1a" + _s(r, 24),
    "ANTHROPIC_API_KEY": lambda r: "sk-ant-api03-" + _s(r, 80, ALNUM + "-_") + "AA",
    "SLACK_TOKEN": lambda r: "xoxb-" + _s(r, 12, string.digits) + "-" + _s(r, 24),
    "STRIPE_KEY": lambda r: "sk_live_" + _s(r, 24),
    "NGC_API_KEY": lambda r: "nvapi-" + _s(r, 60, ALNUM + "-_") + "x9",
    "JWT": _jwt,
}

# ---- settings ---------------------------------------------------------------------------------

TOKEN_SETTINGS = [
    "export {env}={v}",
    "huggingface-cli login --token {v}",
    '{{"token": "{v}", "step": 12}}',
    "/tmp/ckpt_{v}/x",
    "'{v}'",
    "key={v},",
    "Using {v} for the upload",
    "run-{v}.log",
]
IP_SETTINGS = [
    "Bootstrap : Using ib0:{v}<0>",
    "MASTER_ADDR={v}",
    "/data/ckpt_{v}/step_1000.pt",
    "tee run_{v}.log",
    "dump-{v}-rank3.txt",
    "peer {v} closed the connection",
    '{{"ip": "{v}", "rank": 3}}',
    "'{v}'",
]
IPV4_ONLY = ["tcp://{v}:23456", "connect to {v}:29500 failed"]
IPV6_ONLY = ["connect to [{v}]:29500 failed", "Connection closed by peer [{v}]:43185"]
EMAIL_SETTINGS = [
    "wandb: Currently logged in as: {v}",
    "git config user.email {v}",
    "Reporting to {v} on failure",
    "'{v}'",
    "<{v}>",
    "author={v}",
    "run_{v}_final.log",
]
HOST_SETTINGS = [
    "MASTER_ADDR={v}",
    "hostname={v}",
    "The client socket has failed to connect to [{v}]:29500",
    "writing {v}.log",
    "ckpt_{v}_step5",
    "failed on host {v} during init",
    "SLURM_NODELIST={v}",
    "  host      : {v}",
    "ssh ops@{v} 'nvidia-smi'",
    '{{"host": "{v}"}}',
]
SHORT_HOST_LEARN = [
    "{v}:18802:18899 [0] NCCL INFO Bootstrap : Using ib0",
    "hostname={v}",
    "MASTER_ADDR={v} MASTER_PORT=29500",
    "ssh jdoe@{v} 'nvidia-smi'",
    "[{v}]:29500",
]
SHORT_HOST_BARE = [
    "{v} unreachable, retrying",
    "restarting {v}",
    "ckpt_{v}_step5.pt",
    "'{v}'",
]
USER_SETTINGS = [
    'File "/home/{v}/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1518',
    "saved /Users/{v}/runs/ckpt-100/model.safetensors",
    "C:\\Users\\{v}\\miniconda3\\lib\\site-packages\\torch\\cuda\\__init__.py",
    "SLURM_JOB_USER={v} SLURM_JOB_ID=42",
    "USER={v}",
    "wandb: Currently logged in as: {v} (lab). Use `wandb login --relogin` to force relogin",
    "https://wandb.ai/{v}/llama-ft/runs/a1b2c3d4",
    "ssh {v}@gpu-node-3 'nvidia-smi'",
    "{v}@buildbox:~/work$ python train.py",
    '{{"cwd": "/home/{v}/work"}}',
]
SECRET_SETTINGS = [
    "password={v}",
    "config: {{'user': 'svc', 'password': '{v}'}}",
    '{{"db_password": "{v}"}}',
    "Namespace(password='{v}', lr=0.1)",
    "python train.py --api-key {v}",
    "DB_PASSWORD={v}",
    "secret: {v}",
    "GET /v1/data?token={v}&page=2",
]
URL_SETTINGS = [
    "git clone https://{u}:{v}@git.corp.lan/repo.git",
    "broker redis://:{v}@10.0.0.5:6379/0",
    "DATABASE_URL=postgres://{u}:{v}@db:5432/runs",
]
PHONE_SETTINGS = [
    "{{'text': 'Call me at {v} tomorrow', 'label': 1}}",
    "ALERT: paging on-call {v}",
    'sample 12: "contact {v} for access"',
    '{{"phone": "{v}"}}',
    "tel: {v}",
    "Example 7: reach the front desk at {v}.",
]
CARD_SETTINGS = [
    "card {v} declined",
    "{{'text': 'my card is {v}', 'label': 0}}",
    "card_number: {v}",
    '"cc": "{v}"',
]
IBAN_SETTINGS = ["iban={v}", "{{'iban': '{v}'}}", "transfer to {v} failed", "IBAN: {v}"]
CRYPTO_SETTINGS = ["wallet {v}", "btc_address={v}", "{{'to': '{v}'}}", "send 0.1 BTC to {v}"]

# ---- decoys -----------------------------------------------------------------------------------


def _hex(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


DECOYS: list[Callable[[random.Random], str]] = [
    lambda r: f"torch {r.randint(1, 2)}.{r.randint(0, 5)}.{r.randint(0, 3)}+cu121",
    lambda r: f"cudnn {r.randint(8, 9)}.{r.randint(0, 9)}.{r.randint(0, 9)}.{r.randint(1, 99)}",
    lambda r: f"driver {r.randint(470, 560)}.{r.randint(10, 199)}.{r.randint(1, 9):02d}",
    lambda r: f"transformers=={r.randint(4, 4)}.{r.randint(30, 46)}.{r.randint(0, 3)}",
    lambda r: f"nccl {r.randint(2, 2)}.{r.randint(10, 21)}.{r.randint(1, 5)}",
    lambda r: (
        f"torch.Size([{r.choice([8, 16, 32])}, {r.choice([512, 4096])}, "
        f"{r.choice([768, 11008, 14336])}])"
    ),
    lambda r: (
        f"shape=({r.randint(1, 64)}, {r.choice([224, 256, 512])}, {r.choice([224, 256, 512])})"
    ),
    lambda r: f"commit {_hex(r, 40)}",
    lambda r: f"sha256:{_hex(r, 64)}",
    lambda r: f"@{_hex(r, 7)}",
    lambda r: f"SeqNum={r.randint(1, 999999)}",
    lambda r: f"0x{_hex(r, 12)}",
    lambda r: f"step {r.randint(1, 99999)}/{r.choice([100000, 500000])}",
    lambda r: f"global_step={r.randint(1, 10**6)}",
    lambda r: f"seed={r.randint(0, 2**31 - 1)}",
    lambda r: f"seed {r.randint(10**9, 2**32)}",
    lambda r: (
        f"2026-{r.randint(1, 12):02d}-{r.randint(1, 28):02d} "
        f"{r.randint(0, 23):02d}:{r.randint(0, 59):02d}:{r.randint(0, 59):02d},"
        f"{r.randint(0, 999):03d}"
    ),
    lambda r: f"{r.randint(1, 12):02d}/{r.randint(1, 28):02d}/2026",
    lambda r: (
        f"[{r.randint(0, 59):02d}:{r.randint(0, 59):02d}<{r.randint(0, 9)}:"
        f"{r.randint(0, 59):02d}:{r.randint(0, 59):02d}, {r.randint(1, 9)}.{r.randint(10, 99)}it/s]"
    ),
    lambda r: f"took {r.randint(1, 999)}.{r.randint(0, 99)}s",
    lambda r: f"Tried to allocate {r.randint(1, 99)}.{r.randint(0, 99):02d} GiB",
    lambda r: f"params={r.randint(10**8, 10**11)}",
    lambda r: f"Timeout(ms)={r.choice([600000, 1800000])}",
    lambda r: f"localhost:{r.randint(20000, 30000)}",
    lambda r: f"127.0.0.1:{r.randint(20000, 30000)}",
    lambda r: f"pid {r.randint(1000, 99999)}",
    lambda r: f"[rank{r.randint(0, 63)}]",
    lambda r: f"lr={r.randint(1, 9)}.0e-0{r.randint(3, 6)}",
    lambda r: f"tokens/s {r.randint(1000, 99999)}",
    lambda r: f"acc@1 {r.randint(50, 90)}.{r.randint(0, 99)}",
    lambda r: "c10d::ProcessGroupNCCL::WorkNCCL",
    lambda r: "sklearn.cluster.KMeans",
    lambda r: "https://pytorch.org/docs/stable/notes/cuda.html",
    lambda r: "nvcr.io/nvidia/pytorch:24.01-py3",
    lambda r: "pad_token=<pad>",
    lambda r: f"max_tokens={r.choice([2048, 4096, 8192])}",
    lambda r: f"[{r.randint(100, 999)} {r.randint(100, 999)} {r.randint(1000, 9999)}]",
    lambda r: f"ckpt-{r.randint(100, 99999)}",
    lambda r: f"epoch={r.randint(0, 99)}",
    lambda r: f"ts={r.randint(1_600_000_000_000, 1_800_000_000_000)}",
    lambda r: (
        f"{r.randint(0, 23):02d}:{r.randint(0, 59):02d}:{r.randint(0, 59):02d}."
        f"{r.randint(0, 999999):06d}"
    ),
    lambda r: f"busId {r.choice(['1b000', '3d000', 'a9000'])}",
    lambda r: f"layers.{r.randint(0, 31)}.self_attn.q_proj.weight",
    lambda r: f"uuid {_hex(r, 8)}-{_hex(r, 4)}-{_hex(r, 4)}-{_hex(r, 4)}-{_hex(r, 12)}",
]

# ---- records ----------------------------------------------------------------------------------


def _insert(rng: random.Random, words: list[str], piece: str) -> None:
    """Between two words of the line, so that nothing planted is cut by a later piece."""
    words.insert(rng.randint(0, len(words)), piece)


def _record(
    rng: random.Random, lines: list[str], entity: str, values: list[str], pieces: list[str]
) -> dict[str, object]:
    words = rng.choice(lines).split(" ")
    for piece in pieces:
        _insert(rng, words, piece)
    decoys = [rng.choice(DECOYS)(rng) for _ in range(rng.randint(1, 2))]
    for decoy in decoys:
        _insert(rng, words, decoy)
    return {"entity": entity, "text": " ".join(words), "values": values, "decoys": decoys}


def _planted(rng: random.Random, lines: list[str], entity: str) -> dict[str, object]:
    def one(value: str, settings: list[str], **extra: str) -> dict[str, object]:
        piece = rng.choice(settings).format(v=value, **extra)
        return _record(rng, lines, entity, [value], [piece])

    if entity == "IP_ADDRESS":
        if rng.random() < 0.6:
            return one(ipv4(rng), IP_SETTINGS + IPV4_ONLY)
        return one(ipv6(rng), IP_SETTINGS + IPV6_ONLY)
    if entity == "EMAIL_ADDRESS":
        return one(email(rng), EMAIL_SETTINGS)
    if entity == "HOSTNAME":
        if rng.random() < 0.6:
            return one(fqdn(rng), HOST_SETTINGS)
        host = short_host(rng)
        bare = rng.choice(SHORT_HOST_BARE).format(v=host)
        learn = rng.choice(SHORT_HOST_LEARN).format(v=host)
        record = _record(rng, lines, entity, [host], [bare])
        # The name is learned on a later line than its bare mention: learn first, then mask.
        record["text"] = f"{record['text']}\n{rng.choice(lines)}\n{learn}"
        return record
    if entity == "USERNAME":
        return one(user_name(rng), USER_SETTINGS)
    if entity in TOKENS:
        env = {"HF_TOKEN": "HF_TOKEN", "WANDB_API_KEY": "WANDB_API_KEY"}.get(entity, "API_KEY")
        return one(TOKENS[entity](rng), TOKEN_SETTINGS, env=env)
    if entity == "AWS_SECRET_KEY":
        value = _s(rng, 40, ALNUM + "/+")
        setting = rng.choice(
            ["aws_secret_access_key = {v}", "AWS_SECRET_ACCESS_KEY={v}", '"aws_secret_key": "{v}"']
        )
        return _record(rng, lines, entity, [value], [setting.format(v=value)])
    if entity == "PRIVATE_KEY":
        body = [_s(rng, 64, ALNUM + "+/") for _ in range(rng.randint(2, 5))]
        kind = rng.choice(["RSA ", "OPENSSH ", "EC ", ""])
        block = "\n".join(
            [f"-----BEGIN {kind}PRIVATE KEY-----", *body, f"-----END {kind}PRIVATE KEY-----"]
        )
        record = _record(rng, lines, entity, body, [])
        record["text"] = f"{record['text']}\n{block}\n{rng.choice(lines)}"
        return record
    if entity == "URL_CREDENTIALS":
        return one(password(rng).replace("@", "").replace("/", ""), URL_SETTINGS, u="svc")
    if entity == "SECRET":
        return one(password(rng), SECRET_SETTINGS)
    if entity == "PHONE_NUMBER":
        return one(phone(rng), PHONE_SETTINGS)
    if entity == "CREDIT_CARD":
        return one(card(rng), CARD_SETTINGS)
    if entity == "IBAN_CODE":
        return one(iban(rng), IBAN_SETTINGS)
    if entity == "CRYPTO":
        return one(btc_address(rng), CRYPTO_SETTINGS)
    raise ValueError(entity)


ENTITIES = [
    "IP_ADDRESS",
    "EMAIL_ADDRESS",
    "HOSTNAME",
    "USERNAME",
    *TOKENS,
    "AWS_SECRET_KEY",
    "PRIVATE_KEY",
    "URL_CREDENTIALS",
    "SECRET",
    "PHONE_NUMBER",
    "CREDIT_CARD",
    "IBAN_CODE",
    "CRYPTO",
]


def generate(seed: int = SEED, per_type: int = PER_TYPE) -> list[dict[str, object]]:
    rng = random.Random(seed)
    lines = carrier_lines()
    records = [_planted(rng, lines, e) for e in ENTITIES for _ in range(per_type)]
    # Lines with decoys only: what a log mostly is.
    records += [_record(rng, lines, "", [], []) for _ in range(per_type * 4)]
    for i, r in enumerate(records):
        r["id"] = i
    return records


def main() -> None:
    records = generate()
    with OUT.open("w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n")
    print(f"wrote {len(records)} records to {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
