"""The `rootcause` command needs none of the server's packages (`pip install .` has none of them).

`.ci/check-client` proves it on a real light install; this is the quick check in the suite: the
command runs with every server package and app blocked from importing.
"""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LOG = ROOT / "tests/logs/optimizer-state-oom/skypilot_rank1_adamw_oom.log"

# The server extra's packages (by module name) and the service's own apps.
SERVER = [
    "django",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "environ",
    "celery",
    "kombu",
    "redis",
    "psycopg",
    "presidio_analyzer",
    "presidio_anonymizer",
    "spacy",
    "gunicorn",
    "whitenoise",
    "pythonjsonlogger",
    "psutil",
    "config",
    "accounts",
    "billing_tiers",
    "encyclopedia",
    "diagnosis",
    "workers",
]

BLOCK = f"""
import importlib.abc
import sys

class BlockServer(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {SERVER!r}:
            raise ModuleNotFoundError(f"{{name}} is a server package", name=name)
        return None

sys.meta_path.insert(0, BlockServer())
"""
RUN = BLOCK + 'from rootcause.cli import main\nsys.argv[0] = "rootcause"\nmain()\n'


def python(script: str, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_block_holds():
    assert "django is a server package" in python(BLOCK + "import django.conf").stderr


def test_help_needs_no_server_package():
    out = python(RUN, "--help")
    assert out.returncode == 0, out.stderr[-2000:]
    assert "diagnose" in out.stdout


def test_offline_diagnosis_needs_no_server_package():
    out = python(RUN, "diagnose", str(LOG), "--offline", "--json")
    assert out.returncode == 1, out.stderr[-2000:]  # 1: a failure was diagnosed
    result = json.loads(out.stdout)
    expect = json.loads(LOG.with_suffix(".expect.json").read_text())
    assert result["failure"]["slug"] == expect["slug"]
    assert result["initiating_rank"] == expect["initiating_rank"]


def test_mask_needs_no_server_package():
    out = python(RUN, "mask", "-", stdin="contact alice@example.com from 10.1.2.3\n")
    assert out.returncode == 0, out.stderr[-2000:]
    assert "alice@example.com" not in out.stdout
    assert "10.1.2.3" not in out.stdout
