"""A generator of cluster and cloud log records with planted values, by kind, and decoys.

Issue 33's shapes: the secrets and identifiers of Slurm, Kubernetes and the clouds, each in the
settings such logs print them (a shell prompt, an ``scontrol`` row, a connection string, a pod
name, a bucket), with values of its own (random from a seed, never copied from a real log) and
decoys beside them that masking must leave whole: step counters, losses, shapes, versions, CUDA
addresses, SeqNums, memory figures, ports, commit hashes, timestamps.

    {"kind": "slurm_nodelist", "text": "...", "values": ["h100n-[171-174,178]"],
     "decoys": ["SeqNum=48213"]}

A value is found when it is nowhere in the masked text; a decoy is kept when it is still there
whole. ``records()`` gives the labelled records (bench/masking.py's ``--recall`` table and
tests/rootcause/test_masking_cluster.py), ``dense_log()`` a log made of them, a finding every
~140 bytes (the speed figures).
"""

from __future__ import annotations

import random
import re
import string
from collections.abc import Callable, Iterator
from typing import TypedDict

SEED = 20261207
ALNUM = string.ascii_letters + string.digits
LOWER = string.ascii_lowercase
HEX = "0123456789abcdef"

FIRST = ["declan", "maria", "mgonzalez", "sofia", "lukas", "aiko", "tomasz", "ines", "kwame"]
LAST = ["murphy", "gonzalez", "rossi", "lindqvist", "kim", "novak", "adeyemi", "dubois"]


def _s(rng: random.Random, n: int, alphabet: str = ALNUM) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _user(rng: random.Random) -> str:
    first, last = rng.choice(FIRST), rng.choice(LAST)
    return rng.choice([f"{first}.{last}", f"{first[0]}{last}", f"{first}_{last}", first + last])


def _host(rng: random.Random) -> str:
    return rng.choice(
        [
            f"gpu-node-{rng.randint(1, 64)}",
            f"h100n-{rng.randint(100, 299)}",
            f"dgx-a100-{rng.randint(1, 40):02d}",
            f"compute-{rng.randint(1, 9)}-{rng.randint(1, 30)}",
        ]
    )


# ---- decoys: what the diagnosis needs and masking must keep ----------------------------------


def _decoy(rng: random.Random) -> str:
    kind = rng.randrange(11)
    if kind == 0:
        return f"step {rng.randint(1, 99999)}/{rng.choice([100000, 250000, 500000])}"
    if kind == 1:
        return f"loss {rng.uniform(0.1, 9):.4f}"
    if kind == 2:
        return f"torch.Size([{rng.choice([1, 4, 8, 16])}, {rng.choice([2048, 4096, 8192])}])"
    if kind == 3:
        return rng.choice(["torch 2.3.1+cu121", "transformers 4.44.2", "CUDA 12.4", "NCCL 2.21.5"])
    if kind == 4:
        return f"0x7f{_s(rng, 10, HEX)}"
    if kind == 5:
        return f"SeqNum={rng.randint(1000, 999999)}"
    if kind == 6:
        return f"{rng.uniform(1, 79):.2f} GiB"
    if kind == 7:
        return f"port {rng.choice([29500, 6379, 8080, 2379, 29400])}"
    if kind == 8:
        return f"commit {_s(rng, 40, HEX)}"
    if kind == 9:
        return f"2026-12-0{rng.randint(1, 6)} {rng.randint(10, 23)}:{rng.randint(10, 59)}:21,551"
    return f"{rng.randint(10000, 81559)}MiB"


# ---- kinds: (text, values), the text with a {d} where a decoy goes ----------------------------

Kind = Callable[[random.Random], tuple[str, list[str]]]


def gitlab_token(rng: random.Random) -> tuple[str, list[str]]:
    v = "glpat-" + _s(rng, 20, ALNUM + "-_")
    t = rng.choice(
        [
            "export GITLAB_TOKEN={v}  # {d}",
            "+ curl --header 'PRIVATE-TOKEN: {v}' https://gitlab.example/api/v4/projects ({d})",
            "using deploy token {v} for registry pull, {d}",
        ]
    )
    return t.replace("{v}", v), [v]


