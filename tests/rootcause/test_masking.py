"""Every recognizer: what it must mask (true positives) and what it must leave (look-alikes)."""

import re

import pytest

from rootcause.masking import Masker

HF = "hf_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3f"


def mask(text: str, secret: bytes = b"test-secret") -> str:
    return Masker(secret=secret).mask(text)


@pytest.mark.parametrize(
    ("line", "secret", "token"),
    [
        (f"export HF_TOKEN={HF}", HF, "<HF_TOKEN>"),
        ("huggingface-cli login --token " + HF, HF, "<HF_TOKEN>"),
        ("api_org_" + "x1" * 17, "api_org_" + "x1" * 17, "<HF_TOKEN>"),
        ("key wandb_v1_" + "Ab3" * 10, "wandb_v1_" + "Ab3" * 10, "<WANDB_API_KEY>"),
        (
            "wandb login 0123456789abcdef0123456789abcdef01234567",
            "0123456789abcdef01234567",
            "<WANDB_API_KEY>",
        ),
        ("using AKIAIOSFODNN7EXAMPLE for s3", "AKIAIOSFODNN7EXAMPLE", "<AWS_ACCESS_KEY>"),
        ("ASIAY34FZKBOKMUTVV7A", "ASIAY34FZKBOKMUTVV7A", "<AWS_ACCESS_KEY>"),
        (
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "wJalrXUtnFEMI/K7MDENG",
            "<AWS_SECRET_KEY>",
        ),
        ("git remote ghp_" + "A1b2C3d4E5" * 4, "ghp_A1b2", "<GITHUB_TOKEN>"),
        ("gho_" + "A1b2C3d4E5" * 4 + " done", "gho_A1b2", "<GITHUB_TOKEN>"),
        (
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
            "github_pat_11",
            "<GITHUB_TOKEN>",
        ),
        (
            "OPENAI_API_KEY=sk-proj-Abc123Def456Ghi789Jkl012Mno345",
            "sk-proj-Abc123",
            "<OPENAI_API_KEY>",
        ),
        ("key: sk-ant-api03-" + "aB1-" * 25 + "xyz", "sk-ant-api03-aB1", "<ANTHROPIC_API_KEY>"),
        (
            "slack xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
            "xoxb-1234",
            "<SLACK_TOKEN>",
        ),
        ("stripe sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc", "sk_live_4eC3", "<STRIPE_KEY>"),
        ("NGC key nvapi-" + "Zx9_Yw8-Vu7" * 5, "nvapi-Zx9", "<NGC_API_KEY>"),
        (
            "auth eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9P",
            "eyJhbGciOiJIUzI1NiJ9",
            "<JWT>",
        ),
        ("Authorization: Bearer abcDEF123456ghiJKL789", "abcDEF123456", "<SECRET>"),
        (
            "git clone https://alice:s3cr3tpass@git.corp.lan/repo.git",
            "s3cr3tpass",
            "<URL_CREDENTIALS>",
        ),
        ("db password=hunter22 ok", "hunter22", "<SECRET>"),
        ('{"api_key": "a8f3k2m9q7w1e5r4t6y8"}', "a8f3k2m9q7w1e5r4t6y8", "<SECRET>"),
        ("export COMET_API_KEY=Zq81Lm02Xc93Vb74", "Zq81Lm02Xc93Vb74", "<SECRET>"),
        ("python train.py --hf-token abc123def456ghi789", "abc123def456ghi789", "<SECRET>"),
        ("call me at +1 415 555 0199 tomorrow", "415 555 0199", "<PHONE>"),
        ("phone: (415) 555-0199", "555-0199", "<PHONE>"),
        ("card 4111 1111 1111 1111 charged", "4111 1111", "<CREDIT_CARD>"),
        ("card 5500005555555559", "5500005555555559", "<CREDIT_CARD>"),
    ],
)
def test_secret_is_masked(line: str, secret: str, token: str) -> None:
    out = mask(line + "\n")
    assert secret not in out
    assert token in out


