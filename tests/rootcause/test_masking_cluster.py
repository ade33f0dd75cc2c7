"""Issue 33: the secrets and identifiers of Slurm, Kubernetes and cloud logs, on both paths.

Each case is a real-looking line (not generator output), masked by the light client (the
Hyperscan recognizers alone) and by the server (Presidio's analyzer as the workers build it):
the planted value must be gone, the output as expected, and both paths must agree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from bench.masking_corpus.cluster import records

if TYPE_CHECKING:
    from presidio_analyzer import AnalyzerEngine

from rootcause.masking import Masker, mask_log
from rootcause.masking.recognizer import shared_analyzer

ANALYZER = shared_analyzer()


def _mask(text: str, analyzer: AnalyzerEngine | None) -> str:
    masker = Masker(secret=b"test-secret", analyzer=analyzer)
    return "".join(mask_log(lambda: [text.encode()], masker))


def both(text: str) -> str:
    client, server = _mask(text, None), _mask(text, ANALYZER)
    assert client == server
    return client


CASES = [
    # provider tokens not known before
    (
        "remote: HTTP Basic: Access denied; token glpat-Xk3v_9QmZr-7TbLw2PaH expired",
        "remote: HTTP Basic: Access denied; token <GITLAB_TOKEN> expired",
    ),
    (
        "//registry.npmjs.org/:_authToken=npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
        "//registry.npmjs.org/:_authToken=<NPM_TOKEN>",
    ),
    (
        "POST https://generativelanguage.googleapis.com/v1beta/models/gemini:generate"
        "?key=AIzaSyD3xQ-7bF_9kLmN2pQrStUvWxYz0123456 -> 400",
        "POST https://generativelanguage.googleapis.com/v1beta/models/gemini:generate"
        "?key=<GOOGLE_API_KEY> -> 400",
    ),
    (
        "openai.AuthenticationError: Incorrect API key provided: "
        "sk-proj-QwErTyUiOpAsDfGhJkLzXcVbNmQwErTyUiOp.",
        "openai.AuthenticationError: Incorrect API key provided: <OPENAI_API_KEY>.",
    ),
    # generic shapes
    (
        "DefaultEndpointsProtocol=https;AccountName=mlstore;"
        "AccountKey=Zm9vYmFyQmF6UXV4MTIzNDU2Nzg5MGFiY2RlZg+/XyZ==;EndpointSuffix=core.windows.net",
        "DefaultEndpointsProtocol=https;AccountName=mlstore;"
        "AccountKey=<SECRET>;EndpointSuffix=core.windows.net",
    ),
    (
        "PUT https://mlstore.blob.core.windows.net/ckpt/x.pt?sv=2022-11-02&sp=rw"
        "&sig=q3Lm9%2BvXk2PzR7tWy8N4%3D 403",
        "PUT https://mlstore.blob.core.windows.net/ckpt/x.pt?sv=2022-11-02&sp=rw&sig=<SECRET> 403",
    ),
    (
        '  "private_key_id": "3f9c2a1b7e4d5c6b8a9f0e1d2c3b4a5968778695",',
        '  "private_key_id": "<SECRET>",',
    ),
    (
        "requests.exceptions.HTTPError: 404 for url: "
        "https://hooks.slack.com/services/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",
        "requests.exceptions.HTTPError: 404 for url: https://hooks.slack.com/services/<SECRET>",
    ),
    ("machine api.wandb.ai\n  login user\n  password 8f3kQ!x92#Lm", None),
    ("+ redis-cli -h cache-0 -a '&Pa ss%[w*rd' ping", "+ redis-cli -h cache-0 -a '<SECRET>' ping"),
    (
        "+ python manage.py migrate --db-password ' leading space'",
        "+ python manage.py migrate --db-password '<SECRET>'",
    ),
    ('{"user": "svc", "password": "oc\'.)-s0JKu"}', '{"user": "svc", "password": "<SECRET>"}'),
    # users and hosts
    (
        "Last login: Sun Dec  6 09:12:44 2026\nmgonzalez@gpu-node-17:~$ nvidia-smi",
        "Last login: Sun Dec  6 09:12:44 2026\n<USER>@<HOST_1>:~$ nvidia-smi",
    ),
    (
        "+ ssh declan@login2.hpc.example.se squeue\n"
        "ssh: connect to host login2.hpc.example.se port 22: Connection refused",
        "+ ssh <USER>@<HOST_1> squeue\nssh: connect to host <HOST_1> port 22: Connection refused",
    ),
    (
        "    link/ether 00:1b:21:3a:4f:5c brd ff:ff:ff:ff:ff:ff",
        "    link/ether <MAC_1> brd ff:ff:ff:ff:ff:ff",
    ),
    # Slurm
    (
        "   NodeList=h100n-[171-174,178] BatchHost=h100n-171",
        "   NodeList=<HOST_1> BatchHost=<HOST_2>",
    ),
    (
        "srun: error: node[012-015]: tasks 0-31: Exited with exit code 1",
        "srun: error: <HOST_1>: tasks 0-31: Exited with exit code 1",
    ),
    (
        "   UserId=mgonzalez(41021) GroupId=ml(4000) MCS_label=N/A",
        "   UserId=<USER>(41021) GroupId=ml(4000) MCS_label=N/A",
    ),
    (
        "  JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)\n"
        " 884211       gpu llama-ft   dmurph  R    3:12:04      4 gpu-a-[010-013]\n"
        " 884212       gpu llama-ft   dmurph PD       0:00      4 (Resources)",
        "  JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)\n"
        " 884211       gpu llama-ft   <USER>  R    3:12:04      4 <HOST_1>\n"
        " 884212       gpu llama-ft   <USER> PD       0:00      4 (Resources)",
    ),
    (
        "  'SLURM_JOB_USER': 'kwame_a', 'SLURM_NTASKS': '8'",
        "  'SLURM_JOB_USER': '<USER>', 'SLURM_NTASKS': '8'",
    ),
    # Kubernetes and clouds
    (
        "Mounting /home/declan.murphy/.cache\n"
        "pod/pytorchjob-declan-murphy-llama-ft-worker-2 OOMKilled",
        "Mounting /home/<USER>/.cache\npod/pytorchjob-<USER>-llama-ft-worker-2 OOMKilled",
    ),
    (
        "upload failed: s3://ml-ckpt-721405572997-us-east-1/llama/ AccessDenied",
        "upload failed: s3://ml-ckpt-<ACCOUNT_1>-us-east-1/llama/ AccessDenied",
    ),
    (
        "botocore: arn:aws:iam::721405572997:role/SageMakerExecution is not authorized",
        "botocore: arn:aws:iam::<ACCOUNT_1>:role/SageMakerExecution is not authorized",
    ),
    (
        "PermissionDenied: projects/ml-research-418203/locations/us-central1\n"
        "gs://ml-research-418203-ckpt/run7/ 403",
        "PermissionDenied: projects/<ACCOUNT_1>/locations/us-central1\ngs://<ACCOUNT_1>-ckpt/run7/ 403",
    ),
    (
        "RuntimeError: failed to bind to login1.hpc.cineca.it:29500",
        "RuntimeError: failed to bind to <HOST_1>:29500",
    ),
    ("Connecting to gpu3.lab.snu.ac.kr", "Connecting to <HOST_1>"),
    ("mount: storage1.aurora.tech:/scratch failed", "mount: <HOST_1>:/scratch failed"),
    (
        "wandb: ⭐️ View project at https://wandb.ai/declan-murphy/llama-ft",
        "wandb: ⭐️ View project at https://wandb.ai/<USER>/llama-ft",
    ),
    (
        "Pushing to https://huggingface.co/declan-murphy/llama-ft-v2",
        "Pushing to https://huggingface.co/<USER>/llama-ft-v2",
    ),
    # phones
    ("on-call: Marie, 06 39 98 19 97", "on-call: Marie, <PHONE>"),
    ("escalate to 020 7946 0393 if the job fails", "escalate to <PHONE> if the job fails"),
    ("ops pager +44 (0)20 7946 0018, then email", "ops pager <PHONE>, then email"),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_each_shape_is_masked_alike_on_both_paths(text: str, expected: str | None) -> None:
    out = both(text + "\n")
    if expected is not None:
        assert out == expected + "\n"


def test_a_netrc_password_line_is_masked() -> None:
    out = both("machine api.wandb.ai\n  login user\n  password 8f3kQ!x92#Lm\n")
    assert "8f3kQ!x92#Lm" not in out
    assert "  password <SECRET>\n" in out


@pytest.mark.parametrize(
    "line",
    [
        # a Databricks notebook frame: its command id is no card, on either path
        "File <command-4111111111111111>, line 12, in <module>",
        "File <command-5555555555554444>, line 3",
        # public service hosts are kept, with nothing secret in their path
        "Downloading https://storage.googleapis.com/tfds-data/datasets/mnist.tar.gz",
        "azure.core.exceptions.ServiceRequestError: mlstore.blob.core.windows.net timed out",
        # the decoys of the issue: counters, losses, shapes, versions, addresses, figures
        "[rank0]: step 1200/500000 | loss 2.3456 | torch.Size([8, 4096]) | SeqNum=48213",
        "torch 2.3.1+cu121 CUDA 12.4 NCCL 2.21.5 at 0x7f3a2c000000, 23.65 GiB, 81559MiB",
        "c10d: port 29500, commit 3f9c2a1b7e4d5c6b8a9f0e1d2c3b4a5968778695",
        "2026-12-05 10:11:12,551 train.py:88 trainer.fit() -> torch.distributed.run",
        "KeyError: 'model.layers.0.self_attn.q_proj.weight'",
        "cache_key=step_1200_rank0 sort_key: loss monkey: 5",
        "  tokenizer_name_or_path: meta-llama/Llama-2-7b-hf",
        "USER: What is the capital of France?",
        "logits[0,1] = x[2-3]",
        "ip route: 10 20 30 40 50 and 01 02 03",
    ],
)
def test_what_is_not_a_secret_or_an_identifier_is_kept(line: str) -> None:
    assert both(line + "\n") == line + "\n"


def test_the_generator_meets_the_targets_of_the_issue_on_both_paths() -> None:
    missed, altered, differ = [], 0, 0
    for record in records(per_kind=20):
        client, server = _mask(record["text"], None), _mask(record["text"], ANALYZER)
        differ += client != server
        missed += [(record["kind"], v) for v in record["values"] if v in client]
        altered += sum(d not in client for d in record["decoys"])
    assert (missed, altered, differ) == ([], 0, 0)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "python train.py --api-key -Rd8JbZ1b*@A5I --lr -1",
            "python train.py --api-key <SECRET> --lr -1",
        ),
        ("secret: -OGPvRimDQF", "secret: <SECRET>"),
        ("+ deploy.sh --password -hunter2pw -v", "+ deploy.sh --password <SECRET> -v"),
        (
            '{"db_password": "-x9Qw_e4", "loss": -0.53}',
            '{"db_password": "<SECRET>", "loss": -0.53}',
        ),
    ],
)
def test_a_secret_value_that_starts_with_a_dash_is_masked(line: str, expected: str) -> None:
    assert both(line + "\n") == expected + "\n"


@pytest.mark.parametrize(
    "line",
    [
        "loss: -0.53 grad_norm: -1.25e-3 secret_steps: -3",
        "python train.py --lr -1 --token -1 --password -x",
        "python train.py --api-key --verbose --secret -v --token -no-cache",
        "token: -1.25e-3 password: -0.5",
        "secret: " + "-" * 600,  # a rule of dashes after a key, no value
        "--api-key ---------- --password -=-=-=-=",
    ],
)
def test_options_and_negative_numbers_after_a_key_are_kept(line: str) -> None:
    assert both(line + "\n") == line + "\n"