def npm_token(rng: random.Random) -> tuple[str, list[str]]:
    v = "npm_" + _s(rng, 36)
    t = rng.choice(
        ["//registry.npmjs.org/:_authToken={v}", "NPM_TOKEN={v} npm ci  # {d}", "token {v} {d}"]
    )
    return t.replace("{v}", v), [v]


def google_api_key(rng: random.Random) -> tuple[str, list[str]]:
    v = "AIza" + _s(rng, 35, ALNUM + "-_")
    t = rng.choice(
        [
            "GET https://generativelanguage.googleapis.com/v1beta/models?key={v} 403 ({d})",
            "GOOGLE_API_KEY={v}",
            "gemini client: api key {v} rejected, {d}",
        ]
    )
    return t.replace("{v}", v), [v]


def openai_key_letters(rng: random.Random) -> tuple[str, list[str]]:
    v = "sk-" + rng.choice(["", "proj-"]) + _s(rng, 48, string.ascii_letters)
    t = rng.choice(
        [
            "openai.AuthenticationError: Incorrect API key provided: {v}. {d}",
            "OPENAI_API_KEY={v}",
            "client = OpenAI(api_key='{v}')  # {d}",
        ]
    )
    return t.replace("{v}", v), [v]


def generic_secret(rng: random.Random) -> tuple[str, list[str]]:
    v = _s(rng, rng.randint(24, 40), ALNUM + "+/")
    key = rng.choice(
        ["client_secret", "MLFLOW_TRACKING_TOKEN", "db_secret", "SECRET_KEY", "auth_token"]
    )
    t = rng.choice(['{k}="{v}"  # {d}', "{k}: {v}", "export {k}={v}", "'{k}': '{v}', {d}"])
    return t.replace("{k}", key).replace("{v}", v), [v]


def azure_sas(rng: random.Random) -> tuple[str, list[str]]:
    v = _s(rng, 30) + "%2B" + _s(rng, 10) + "%3D"
    acct = "mlstore" + _s(rng, 4, LOWER)
    t = (
        f"Uploading to https://{acct}.blob.core.windows.net/ckpt/step_1200.pt?sv=2022-11-02"
        f"&ss=b&srt=co&sp=rwl&se=2026-12-31T00:00:00Z&sig={v} ({{d}})"
    )
    return t, [v]


def azure_account_key(rng: random.Random) -> tuple[str, list[str]]:
    v = _s(rng, 86, ALNUM + "+/") + "=="
    acct = "mlstore" + _s(rng, 4, LOWER)
    t = (
        f"AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName={acct};"
        f"AccountKey={v};EndpointSuffix=core.windows.net"
    )
    return t, [v]


def private_key_id(rng: random.Random) -> tuple[str, list[str]]:
    v = _s(rng, 40, HEX)
    t = rng.choice(['  "private_key_id": "{v}",', "google.auth: private_key_id={v} not found, {d}"])
    return t.replace("{v}", v), [v]


def slack_webhook(rng: random.Random) -> tuple[str, list[str]]:
    upper = string.ascii_uppercase + string.digits
    v = f"T{_s(rng, 8, upper)}/B{_s(rng, 10, upper)}/{_s(rng, 24)}"
    t = "alert posted to https://hooks.slack.com/services/{v} ({d})"
    return t.replace("{v}", v), [v]


def netrc_password(rng: random.Random) -> tuple[str, list[str]]:
    v = _s(rng, rng.randint(12, 40), ALNUM + "!#%")
    t = rng.choice(
        [
            "$ cat ~/.netrc\nmachine api.wandb.ai\n  login user\n  password {v}\n{d}",
            "machine api.wandb.ai login user password {v}",
        ]
    )
    return t.replace("{v}", v), [v]


def odd_password(rng: random.Random) -> tuple[str, list[str]]:
    v = (
        rng.choice(["&", " ", "", "*", "["])
        + _s(rng, 10, ALNUM + "%[*.)-")
        + rng.choice(["", "'.)-s0JK", "%", "*"])
    )
    if "'" in v:
        t = '{"user": "svc", "password": "{v}", "note": "{d}"}'
    else:
        t = rng.choice(
            [
                "+ redis-cli -h cache -a '{v}' ping  # {d}",
                "+ python migrate.py --db-password '{v}'  # {d}",
                '{"password": "{v}", "note": "{d}"}',
                "DB_PASSWORD='{v}' ./train.sh  # {d}",
            ]
        )
    return t.replace("{v}", v), [v]