def test_private_key_block_is_masked_and_keeps_line_count() -> None:
    text = (
        "before\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA1234\nabcdEFGH5678\n"
        "-----END RSA PRIVATE KEY-----\nafter\n"
    )
    masker = Masker(secret=b"k")
    out = masker.mask(text)
    assert "MIIEpAIBAAKCAQEA1234" not in out
    assert "abcdEFGH5678" not in out
    assert "<PRIVATE_KEY>" in out
    assert out.count("\n") == text.count("\n")
    assert out.endswith("-----END RSA PRIVATE KEY-----\nafter\n")
    assert masker.counts == {"PRIVATE_KEY": 1}


def test_private_key_split_across_chunks_does_not_leak() -> None:
    masker = Masker(secret=b"k")
    first = masker.mask("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n")
    second = masker.mask("QyNTUxOQAAACBvZXJy\n-----END OPENSSH PRIVATE KEY-----\nstep 10\n")
    assert "b3BlbnNzaC1rZXktdjEAAAAA" not in first
    assert "QyNTUxOQAAACBvZXJy" not in second
    assert second.endswith("-----END OPENSSH PRIVATE KEY-----\nstep 10\n")
    assert masker.counts == {"PRIVATE_KEY": 1}


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            '  File "/home/alice/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", '
            "line 1518, in _wrapped_call_impl",
            '  File "/home/<USER>/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", '
            "line 1518, in _wrapped_call_impl",
        ),
        (
            "saved /Users/bob.smith/runs/ckpt-100/model.safetensors",
            "saved /Users/<USER>/runs/ckpt-100/model.safetensors",
        ),
        (
            r"C:\Users\carol\miniconda3\lib\site-packages\torch\cuda\__init__.py",
            r"C:\Users\<USER>\miniconda3\lib\site-packages\torch\cuda\__init__.py",
        ),
        ("cd /home/dave", "cd /home/<USER>"),
        ("SLURM_JOB_USER=erin SLURM_JOB_ID=42", "SLURM_JOB_USER=<USER> SLURM_JOB_ID=42"),
        ("USER=frank LOGNAME=frank", "USER=<USER> LOGNAME=<USER>"),
        (
            "wandb: Currently logged in as: gina (gina-lab). Use",
            "wandb: Currently logged in as: <USER>. Use",
        ),
        ("https://wandb.ai/gina-lab/proj/runs/x1", "https://wandb.ai/<USER>/proj/runs/x1"),
    ],
)
def test_user_names_are_masked_library_paths_kept(line: str, expected: str) -> None:
    assert mask(line + "\n") == expected + "\n"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "node-17:1234:5678 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.17<0>",
            "<HOST_1>:1234:5678 [0] NCCL INFO Bootstrap : Using eth0:<IP_1><0>",
        ),
        (
            "[default3]:gpu-a100-3:99:100 [3] NCCL INFO Init COMPLETE",
            "[default3]:<HOST_1>:99:100 [3] NCCL INFO Init COMPLETE",
        ),
        (
            "The client socket has failed to connect to [node-17.example.com]:29500",
            "The client socket has failed to connect to [<HOST_1>]:29500",
        ),
        ("connect to [trainer7]:29500 (errno: 111)", "connect to [<HOST_1>]:29500 (errno: 111)"),
        (
            "MASTER_ADDR=ip-10-0-0-1.ec2.internal MASTER_PORT=29500",
            "MASTER_ADDR=<HOST_1> MASTER_PORT=29500",
        ),
        ("hostname=dgx01 rank=3", "hostname=<HOST_1> rank=3"),
        ("  host      : compute-0-12.cluster", "  host      : <HOST_1>"),
        ("failed on host gpu17 during init", "failed on host <HOST_1> during init"),
        ("SLURM_NODELIST=gpu-[01-04,07]", "SLURM_NODELIST=<HOST_1>"),
        ("node-2: step 10 loss 1.0", "<HOST_1>: step 10 loss 1.0"),
        ("mail alice@corp.example.com now", "mail <EMAIL_1> now"),
        ("peer fe80::1ff:fe23:4567:890a down", "peer <IP_1> down"),
        ("MASTER_ADDR=10.1.2.3", "MASTER_ADDR=<IP_1>"),
        (
            "[rank0] rank 0 local_rank 0 pid 17495 host vm",
            "[rank0] rank 0 local_rank 0 pid 17495 host <HOST_1>",
        ),
        (
            "WORLD INFO DICT: {'worker-0': [0, 1], 'worker-1': [0, 1]}",
            "WORLD INFO DICT: {'<HOST_1>': [0, 1], '<HOST_2>': [0, 1]}",
        ),
        ("  host      : Brian-PC.home", "  host      : <HOST_1>"),
        (
            "Connection closed by peer [172.28.0.12]:43185",
            "Connection closed by peer [<IP_1>]:43185",
        ),
    ],
)
def test_hosts_ips_emails_get_pseudonyms(line: str, expected: str) -> None:
    assert mask(line + "\n") == expected + "\n"


