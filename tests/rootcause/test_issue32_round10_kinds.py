"""Class kinds of issue 32 still missed after round 9, one test each.

Run logs are reduced by hand from runs of bench/realruns/programs (paths, pids and ports changed)
and live in tests/rootcause/runs: a new file under tests/logs would redraw the masking corpus.
"""

from pathlib import Path

import pytest

from rootcause.engine import get_engine
from rootcause.result import DiagnosisResult

RUNS = Path(__file__).resolve().parent / "runs"


def diagnose_run(name: str, replace: tuple[str, str] | None = None) -> DiagnosisResult:
    text = (RUNS / name).read_text(encoding="utf-8")
    if replace is not None:
        text = text.replace(*replace)
    return get_engine().diagnose([text])


def slug(result: DiagnosisResult) -> str | None:
    return result.failure.slug if result.failure else None


def test_a_spawned_rank_that_exits_quietly_is_the_launchers_exit_not_its_peers_loss():
    # mp.spawn, 2 ranks (`--fault child-exit --variant 3`'s kind): rank 1 calls sys.exit(2)
    # printing nothing; rank 0's gloo recv, printed first, reports the lost peer
    result = diagnose_run("spawn_rank1_exit2_rank0_lost_peer.log")

    assert slug(result) == "elastic-child-failed"
    assert result.initiating_rank == 1
    assert [(c.slug, c.ranks) for c in result.collateral] == [("gloo-timeout", [0])]


def test_a_spawned_rank_stopped_by_a_signal_it_did_not_raise_leaves_the_peer_loss_leading():
    # the same job where the launcher saw rank 1 end by SIGTERM (sent to it, not its own exit)
    result = diagnose_run(
        "spawn_rank1_exit2_rank0_lost_peer.log",
        replace=("terminated with exit code 2", "terminated with signal SIGTERM"),
    )

    assert slug(result) == "gloo-timeout"


# --- the issue's list of kinds, each checked on an excerpt written in a real thread's wording ---
# (tests/rootcause/runs/kinds; None: no class is named)
KINDS = [
    # wordings
    ("nccl_info_cuda_failure3.log", "nccl-cuda-error"),
    ("cpu_adam_notebook.log", "deepspeed-op-build"),
    ("torch_save_cannot_be_opened.log", "disk-full"),
    ("xid79.log", "gpu-hardware-fault"),
    ("xid48_dmesg.log", "gpu-hardware-fault"),
    ("xid_ecc.log", "gpu-hardware-fault"),
    ("gpu_lost_smi.log", "gpu-hardware-fault"),
    ("hf_state_dict_size_mismatch.log", "state-dict-mismatch"),
    ("lightning_missing_keys.log", "state-dict-mismatch"),
    # Keras 2.11+'s "Layer count mismatch when loading weights from file" (new in this round)
    ("keras_weights_mismatch.log", "state-dict-mismatch"),
    ("rdzv_dist_network_error.log", "rendezvous-timeout"),
    ("rdzv_join_timeout.log", "rendezvous-timeout"),
    ("hip_oom.log", "activation-oom"),
    ("mps_oom.log", "activation-oom"),
    ("hip_no_binary.log", "no-kernel-image"),
    ("hip_invalid_device_function.log", "no-kernel-image"),
    ("hip_illegal.log", "cuda-illegal-memory-access"),
    ("mps_placeholder.log", "device-mismatch"),
    ("tf_nan_check.log", "nan-loss"),
    ("safetensors_mismatch.log", "state-dict-mismatch"),
    ("peft_mismatch.log", "state-dict-mismatch"),
    ("diststore_timeout.log", "rendezvous-timeout"),
    ("fell_off_bus_torch.log", "gpu-hardware-fault"),
    ("nccl_warn_cuda_failure.log", "nccl-cuda-error"),
    ("fused_adam_build.log", "deepspeed-op-build"),
    # new in this round: DeepSpeed's "Unable to JIT load the cpu_adam op due to ...",
    # TensorFlow's "indices[12,40] = 30522 is not in [0, 30522)", Keras's input-spec check
    ("ds_op_not_compatible.log", "deepspeed-op-build"),
    ("tf_embedding_index.log", "embedding-index-out-of-range"),
    ("tf_shape.log", "shape-mismatch"),
    # TensorFlow 2.10+'s RESOURCE_EXHAUSTED and "Graph execution error:" (new in this round)
    ("tf_oom.log", "activation-oom"),
    # "cuDNN error: CUDNN_STATUS_ALLOC_FAILED": the card out of memory (new in this round)
    ("cudnn_status_alloc_failed.log", "activation-oom"),
    # no engine for the shape, or none that fits: the catalogue's cuDNN class says both
    ("cudnn_no_valid_algo_oom.log", "cudnn-error"),
    # a traceback cut mid-statement whose frames say nothing of a class
    ("traceback_cut_mid_statement.log", None),
    # visible only in metrics
    ("loss_climbing.log", "loss-divergence"),  # `| loss 2.31 |`: new in this round
    ("loss_zero_dicts.log", "nan-loss"),
    ("loss_zero_only.log", "nan-loss"),  # new in this round
    ("ds_loss_scale_min.log", "fp16-loss-scale-underflow"),
    ("apex_loss_scale_halving.log", "fp16-loss-scale-underflow"),
    ("bar_nan_false_alarm.log", None),  # `train/loss=0.81` logged: new in this round
    ("tokenizer_warning.log", None),
    # what happened before the error
    ("hf_evaluate_oom.log", "eval-memory-growth"),
    # a script's own test() after an epoch said it was evaluating: new in this round
    ("custom_test_oom.log", "eval-memory-growth"),
    # ...but a repro snippet's test() with nothing before it is a forward pass like any other
    ("repro_test_function_oom.log", "activation-oom"),
    ("setup_oom_from_pretrained.log", "setup-oom"),
    ("child_failed_behind_shape.log", "shape-mismatch"),
]


