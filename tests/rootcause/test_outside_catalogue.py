"""Failures the taxonomy does not cover get no class (issue 32, dev3's out-of-taxonomy logs):
the honest answer is no_match that says what the log shows, not the nearest class.

Excerpts in the wordings of the threads dev3 took them from (inline, not in tests/logs: see
test_issue32_class_kinds.py), with values of their own.
"""

from rootcause.engine import get_engine
from rootcause.result import DiagnosisResult


def diagnose(text: str) -> DiagnosisResult:
    return get_engine().diagnose([text])


def slug(result: DiagnosisResult) -> str | None:
    return result.failure.slug if result.failure else None


def summary(exitcode: str, rank: int = 1) -> str:
    """torchrun's failure summary of one worker, nothing else (pytorch-image-models#1724's kind)."""
    return (
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
        "============================================================\ntrain.py FAILED\n"
        "------------------------------------------------------------\nFailures:\n"
        "  <NO_OTHER_FAILURES>\n"
        "------------------------------------------------------------\n"
        "Root Cause (first observed failure):\n[0]:\n"
        "  time      : 2023-03-16_22:39:06\n  host      : gpu-node-7\n"
        f"  rank      : {rank} (local_rank: {rank})\n"
        f"  exitcode  : {exitcode} (pid: 41234)\n  error_file: <N/A>\n"
        "============================================================\n"
    )


def test_a_worker_exiting_with_code_2_is_a_refused_command_line_not_a_class():
    # huggingface/pytorch-image-models#1724: PyTorch 2.0's launcher passed --local-rank to a
    # script whose argparse knew only --local_rank; every worker exited with code 2
    result = diagnose(summary("2"))

    assert result.outcome == "no_match"
    assert result.initiating_rank == 1
    assert "argparse" in result.missing_facts[0]
    assert "outside the catalogue" in result.missing_facts[0]
    assert any("exitcode" in e.text for e in result.evidence)


def test_an_ordinary_exit_code_is_still_the_launchers_summary():
    for code in ("1", "3", "-11"):
        assert slug(diagnose(summary(code))) == "elastic-child-failed", code


def test_mpirun_reporting_an_illegal_instruction_is_no_class_with_its_rank():
    # horovod/horovod#926: a package built with AVX on a Celeron without it
    result = diagnose(
        "mpirun noticed that process rank 0 with PID 0 on node gpu-01 exited on signal 4 "
        "(Illegal instruction).\n"
    )

    assert result.outcome == "no_match"
    assert result.initiating_rank == 0
    assert "SIGILL" in result.missing_facts[0]
    assert "/proc/cpuinfo" in result.missing_facts[0]
    assert result.evidence
    assert "signal 4" in result.evidence[0].text


def test_torchruns_sigill_is_no_class_either():
    result = diagnose(summary("-4", rank=2))

    assert result.outcome == "no_match"
    assert result.initiating_rank == 2


def test_an_invalid_device_ordinal_is_not_proposed_as_an_oom_by_likeness():
    # HRNet/HRNet-Semantic-Segmentation#171: --nproc_per_node above the visible GPUs; the line
    # is shaped like PyTorch 0.x's OOM line, but its error code (10) is not the OOM's (2)
    result = diagnose(
        "RuntimeError: cuda runtime error (10) : invalid device ordinal at "
        "/pytorch/torch/csrc/cuda/Module.cpp:33\n"
        "THCudaCheck FAIL file=/pytorch/torch/csrc/cuda/Module.cpp line=33 error=10 : invalid "
        "device ordinal\n"
        "Traceback (most recent call last):\n"
        '  File "tools/train.py", line 98, in main\n'
        "    torch.cuda.set_device(args.local_rank)\n"
    )

    assert result.outcome == "no_match"
    # the same line shape with the OOM's own code is still read as one
    oom = diagnose(
        "RuntimeError: cuda runtime error (2) : out of memory at "
        "/pytorch/aten/src/THC/generic/THCStorage.cu:58\n"
    )
    assert str(slug(oom)).endswith("-oom")


def test_a_generic_extension_build_is_no_class_and_deepspeeds_own_op_is():
    # NVlabs/denoising-diffusion-gan#25: the repo's own fused ops built by cpp_extension
    generic = (
        "Traceback (most recent call last):\n"
        '  File "/opt/envs/ddgan/lib/python3.8/site-packages/torch/utils/cpp_extension.py", line 1673, in _run_ninja_build\n'
        "    env=env)\n"
        '  File "/opt/envs/ddgan/lib/python3.8/subprocess.py", line 512, in run\n'
        "    output=stdout, stderr=stderr)\n"
        "subprocess.CalledProcessError: Command '['ninja', '-v']' returned non-zero exit status 1.\n"
        "\nThe above exception was the direct cause of the following exception:\n\n"
    )
    result = diagnose(generic)
    assert result.outcome == "no_match"
    assert slug(diagnose(generic + "RuntimeError: Error building extension 'upfirdn2d'\n")) is None

    # DeepSpeed's op by name, or DeepSpeed's frames around the same failure, is its op build
    assert slug(diagnose(generic + "RuntimeError: Error building extension 'cpu_adam'\n")) == (
        "deepspeed-op-build"
    )
    with_frames = generic + (
        "Traceback (most recent call last):\n"
        '  File "/opt/envs/ds/lib/python3.8/site-packages/deepspeed/runtime/engine.py", line 1283, in _configure_optimizer\n'
        "    basic_optimizer = self._configure_basic_optimizer(model_parameters)\n"
    )
    assert slug(diagnose(with_frames)) == "deepspeed-op-build"


def test_a_process_killed_by_an_illegal_instruction_says_what_it_means():
    # pytorch/pytorch#22338: gdb's line, PyTorch's AVX2 code on a virtual CPU without AVX2; the
    # shell's own wording of the same signal
    for text in (
        'Thread 1 "python" received signal SIGILL, Illegal instruction.\n'
        "0x00007fff9eaea4d0 in THFloatVector_normal_fill_AVX2 () from libtorch.so\n",
        "$ python -c 'import torch; torch.randn(3)'\nIllegal instruction (core dumped)\n",
    ):
        result = diagnose(text)

        assert result.outcome == "no_match"
        assert "SIGILL" in result.missing_facts[0]
        assert "Illegal instruction" in result.evidence[0].text
