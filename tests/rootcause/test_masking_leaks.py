"""The leaks found on logs the developers never saw (issue 13), each from its example shape."""

import pytest

from rootcause.masking import Masker, iter_line_chunks, mask_log


def mask(text: str) -> str:
    return Masker(secret=b"test-secret").mask(text)


@pytest.mark.parametrize(
    ("line", "leaked", "expected"),
    [
        (
            "saving to /data/ckpt_10.20.30.40/step_1000.pt",
            "10.20.30.40",
            "saving to /data/ckpt_<IP_1>/step_1000.pt",
        ),
        ("tee run_10.12.4.77.log", "10.12.4.77", "tee run_<IP_1>.log"),
        (
            "writing gpu-node-17.corp.acme.internal.log",
            "gpu-node-17",
            "writing <HOST_1>.log",
        ),
        ("trace fe80::1ff:fe23:4567:890a_rank3.json", "fe80::1ff", "trace <IP_1>_rank3.json"),
        ("dump-10.0.7.9-rank3.txt", "10.0.7.9", "dump-<IP_1>-rank3.txt"),
        ("out.10.0.7.9.err", "10.0.7.9", "out.<IP_1>.err"),
        ("runs/ckpt_gpu-node-17.acme.internal_step5", "gpu-node-17", "runs/ckpt_<HOST_1>_step5"),
    ],
)
def test_ip_or_host_inside_a_file_name(line: str, leaked: str, expected: str) -> None:
    out = mask(line + "\n")
    assert leaked not in out
    assert out == expected + "\n"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("ssh jdoe@gpu-node-17 'nvidia-smi'", "ssh <USER>@<HOST_1> 'nvidia-smi'"),
        ("written by ops@gpu-node-17", "written by <USER>@<HOST_1>"),
        ("jdoe@buildbox:~/work$ python train.py", "<USER>@<HOST_1>:~/work$ python train.py"),
    ],
)
def test_user_at_host_without_a_domain(line: str, expected: str) -> None:
    assert mask(line + "\n") == expected + "\n"


@pytest.mark.parametrize(
    "line",
    [
        "Top-1 acc@1 75.31 acc@5 92.40 recall@10 0.71 mAP@0.5 0.43 pass@k",
        "pip install git+https://github.com/org/repo@v1.2.0",
        "image nvcr.io/nvidia/pytorch@sha256:4a1b2c3d",
        "@torch.no_grad() def evaluate(): x @ w",
    ],
)
def test_at_signs_that_are_not_user_at_host_survive(line: str) -> None:
    assert mask(line + "\n") == line + "\n"


@pytest.mark.parametrize(
    ("line", "number"),
    [
        ("{'text': 'Call me at (212) 555-0143 tomorrow', 'label': 1}", "(212) 555-0143"),
        ('sample 17: "office 650.555.0129, ask for Jo"', "650.555.0129"),
        ("ALERT: on-call +49 30 90182063 paged", "+49 30 90182063"),
        ("sample: reach us at 212-555-0143.", "212-555-0143"),
        ("sample: dial 1-800-555-0199 now", "800-555-0199"),
        ("contact +44 20 7946 0958 or +33 1 42 68 53 00", "+33 1 42 68 53 00"),
    ],
)
def test_phone_numbers_in_ordinary_formats(line: str, number: str) -> None:
    out = mask(line + "\n")
    assert number not in out
    assert "<PHONE>" in out


@pytest.mark.parametrize(
    "line",
    [
        "step 1200/10000 seed 212 555 0143 loss 2.3",
        "tensor([212, 555, 1043]) shape (3, 224, 2240) size 650 555 0129",
        "[rank0]: step 650 | samples 555 | tokens 0129",
        "batch [ 312  455 1024 2048]  2026-11-30 10:00:01.123",
        "driver 535.104.05 cuda 12.1.105 version 550.127.0512",
        "lr=3.0e+05 1234 5678 loss +0.0123 ± 0.02",
        "Timeout(ms)=600000 SeqNum=212555 0143 WorkNCCL",
        "params=6738415616 seed=2147483647 ts=1701388800123",
    ],
)
def test_counters_seeds_shapes_sizes_are_not_phones(line: str) -> None:
    assert mask(line + "\n") == line + "\n"


@pytest.mark.parametrize(
    "line",
    [
        "card 3751 896817 76744 declined",  # Amex 4-6-5, Luhn-valid
        "card 3056 930902 5904 on file",  # Diners 4-6-4, Luhn-valid
    ],
)
def test_card_numbers_in_the_4_6_5_grouping(line: str) -> None:
    out = mask(line + "\n")
    assert "896817" not in out
    assert "930902" not in out
    assert "<CREDIT_CARD>" in out


@pytest.mark.parametrize(
    ("line", "secret"),
    [
        ("config: {'user': 'svc', 'password': '%M5hqkSYg1vFoLf%'}", "%M5hqkSYg1vFoLf%"),
        ('{"db_password": "!x9$Qw,e rT7#"}', "!x9$Qw,e rT7#"),
        ("Namespace(password='*Zk81;pq', lr=0.1)", "*Zk81;pq"),
        ("password = '{h7Gk2mQ}'", "{h7Gk2mQ}"),
    ],
)
def test_password_in_a_printed_dict_with_punctuation(line: str, secret: str) -> None:
    out = mask(line + "\n")
    assert secret not in out
    assert "<SECRET>" in out


@pytest.mark.parametrize(
    "line",
    [
        "password=$DB_PASSWORD token=%HF_TOKEN% api_key='${API_KEY}'",
        "{'password': '<redacted>', 'token': '***'}",
    ],
)
def test_placeholders_are_not_secrets(line: str) -> None:
    assert mask(line + "\n") == line + "\n"


def test_learned_names_are_masked_before_the_chunk_where_they_are_learned() -> None:
    log = (
        "early: gpu-node-17 unreachable, jdoe retried\n"
        + "step 1 loss 2.0\n" * 50
        + "gpu-node-17:18802:18899 [0] NCCL INFO Bootstrap\n"
        + "saved /home/jdoe/ckpt\n"
    )
    masker = Masker(secret=b"k")
    out = "".join(mask_log(lambda: [log.encode()], masker, chunk_size=256))
    assert "gpu-node-17" not in out
    assert "jdoe" not in out
    assert out.startswith("early: <HOST_1> unreachable, <USER> retried\n")
    assert out.count("\n") == log.count("\n")


def test_the_learning_pass_reads_the_source_twice_and_chunks_identically() -> None:
    reads = []

    def read() -> list[bytes]:
        reads.append(1)
        return [b"a gpu-node-3 b\n", b"c\n" * 40, b"gpu-node-3:1:2 [0] NCCL INFO x\n"]

    masker = Masker(secret=b"k")
    out = "".join(mask_log(read, masker, chunk_size=64))
    assert len(reads) == 2
    assert out.splitlines()[0] == "a <HOST_1> b"
    plain = "".join(iter_line_chunks(read(), chunk_size=64))
    assert out.count("\n") == plain.count("\n")