@pytest.mark.parametrize(("name", "expected"), KINDS)
def test_the_issues_kinds(name: str, expected: str | None):
    assert slug(diagnose_run(f"kinds/{name}")) == expected


def test_a_loss_that_converges_to_zero_is_no_failure():
    # the same trainer dictionaries, the loss reaching 0.0 through small values
    converging = (
        "{'loss': 0.0412, 'learning_rate': 4.7e-05, 'epoch': 3.0}\n"
        "{'loss': 0.0031, 'learning_rate': 4.6e-05, 'epoch': 3.5}\n"
        "{'loss': 0.0004, 'learning_rate': 4.5e-05, 'epoch': 4.0}\n"
        "{'loss': 0.0, 'learning_rate': 4.4e-05, 'epoch': 4.5}\n"
        "{'loss': 0.0, 'learning_rate': 4.3e-05, 'epoch': 5.0}\n"
        "{'loss': 0.0, 'learning_rate': 4.2e-05, 'epoch': 5.5}\n"
    )
    assert slug(get_engine().diagnose([converging])) is None


def test_a_loss_back_from_zero_is_no_failure():
    text = (RUNS / "kinds" / "loss_zero_only.log").read_text(encoding="utf-8")
    text += "{'loss': 1.7315, 'learning_rate': 4.2e-05, 'epoch': 0.16}\n"
    assert slug(get_engine().diagnose([text])) is None


def test_the_training_loss_under_another_namespace_is_not_read_as_it():
    # `val/loss` and `xtrain/loss` are other figures: the bar's NaN is then the only loss
    text = (RUNS / "kinds" / "bar_nan_false_alarm.log").read_text(encoding="utf-8")
    assert slug(get_engine().diagnose([text.replace("train/loss", "val/loss")])) == "nan-loss"
    assert slug(get_engine().diagnose([text.replace("train/loss", "xtrain/loss")])) == "nan-loss"


def test_a_cudnn_status_other_than_alloc_failed_stays_a_cudnn_error():
    text = (RUNS / "kinds" / "cudnn_status_alloc_failed.log").read_text(encoding="utf-8")
    for status in ("INTERNAL_ERROR", "ARCH_MISMATCH", "EXECUTION_FAILED"):
        other = text.replace("ALLOC_FAILED", status)
        assert slug(get_engine().diagnose([other])) == "cudnn-error", status


def test_the_insufficient_driver_message_alone_says_nvidia_smi_decides_it():
    # the runtime's words for a driver too old are also its words for no NVIDIA driver at all
    # (Akegarasu/lora-scripts#101: a laptop with an integrated GPU only)
    result = diagnose_run("kinds/bnb_driver_insufficient.log")

    assert slug(result) == "cuda-driver-mismatch"
    assert any("nvidia-smi" in f and "cuda-not-available" in f for f in result.missing_facts)