@pytest.mark.parametrize(
    "line",
    [
        "torch 2.1.0.post1 cuda 12.1.105 cudnn 8.9.2.26 nccl 2.18.1 driver 535.104.05",
        "nvidia-cudnn-cu12==9.1.0.70",
        "[rank0]: step 1200/10000 | loss 2.3456 | lr 3.000e-04 | grad_norm 0.871 | tokens/s 12345",
        "shape [32, 128] vs [32, 4096, 11008] size=torch.Size([8, 512])",
        "WorkNCCL(SeqNum=1234, OpType=ALLREDUCE, NumelIn=1, Timeout(ms)=600000)",
        "comm 0x7f3a2c000000 rank 0 nranks 4 cudaDev 0 busId 1b000 - Init COMPLETE",
        "W1130 23:13:03.743000 18801 torch/distributed/run.py:874] local_rank: 3 (pid: 18805)",
        "2026-11-30T23:13:03.743+00:00 epoch=3 seed=1234567890123456789 ts=1701388800123",
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.96 GiB",
        "python train.py --config cfg.yaml saved model.safetensors and tokenizer.json",
        "from sklearn.cluster import KMeans; torchvision.io.read_image(p); threading.local()",
        "connect to 127.0.0.1:29500 and 0.0.0.0 and [::1]:29500 and localhost:29500",
        "pad_token=<pad> eos_token=</s> max_tokens=4096 num_tokens: 512 token: 17",
        "secret=true password=None api_key=$WANDB_API_KEY token = self.tokenizer.encode(text)",
        "lr=3.0e+05 1234 5678 loss +0.0123 ± 0.02",
        "see https://pytorch.org/docs/stable/notes/cuda.html and https://github.com/org/repo",
        "[rank1]: Traceback (most recent call last): c10::Error at::Tensor",
        "torch.distributed.elastic.multiprocessing.api: [WARNING] Sending process 18805",
        "Training:  12%|█▏        | 1200/10000 [12:34<1:32:10,  1.59it/s, loss=2.31]",
        "hidden_size=4096 intermediate_size=11008 vocab_size=32000 params=6738415616",
        "copy from host to device; pinned host memory; host buffer",
        "WORLD INFO DICT: {'localhost': [0]} Connection closed by peer [::]:47531",
        "  host      : localhost",
        "[W socket.cpp:663] [c10d] The server socket has failed to listen on [::]:29500",
    ],
)
def test_diagnostic_content_survives(line: str) -> None:
    assert mask(line + "\n") == line + "\n"


def test_pseudonyms_are_consistent_within_a_log_and_across_chunks() -> None:
    masker = Masker(secret=b"diag-1")
    a = masker.mask("node-3.example.com:1:2 [0] NCCL INFO x 10.0.0.5\n")
    b = masker.mask("node-9.example.com:1:2 [0] NCCL INFO y 10.0.0.6\nagain NODE-3.EXAMPLE.COM\n")
    assert a == "<HOST_1>:1:2 [0] NCCL INFO x <IP_1>\n"
    assert b == "<HOST_2>:1:2 [0] NCCL INFO y <IP_2>\nagain <HOST_1>\n"
    assert masker.counts == {"HOSTNAME": 3, "IP_ADDRESS": 2}


