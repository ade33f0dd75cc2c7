"""The recognizer behind Presidio's interface, and no network access while masking."""

import subprocess
import sys
from pathlib import Path

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


def test_no_network_access_while_building_and_masking() -> None:
    out = subprocess.run(
        [sys.executable, "-c", GUARD], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "ok"