def user_at_host_prompt(rng: random.Random) -> tuple[str, list[str]]:
    user, host = _user(rng), _host(rng)
    job = rng.randint(10**5, 10**7)
    t = f"{{d}}\n{user}@{host}:~$ sbatch train.sbatch\nSubmitted batch job {job}"
    return t, [f"{user}@", f"@{host}"]


def ssh_host(rng: random.Random) -> tuple[str, list[str]]:
    user, host = _user(rng), _host(rng)
    domain = rng.choice(["corp.acme.internal", "hpc.uni-example.se", "cluster.lab.kr"])
    t = (
        f"+ ssh {user}@{host}.{domain} nvidia-smi  # {{d}}\n"
        f"ssh: connect to host {host}.{domain} port 22: Connection timed out"
    )
    return t, [user, f"{host}.{domain}"]


def mac_address(rng: random.Random) -> tuple[str, list[str]]:
    v = ":".join(f"{rng.randrange(256):02x}" for _ in range(6))
    t = (
        "2: ib0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 4092\n"
        f"    link/ether {v} brd ff:ff:ff:ff:ff:ff ({{d}})"
    )
    return t, [v]


def _nodelist(rng: random.Random) -> str:
    prefix = rng.choice(["h100n-", "node", "gpu-a-", "dgx"])
    a = rng.randint(10, 170)
    return f"{prefix}[{a:03d}-{a + rng.randint(1, 5):03d},{a + 7:03d}]"


def slurm_nodelist(rng: random.Random) -> tuple[str, list[str]]:
    v = _nodelist(rng)
    t = rng.choice(
        [
            "   NodeList={v} BatchHost={h}\n   {d}",
            "srun: error: {v}: tasks 0-7: Exited with exit code 1 ({d})",
            "SLURM_JOB_NODELIST={v}",
        ]
    )
    h = _host(rng)
    values = [v] + ([h] if "{h}" in t else [])
    return t.replace("{v}", v).replace("{h}", h), values


def slurm_rows(rng: random.Random) -> tuple[str, list[str]]:
    user, nodes = _user(rng)[:8], _nodelist(rng)
    job = rng.randint(10**5, 10**7)
    if rng.random() < 0.5:
        t = (
            "             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)\n"
            f"           {job}       gpu llama-ft {user:>8}  R    3:12:04      4 {nodes}"
        )
    else:
        t = (
            f"JobId={job} JobName=llama-ft\n"
            f"   UserId={user}(41021) GroupId=ml(4000) MCS_label=N/A\n"
            f"   NodeList={nodes}  ({{d}})"
        )
    return t, [user, nodes]


def slurm_user_var(rng: random.Random) -> tuple[str, list[str]]:
    user = _user(rng)
    t = rng.choice(
        [
            "SLURM_JOB_USER={u}",
            "  'SLURM_JOB_USER': '{u}', {d}",
            "SLURM_JOB_USER = {u}",
            "export SBATCH_USER={u}",
        ]
    )
    return t.replace("{u}", user), [user]


def k8s_pod_user(rng: random.Random) -> tuple[str, list[str]]:
    first, last = rng.choice(FIRST), rng.choice(LAST)
    job = rng.choice(["llama-ft", "sft-7b", "dpo-run"])
    t = (
        f"Mounting /home/{first}.{last}/.cache/huggingface ({{d}})\n"
        f"pod/pytorchjob-{first}-{last}-{job}-worker-{rng.randint(0, 7)} OOMKilled"
    )
    return t, [f"{first}.{last}", f"{first}-{last}"]


def cloud_account(rng: random.Random) -> tuple[str, list[str]]:
    v = str(rng.randint(10**11, 10**12 - 1))
    t = rng.choice(
        [
            "upload failed: s3://ml-ckpt-{v}-us-east-1/llama/step_1200/ AccessDenied ({d})",
            "assumed role arn:aws:iam::{v}:role/SageMakerExecution, {d}",
            "arn:aws:sts::{v}:assumed-role/train/i-0abc, {d}",
        ]
    )
    return t.replace("{v}", v), [v]


