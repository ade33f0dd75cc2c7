"""The inputs bench/hangruns/fr_trace_compare.py gives PyTorch's fr_trace: real gloo dumps of the
corpus (dev part), pickle and JSON, adapted only where torch 2.13's gloo dumps and fr_trace
disagree. fr_trace itself needs torch and runs in .venv-realruns (`make eval`)."""

from __future__ import annotations

import importlib.util
import io
import pickle
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEV = ROOT / "bench" / "hangruns" / "corpus" / "dev"


def _compare() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "fr_trace_compare", ROOT / "bench" / "hangruns" / "fr_trace_compare.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("bundle", ["cpu-oom__1", "cpu-oom__0"])  # a pickle job, a JSON job
def test_default_group_named_as_its_entries_name_it(bundle: str) -> None:
    compare = _compare()
    dumps = compare.dumps_of(DEV / f"{bundle}.tar.gz")
    assert sorted(dumps) == [0, 1, 2, 3]
    for dump in dumps.values():
        assert list(dump["pg_config"]) == ["0"]  # was "" in torch 2.13's gloo dump
        assert dump["pg_config"]["0"]["desc"] == "default_pg"
        for entry in dump["entries"]:
            assert entry["process_group"] == ("0", "default_pg")
            assert isinstance(entry["frames"], list)
            assert entry["time_discovered_completed_ns"] is None  # JSON's 0 is pickle's None
        # what fr_trace's read_dump loads back: plain data, no object built
        written = io.BytesIO(pickle.dumps(dump, protocol=2))
        assert compare._NoObjects(written).load()["entries"] == dump["entries"]


def test_the_thinned_job_loses_the_ranks_bench_hangs_drops() -> None:
    from bench.hangs import _drop_dumps

    compare = _compare()
    dumps = compare.dumps_of(DEV / "cpu-oom__1.tar.gz")
    kept = compare.thin(dumps, 4, "cpu-oom__1")
    files = [(f"nccl_trace_rank_{r}", b"") for r in range(4)]
    assert [f"nccl_trace_rank_{r}" for r in sorted(kept)] == [
        n for n, _ in _drop_dumps(files, 4, "cpu-oom__1")
    ]
    assert len(kept) == 3


def test_a_dump_that_would_build_an_object_is_refused() -> None:
    planted = pickle.dumps({"entries": [Path("/etc/passwd")]}, protocol=2)
    with pytest.raises(pickle.UnpicklingError, match="refused pathlib"):
        _compare()._NoObjects(io.BytesIO(planted)).load()


def test_without_the_torch_virtualenv_the_hang_table_says_fr_trace_did_not_run(
    tmp_path, monkeypatch
):
    from bench import hangs

    monkeypatch.setattr(hangs, "TORCH_PYTHON", tmp_path / "no-venv" / "bin" / "python")
    assert hangs.fr_trace("dev") is None
    assert hangs.fr_trace_status().startswith("not run: .venv-realruns is absent")
    figures: hangs.Figures = {
        "bundles": 1, "verdict": 1, "culprit": 1, "verdict_missing": 1, "culprit_missing": 1,
        "logs_verdict": 0, "logs_culprit": 0, "healthy": 0, "healthy_flagged": 0,
        "fr_absent": True,
    }  # fmt: skip
    assert "not run: .venv-realruns is absent" in "\n".join(hangs.report_lines("dev", figures))
    assert "not run (no .venv-realruns)" in "\n".join(hangs.markdown([("dev", figures)]))