def test_short_and_full_host_names_share_a_pseudonym_and_learned_names_are_masked() -> None:
    masker = Masker(secret=b"diag-1")
    out = masker.mask(
        "before: gpu-node-01 is slow\n"
        "gpu-node-01:18802:18899 [0] NCCL INFO Bootstrap\n"
        "  host      : gpu-node-01.cluster.example.com\n"
        "Rank 3 on gpu-node-02.cluster.example.com; gpu-node-02 timed out\n"
    )
    assert "gpu-node" not in out
    assert out.splitlines() == [
        "before: <HOST_1> is slow",
        "<HOST_1>:18802:18899 [0] NCCL INFO Bootstrap",
        "  host      : <HOST_1>",
        "Rank 3 on <HOST_2>; <HOST_2> timed out",
    ]


def test_pseudonyms_differ_with_the_secret_and_keep_no_plain_value() -> None:
    text = "".join(f"h{i}: host-{i}.example.com\n" for i in range(40))
    first, second = Masker(secret=b"one"), Masker(secret=b"two")
    first.mask("x host-39.example.com\n")
    second.mask("x host-0.example.com\n")
    assert first.mask(text) != second.mask(text)
    # The numbering table is keyed by HMAC digests, never by the value or its plain hash.
    import hashlib

    table = first._numbers["HOSTNAME"]
    plain = {b"host-39", hashlib.sha256(b"host-39").digest(), hashlib.blake2b(b"host-39").digest()}
    assert plain.isdisjoint(table)


def test_random_secret_per_instance() -> None:
    a, b = Masker(), Masker()
    assert a._secret != b._secret
    assert a.mask("MASTER_ADDR=node-1.example.com\n") == "MASTER_ADDR=<HOST_1>\n"


def test_same_secret_same_token_and_counts() -> None:
    masker = Masker(secret=b"k")
    out = masker.mask(f"HF_TOKEN={HF}\nagain {HF}\nuser@example.com\n")
    assert out == "HF_TOKEN=<HF_TOKEN>\nagain <HF_TOKEN>\n<EMAIL_1>\n"
    assert masker.counts == {"HF_TOKEN": 2, "EMAIL_ADDRESS": 1}


def test_mask_is_idempotent_on_masked_text() -> None:
    masker = Masker(secret=b"k")
    once = masker.mask(
        "/home/alice/x MASTER_ADDR=node-1.example.com bob@example.com 10.0.0.1 " + HF + "\n"
    )
    assert masker.mask(once) == once


def test_non_ascii_text_keeps_offsets() -> None:
    out = mask("🚀 données /home/José/run ⚡ 10.9.8.7 ok\n")
    assert out == "🚀 données /home/<USER>/run ⚡ <IP_1> ok\n"


def test_no_replacement_contains_a_newline() -> None:
    text = "a bob@example.com\nb /home/x/y\nc 10.0.0.2\n"
    assert mask(text).count("\n") == text.count("\n")


def test_all_tokens_have_the_documented_shape() -> None:
    from bench.genlog import generate_log

    text = b"".join(generate_log(300_000, seed=3)).decode()
    out = mask(text)
    assert set(re.findall(r"<[A-Z_]+\d*>", out)) <= {
        "<USER>",
        "<HF_TOKEN>",
        "<AWS_ACCESS_KEY>",
        "<WANDB_API_KEY>",
        "<HOST_1>",
        "<HOST_2>",
        "<HOST_3>",
        "<IP_1>",
        "<IP_2>",
        "<EMAIL_1>",
    }
    for leaked in ("jdoe", "gpu-node-0", "10.12.", "jane.doe", "AKIA", "hf_"):
        assert leaked not in out
    assert "site-packages/torch/autograd/graph.py:744" in out
    assert "SeqNum=48213" in out
    assert "torch.cuda.OutOfMemoryError" in out