def gcp_project(rng: random.Random) -> tuple[str, list[str]]:
    v = f"{rng.choice(['ml-research', 'acme-train', 'llm-lab'])}-{rng.randint(100000, 999999)}"
    t = rng.choice(
        [
            "gs://{v}-checkpoints/run7/ 403 ({d})",
            "google.api_core.exceptions.PermissionDenied: projects/{v}/locations/us-central1",
            "gcloud config set project {v}  # {d}",
        ]
    )
    return t.replace("{v}", v), [v]


def psl_host(rng: random.Random) -> tuple[str, list[str]]:
    tld = rng.choice(["it", "se", "kr", "tech", "fi", "cz", "pl", "ac.kr", "xyz", "dev"])
    head = rng.choice(["login", "gpu", "mds", "storage"]) + str(rng.randint(1, 9))
    site = rng.choice(["cineca", "kth", "snu", "aurora"])
    v = f"{head}.{rng.choice(['hpc', 'lab'])}.{site}.{tld}"
    t = rng.choice(
        [
            "Connecting to {v}:29500 ({d})",
            "mount: {v}:/scratch failed, {d}",
            "RuntimeError: The server socket has failed to bind to {v}",
        ]
    )
    return t.replace("{v}", v), [v]


def wandb_hf_entity(rng: random.Random) -> tuple[str, list[str]]:
    user = rng.choice(FIRST) + "-" + rng.choice(LAST)
    t = rng.choice(
        [
            "wandb: ⭐️ View project at https://wandb.ai/{u}/llama-ft",
            "Pushing to https://huggingface.co/{u}/llama-ft-v2 ({d})",
            "hub_model_id='{u}/mistral-sft', {d}",
            "WANDB_ENTITY={u}",
        ]
    )
    return t.replace("{u}", user), [user]


def phone_national(rng: random.Random) -> tuple[str, list[str]]:
    if rng.random() < 0.5:
        v = "0" + str(rng.randint(1, 7)) + "".join(f" {rng.randint(10, 99)}" for _ in range(4))
    else:
        v = f"020 7946 0{rng.randint(100, 999)}"
    t = rng.choice(["on-call: Marie, {v} ({d})", "escalate to {v} if the job fails, {d}"])
    return t.replace("{v}", v), [v]


def phone_uk_paren(rng: random.Random) -> tuple[str, list[str]]:
    v = f"+44 (0)20 7946 {rng.randint(1000, 9999)}"
    t = "ops pager {v}, {d}"
    return t.replace("{v}", v), [v]


def public_service_path(rng: random.Random) -> tuple[str, list[str]]:
    v = _s(rng, 24) if rng.random() < 0.5 else _s(rng, 64, HEX)
    t = (
        rng.choice(
            [
                "POST https://hooks.slack.com/services/T0{a}/B0{b}/{v} -> 404 ({d})",
                "GET https://storage.googleapis.com/ckpt/step_1200.pt?X-Goog-Algorithm=GOOG4-RSA-SHA256"
                "&X-Goog-Signature={v} 403 ({d})",
            ]
        )
        .replace("{a}", _s(rng, 8, string.ascii_uppercase))
        .replace("{b}", _s(rng, 9, string.ascii_uppercase))
    )
    return t.replace("{v}", v), [v]


def dash_secret(rng: random.Random) -> tuple[str, list[str]]:
    """A generated password that starts with '-', after a flag or a key, beside the options
    and negative numbers that must stay (docs/masking.md, found by a redraw on 2026-12-07)."""
    v = "-" + _s(rng, rng.randint(9, 14), ALNUM + "*@#_")
    lr, loss = rng.choice(["-1", "-3", "-0.5"]), f"-{rng.uniform(0.01, 3):.2f}"
    t = rng.choice(
        [
            f"python train.py --api-key {{v}} --lr {lr} --verbose  # loss: {loss}",
            f"secret: {{v}}  (loss: {loss}, --lr {lr})",
            f"+ deploy.sh --token {{v}} --retries {lr} -v  # {{d}}",
            f"db_password: {{v}}  delta: {loss}  # {{d}}",
        ]
    )
    return t.replace("{v}", v), [v]


