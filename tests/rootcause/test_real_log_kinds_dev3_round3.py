"""Kinds of miss left on the third open set after its second round (issue 32). Each test holds
short lines of our own in the wording the public threads show (DeepSpeed's launcher as in
deepspeedai/DeepSpeed#5302, a shards progress bar cut by the kill as in
PKU-YuanGroup/Video-LLaVA#13 and zai-org/ChatGLM-6B#193, where the answer was host memory)."""

from rootcause.engine import get_engine
from rootcause.result import DiagnosisResult


def _diagnose(text: str) -> DiagnosisResult:
    return get_engine().diagnose([text])


def _slug(result: DiagnosisResult) -> str | None:
    return result.failure.slug if result.failure else None


_SHARDS = "Loading checkpoint shards:   0%|          | 0/3 [00:00<?, ?it/s]"
_KILL = "[2024-05-06 07:08:09,{ms}] [INFO] [launch.py:315:sigkill_handler] Killing subprocess {pid}"


def test_deepspeed_killing_its_workers_while_they_load_shards_is_the_host_running_out():
    # the progress bar has no newline: the launcher's line continues it
    text = "\n".join([
        "[2024-05-06 07:07:50,001] [INFO] [launch.py:256:main] process 5101 spawned with command",
        _SHARDS + _KILL.format(ms="100", pid=5101),
        _KILL.format(ms="200", pid=5102),
    ])  # fmt: skip
    result = _diagnose(text)

    assert _slug(result) == "host-oom-killed"
    # the kill's circumstances, not the kernel's word: the reader is told what would confirm it
    assert any("dmesg" in fact for fact in result.missing_facts), result.missing_facts


def test_the_launchers_kill_alone_names_no_class():
    text = "\n".join([_KILL.format(ms="100", pid=5101), _KILL.format(ms="200", pid=5102)])

    assert _slug(_diagnose(text)) is None


def test_the_launchers_kill_after_a_workers_own_error_is_that_error():
    text = "\n".join([
        _SHARDS,
        "Traceback (most recent call last):",
        '  File "train.py", line 12, in <module>',
        "    torch.cuda.set_device(args.local_rank)",
        "RuntimeError: CUDA error: invalid device ordinal",
        _KILL.format(ms="100", pid=5101),
        _KILL.format(ms="200", pid=5102),
    ])  # fmt: skip

    assert _slug(_diagnose(text)) != "host-oom-killed"


def test_a_traceback_cut_before_its_exception_line_asks_for_that_line_not_for_a_traceback():
    # a paste that keeps a few frames of engine set-up and stops before the error (the head of
    # the traceback cut too): the class cannot be told, and the reader is asked for what can
    text = "\n".join([
        "[rank1]:   File \"/venv/lib/python3.12/site-packages/deepspeed/runtime/engine.py\", "
        "line 1342, in _configure_distributed_model",
        "[rank1]:     self._broadcast_model()",
        "[rank1]:   File \"/venv/lib/python3.12/site-packages/deepspeed/comm/comm.py\", line 225, "
        "in broadcast",
        "[rank1]:     return cdb.broadcast(tensor=tensor, src=src, group=group)",
    ])  # fmt: skip
    result = _diagnose(text)

    assert result.outcome == "no_match"
    (fact,) = result.missing_facts
    assert fact.startswith("the log stops inside a traceback, before the exception line")
    assert 'comm.py", line 225, in broadcast' in fact
