"""The kinds of miss the third open set of real logs showed (issue 32), one test each, on short
lines in the wording the threads show (each test names its thread)."""

from rootcause.engine import get_engine
from rootcause.result import DiagnosisResult


def _diagnose_text(text: str) -> DiagnosisResult:
    return get_engine().diagnose([text])


def slug(result: DiagnosisResult) -> str | None:
    return result.failure.slug if result.failure else None


_MPI_BANNER = (
    "-------------------------------------------------------\n"
    "Primary job  terminated normally, but 1 process returned\n"
    "a non-zero exit code. Per user-direction, the job has been aborted.\n"
    "-------------------------------------------------------\n"
)


def test_mpirun_signal_9_names_the_killed_rank():
    # horovod/horovod#469: eight Keras processes print "Epoch 1/1", then mpirun alone reports
    # the kill: the process it names is the one that died first (weak evidence, but the only)
    text = (
        "Epoch 1/1\n" * 4
        + _MPI_BANNER
        + "mpirun noticed that process rank 7 with PID 0 on node HOSTNAME exited on signal 9 "
        "(Killed).\n"
    )
    result = _diagnose_text(text)

    assert slug(result) == "host-oom-killed"
    assert result.initiating_rank == 7
    assert "weak evidence" in (result.root_cause or "")


def test_mpirun_crash_signal_is_a_child_failure_of_that_rank():
    # openai/glow#18: mpiexec reports the segfault of rank 0 (Horovod's background thread)
    text = (
        "[lhx-910:19474] *** Process received signal ***\n"
        "[lhx-910:19474] Signal: Segmentation fault (11)\n"
        "mpiexec noticed that process rank 0 with PID 19474 on node lhx-910 exited on signal 11 "
        "(Segmentation fault).\n"
    )
    result = _diagnose_text(text)

    assert slug(result) == "elastic-child-failed"
    assert result.initiating_rank == 0


def test_mpirun_summary_process_name_gives_the_rank_that_exited_first():
    # horovod/horovod#1421: "The first process to do so was: Process name: [[29973,1],0]
    # Exit code: 1" - the last number of the process name is its rank
    text = (
        _MPI_BANNER
        + "mpirun detected that one or more processes exited with non-zero status, thus causing\n"
        "the job to be terminated. The first process to do so was:\n\n"
        "  Process name: [[29973,1],2]\n"
        "  Exit code:    1\n"
    )
    result = _diagnose_text(text)

    assert slug(result) == "elastic-child-failed"
    assert result.initiating_rank == 2


def test_nccl_cuda_failure_with_a_status_number():
    # vllm-project/vllm#9369: newer NCCL prints the CUDA status number before its text
    text = (
        "host:44712:44746 [2] transport/nvls.cc:246 NCCL WARN Cuda failure 3 "
        "'initialization error'\n"
        "host:44712:44746 [2] NCCL INFO init.cc:1560 -> 1\n"
    )
    assert slug(_diagnose_text(text)) == "nccl-cuda-error"


def test_fused_adam_object_failing_in_ninja_is_an_op_build_failure():
    # hkust-zhiyao/RTL-Coder#13: a notebook paste that keeps ninja's "FAILED: cpu_adam.o" and
    # is cut before Python's "Error building extension"
    text = (
        "Building extension module cpu_adam...\n"
        "[1/3] c++ -MMD -MF cpu_adam.o.d -DTORCH_EXTENSION_NAME=cpu_adam -c cpu_adam.cpp\n"
        "FAILED: cpu_adam.o\n"
    )
    assert slug(_diagnose_text(text)) == "deepspeed-op-build"


def test_tcpstore_client_that_reached_no_address_is_a_rendezvous_timeout():
    # hpcaitech/Open-Sora#667: torch 2.x's client retries, then gives up on the master address
    text = (
        "[W socket.cpp:697] [c10d] The client socket has failed to connect to 10.0.0.5:47389 "
        "(errno: 110 - Connection timed out).\n"
        "[E socket.cpp:753] [c10d] The client socket has failed to connect to any network "
        "address of (node-1, 47389).\n"
    )
    assert slug(_diagnose_text(text)) == "rendezvous-timeout"


def test_tokenizer_length_warning_proposes_no_class():
    # the healthy runs of two threads: the tokenizer warns that a sequence is longer than the
    # model's maximum ("will result in indexing errors") and nothing failed after it
    text = (
        "Loading checkpoint shards: 100%|##########| 2/2 [00:05<00:00,  2.60s/it]\n"
        "Token indices sequence length is longer than the specified maximum sequence length "
        "for this model (2409 > 2048). Running this sequence through the model will result in "
        "indexing errors\n"
    )
    assert _diagnose_text(text).outcome == "no_match"


def test_nan_in_a_trainer_metric_dict_or_a_loss_table_is_a_nan_loss():
    # hiyouga/LLaMA-Factory#7263: the metric pair alone, the loss printed with three decimals
    assert slug(_diagnose_text("'loss': 0.000, 'grad_norm': nan\n")) == "nan-loss"
    # nv-tlabs/LION#9: a loguru table line "[Loss] nan"
    line = (
        "2023-01-25 00:21:34.569 | INFO | trainers.base_trainer:train_epochs:256 - [R0] | "
        "E6 iter[ 14/ 15] | [Loss] nan | [step]   104 |\n"
    )
    assert slug(_diagnose_text(line * 3)) == "nan-loss"


def test_nvidia_smi_gpu_is_lost_is_a_hardware_fault():
    # OWOD#81: nvidia-smi after the stall
    text = (
        "Unable to determine the device handle for GPU 0000:02:00.0: GPU is lost. Reboot the "
        "system to recover this GPU\n"
    )
    assert slug(_diagnose_text(text)) == "gpu-hardware-fault"


def test_tensorflow_pool_reservation_failing_at_device_creation_is_memory_held_elsewhere():
    # ROCm/tensorflow-upstream#82: hipError_t(1002) at decreasing sizes right after the device
    # is created; the CUDA wording is CUDA_ERROR_OUT_OF_MEMORY
    for status in ("hipError_t(1002)", "CUDA_ERROR_OUT_OF_MEMORY"):
        text = (
            "2019-01-08 19:06:10.822532: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1189]"
            " Created TensorFlow device (/job:localhost/replica:0/task:0/device:GPU:0 with 7524 "
            "MB memory)\n"
            "2019-01-08 19:06:11.303639: E tensorflow/stream_executor/rocm/rocm_driver.cc:601] "
            f"failed to allocate 7.35G (7889485824 bytes) from device: {status}\n"
        )
        assert slug(_diagnose_text(text)) == "gpu-memory-held-elsewhere"