# The negative numbers and options beside a value that must stay (decoys): "--lr -1",
# "loss: -0.53", "--verbose".
_DASHED_DECOY = re.compile(r"(?:--[a-z]+ |[a-z]+: )-[0-9.]+(?=[ ,)]|$)|--verbose")


KINDS: dict[str, Kind] = {
    f.__name__: f
    for f in (
        gitlab_token,
        npm_token,
        google_api_key,
        openai_key_letters,
        generic_secret,
        azure_sas,
        azure_account_key,
        private_key_id,
        slack_webhook,
        netrc_password,
        odd_password,
        user_at_host_prompt,
        ssh_host,
        mac_address,
        slurm_nodelist,
        slurm_rows,
        slurm_user_var,
        k8s_pod_user,
        cloud_account,
        gcp_project,
        psl_host,
        wandb_hf_entity,
        phone_national,
        phone_uk_paren,
        public_service_path,
    )
}

# Kinds added after the speed log was fixed: drawn from a stream of their own after the
# others (records(later=True)), so neither the earlier records nor dense_log() changed.
LATER_KINDS: dict[str, Kind] = {f.__name__: f for f in (dash_secret,)}

# Records with nothing to mask, whose text must come out as it went in: a Databricks frame's
# command id is no card, public service hosts are kept.
KEPT = [
    "File <command-{n}>, line 12, in <module>",
    "POST https://hooks.slack.com/services/ -> 400 invalid_payload",
    "Downloading https://storage.googleapis.com/tfds-data/datasets/mnist.tar.gz",
    "azure.core.exceptions: mlstore.blob.core.windows.net timed out",
]


class Record(TypedDict):
    kind: str
    text: str
    values: list[str]
    decoys: list[str]


def records(per_kind: int = 80, seed: int = SEED, *, later: bool = True) -> list[Record]:
    """The labelled records: ``per_kind`` of every kind, then the records kept whole, then
    (``later``) those of ``LATER_KINDS``."""
    rng = random.Random(seed)
    out = _drawn(rng, KINDS, per_kind)
    for _ in range(per_kind):
        text = rng.choice(KEPT).replace("{n}", str(rng.randint(10**15, 10**16 - 1)))
        d = _decoy(rng)
        out.append(
            {"kind": "kept_whole", "text": f"{text} ({d})", "values": [], "decoys": [text, d]}
        )
    if later:
        out += _drawn(random.Random(seed + 1), LATER_KINDS, per_kind)
    return out


def _drawn(rng: random.Random, kinds: dict[str, Kind], per_kind: int) -> list[Record]:
    """``per_kind`` records of each of ``kinds``, a decoy where the text has a {d} and one
    before it; the option and negative-number decoys a text holds too."""
    out: list[Record] = []
    for name, make in kinds.items():
        for _ in range(per_kind):
            text, values = make(rng)
            decoys = _DASHED_DECOY.findall(text)
            while "{d}" in text:
                d = _decoy(rng)
                decoys.append(d)
                text = text.replace("{d}", d, 1)
            d = _decoy(rng)
            decoys.append(d)
            out.append({"kind": name, "text": f"[{d}] {text}", "values": values, "decoys": decoys})
    return out


def dense_log(size: int, seed: int = SEED) -> Iterator[bytes]:
    """About ``size`` bytes of the records in a random order, one line of ordinary training
    output between them: a planted value every ~140 bytes."""
    rng = random.Random(seed)
    pool = [r["text"] + "\n" for r in records(per_kind=40, seed=seed, later=False)]
    filler = [
        "[rank0]: step {s}/500000 | loss {l:.4f} | lr 3.000e-04 | grad_norm 0.871\n",
        "  warnings.warn(\n",
    ]
    written = 0
    block: list[str] = []
    while written < size:
        line = rng.choice(pool)
        if rng.random() < 0.3:
            line += rng.choice(filler).format(s=rng.randint(1, 10**5), l=rng.uniform(0, 9))
        block.append(line)
        written += len(line.encode())
        if len(block) >= 512:
            yield "".join(block).encode()
            block = []
    if block:
        yield "".join(block).encode()
