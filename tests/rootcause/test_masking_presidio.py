"""The recognizer behind Presidio's interface, and no network access while masking."""

import subprocess
import sys
from pathlib import Path

import pytest
from presidio_analyzer import EntityRecognizer

from rootcause.masking import Masker
from rootcause.masking.recognizer import HyperscanRecognizer, build_analyzer

ROOT = Path(__file__).resolve().parents[2]
TEXT = (
    "🚀 node-17:1:2 [0] NCCL INFO Using eth0:10.0.0.17<0>\n"
    "/home/alice/venv/lib/python3.11/site-packages/torch/cuda/__init__.py:12\n"
    "mail alice@corp.example.com AKIAIOSFODNN7EXAMPLE version 2.1.0.post1\n"
)


def test_recognizer_is_a_presidio_entity_recognizer_with_character_offsets() -> None:
    recognizer = HyperscanRecognizer()
    assert isinstance(recognizer, EntityRecognizer)
    results = recognizer.analyze(TEXT, entities=[])
    found = {(r.entity_type, TEXT[r.start : r.end]) for r in results}
    assert found == {
        ("HOSTNAME", "node-17"),
        ("IP_ADDRESS", "10.0.0.17"),
        ("USERNAME", "alice"),
        ("EMAIL_ADDRESS", "alice@corp.example.com"),
        ("AWS_ACCESS_KEY", "AKIAIOSFODNN7EXAMPLE"),
    }
    only_ips = recognizer.analyze(TEXT, entities=["IP_ADDRESS"])
    assert [r.entity_type for r in only_ips] == ["IP_ADDRESS"]


def test_analyzer_engine_runs_our_recognizer_without_nlp_model() -> None:
    analyzer = build_analyzer()
    results = analyzer.analyze(text=TEXT, language="en")
    assert {r.entity_type for r in results} == {
        "HOSTNAME",
        "IP_ADDRESS",
        "USERNAME",
        "EMAIL_ADDRESS",
        "AWS_ACCESS_KEY",
    }
    masked = Masker(secret=b"k").mask(TEXT)
    for r in results:
        assert TEXT[r.start : r.end] not in masked


GUARD = """
import socket, sys
def refuse(*args, **kwargs):
    raise RuntimeError("network access attempted")
socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse
from rootcause.masking import Masker, iter_line_chunks
from rootcause.masking.recognizer import build_analyzer
from presidio_analyzer.predefined_recognizers import EmailRecognizer
text = "mail bob@corp.example.com on host node-1.example.com 10.0.0.9\\n"
out = Masker(secret=b"k").mask(text)
assert "bob@" not in out and "node-1" not in out, out
assert build_analyzer().analyze(text=text, language="en")
# Presidio's own e-mail validation uses tldextract, which must not fetch its suffix list.
assert EmailRecognizer().analyze(text, ["EMAIL_ADDRESS"], None)
print("ok")
"""


@pytest.mark.heavy  # Presidio built in a process of its own
def test_no_network_access_while_building_and_masking() -> None:
    out = subprocess.run(
        [sys.executable, "-c", GUARD], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "ok"


YAML = """\
recognizers:
  - name: "Project code names"
    supported_language: "en"
    supported_entity: "PROJECT_CODENAME"
    deny_list: ["bluebird", "falcon-nine"]
  - name: "Ops tickets"
    supported_language: "en"
    supported_entity: "TICKET"
    patterns:
      - name: "ticket"
        regex: "\\\\bOPS-\\\\d{4,6}\\\\b"
        score: 0.8
"""


def test_the_registry_holds_our_recognizer_and_presidios_validated_ones() -> None:
    from rootcause.masking.recognizer import PrefilteredRecognizer, build_registry

    registry = build_registry()
    assert isinstance(next(iter(registry.recognizers)), HyperscanRecognizer)
    inner = {
        type(r.inner).__name__ for r in registry.recognizers if isinstance(r, PrefilteredRecognizer)
    }
    assert inner == {
        "CreditCardRecognizer",
        "IbanRecognizer",
        "PhoneRecognizer",
        "CryptoRecognizer",
    }


def test_an_operator_yaml_file_adds_recognizers(tmp_path: Path) -> None:
    path = tmp_path / "recognizers.yaml"
    path.write_text(YAML)
    masker = Masker(secret=b"k", analyzer=build_analyzer(str(path)))
    out = masker.mask("run bluebird-7 for falcon-nine, see OPS-20417 at 10.0.0.9\n")
    assert out == "run <PROJECT_CODENAME>-7 for <PROJECT_CODENAME>, see <TICKET> at <IP_1>\n"
    assert masker.counts == {"PROJECT_CODENAME": 2, "TICKET": 1, "IP_ADDRESS": 1}


def test_validated_recognizers_run_only_on_prefiltered_windows() -> None:
    from rootcause.masking.recognizer import validated_recognizers

    text = "step 12 loss 0.5 seed=1234567890123456789 ts 1701388800123\n" * 2000
    text += "wallet 1BoatSLRHtKNngkdXEeobR76b53LETtpyT iban DE89370400440532013000\n"
    calls = 0
    for recognizer in validated_recognizers():
        inner = recognizer.inner
        original = inner.analyze

        def counting(*args: object, _original: object = original, **kwargs: object) -> object:
            nonlocal calls
            calls += 1
            return _original(*args, **kwargs)  # type: ignore[operator]

        inner.analyze = counting  # type: ignore[method-assign, assignment]
        recognizer.analyze(text, [])
    assert calls <= 4  # the two planted values, not 2,000 lines of numbers


LIGHT = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in ("presidio_analyzer", "presidio_anonymizer", "spacy"):
            raise ModuleNotFoundError(name, name=name)
sys.meta_path.insert(0, Block())
from rootcause.masking import Masker, mask_log
masker = Masker(secret=b"k")
assert masker._analyzer is None
data = sys.stdin.buffer.read()
sys.stdout.write("".join(mask_log(lambda: [data], masker)))
"""


def test_the_light_client_masks_a_log_as_the_server_does() -> None:
    from rootcause.masking import mask_log

    log = b"".join(p.read_bytes() for p in sorted((ROOT / "tests/logs").rglob("*.log")))
    log += b"ssh jdoe@gpu-node-17; (212) 555-0143; card 3751 896817 76744; run_10.0.0.7.log\n"
    light = subprocess.run(
        [sys.executable, "-c", LIGHT], cwd=ROOT, input=log, capture_output=True, timeout=120
    )
    assert light.returncode == 0, light.stderr[-2000:]
    server = "".join(mask_log(lambda: [log], Masker(secret=b"k", analyzer=build_analyzer())))
    assert light.stdout.decode() == server
