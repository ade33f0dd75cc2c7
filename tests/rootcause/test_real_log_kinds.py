"""The kinds of miss that real logs showed (issue 12), one test each, on logs in tests/logs.

Run-produced logs were captured from real programs on CPU (torch 2.13.0+cpu in .venv-realruns):
- anomaly_warning_fragment_before_the_error.log: the first 4 lines of a script with
  `torch.autograd.set_detect_anomaly(True)` taking `sqrt` of a zero distance, i.e. the paste of
  its UserWarning and forward trace, cut before the RuntimeError that followed;
- cpp_extension_ninja_failed_first_part.log: the first 7 lines of
  `torch.utils.cpp_extension.load_inline` on a C++ source missing a semicolon (the first link
  of the chained traceback, cut before "Error building extension"; no class since issue 32);
- torchrun_tee_nonfinite_batch_skipped_on_every_rank.log:
  `REALRUNS_ARGS="--fault skip-nonfinite --fail-rank 1 --fail-step 3 --seed 11" torchrun
  --nproc-per-node=2 --tee=3 bench/realruns/programs/train.py`;
- checkpoint_read_retried_with_tracebacks_then_resumed.log:
  `REALRUNS_ARGS="--fault ckpt-retry --variant traceback --log logging --seed 30" python
  bench/realruns/programs/train.py`;
- torchrun_rank1_silent_exit3_rank0_collateral.log: `REALRUNS_ARGS="--fault child-exit
  --variant 3 --fail-rank 1 --fail-step 3" torchrun --nproc-per-node=2 ...train.py`.

Where CPU code cannot produce the output (CUDA, NCCL, the GPU driver), the log is a minimal
excerpt in the wording real threads show; each test names its thread.
"""

from pathlib import Path

import pytest

from rootcause.cli import diagnose_path
from rootcause.confidence import CERTAIN, LIKELY
from rootcause.engine import get_engine
from rootcause.engine.similar import CONFIDENCE_HIGH
from rootcause.result import DiagnosisResult

LOGS = Path(__file__).resolve().parents[1] / "logs"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "corpus"
REALRUNS_DEV = Path(__file__).resolve().parents[2] / "bench" / "realruns" / "corpus" / "dev"


def diagnose(relative: str) -> DiagnosisResult:
    return diagnose_path(str(LOGS / relative), get_engine())


def slug(result: DiagnosisResult) -> str | None:
    return result.failure.slug if result.failure else None


# --- the decisive message without its exception header or traceback -------------------------


def test_nccl_warn_line_alone_is_a_collective_mismatch():
    # NVIDIA/nccl#214, #296: "init.cc:1247 NCCL WARN Mismatched collective detected, please
    # check your collective calls at and around rank N" with nothing else around it
    result = diagnose("collective-mismatch/nccl_warn_mismatched_collective_message_only.log")

    assert slug(result) == "collective-mismatch"


# --- fragments -------------------------------------------------------------------------------


def test_anomaly_warning_cut_before_the_error_is_the_anomaly_class():
    result = diagnose("anomaly-nan-backward/anomaly_warning_fragment_before_the_error.log")

    assert slug(result) == "anomaly-nan-backward"
    assert any("Traceback of forward call" in e.text for e in result.evidence)


def test_first_link_of_a_failed_extension_build_without_deepspeed_is_no_class():
    # DeepSpeed's op build is the only extension build the taxonomy covers: a generic JIT
    # extension's `ninja -v` failure is no class (issue 32: dev3 labels the same failure of a
    # repo's own ops, NVlabs/denoising-diffusion-gan#25, out of taxonomy), not one proposed by
    # likeness either
    result = diagnose("deepspeed-op-build/cpp_extension_ninja_failed_first_part.log")

    assert result.outcome == "no_match"
    assert any("deepspeed-op-build" in fact for fact in result.missing_facts)
    # the same first link beside DeepSpeed's own frames is its op build
    path = LOGS / "deepspeed-op-build/cpp_extension_ninja_failed_first_part.log"
    with_deepspeed = path.read_text() + (
        "\nThe above exception was the direct cause of the following exception:\n\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3/dist-packages/deepspeed/ops/op_builder/builder.py", line 480, in jit_load\n'
        "    op_module = load(name=self.name,\n"
    )
    assert slug(get_engine().diagnose([with_deepspeed])) == "deepspeed-op-build"


# --- evidence that is a warning or a metric --------------------------------------------------


def test_trainer_metric_dicts_with_loss_zero_and_nan_grad_norm_are_nan_loss():
    # AnswerDotAI/ModernBERT#233, hiyouga/LlamaFactory#2916: {'loss': 0.0, 'grad_norm': nan, ...}
    result = diagnose("nan-loss/trainer_metric_dicts_loss_zero_grad_norm_nan.log")

    assert slug(result) == "nan-loss"


def test_one_nan_grad_norm_that_training_recovers_from_is_healthy():
    # the same Trainer dicts with one early nan and finite values after it (fp16 scaler warm-up)
    result = diagnose("none/hf_deepspeed_fp16_early_scaler_skips.log")

    assert result.outcome == "no_match"


def test_driver_xid_lines_alone_point_at_the_gpu():
    # akash-network/support#244: "NVRM: Xid (PCI:0000:00:05): 43, pid=..., name=pt_main_thread"
    result = diagnose("gpu-hardware-fault/dmesg_xid_lines_only.log")

    assert slug(result) == "gpu-hardware-fault"
    assert result.failure is not None
    # a lone driver line is weak evidence: never said to be certain (the figure is the measured
    # rate of right answers at that evidence, calibration.json)
    assert result.failure.confidence < CERTAIN


def test_nccl_warn_ib_completion_error_is_a_system_error():
    # NVIDIA/nccl#214: "transport/net_ib.cu:788 NCCL WARN NET/IB : Got completion with error 4,
    # opcode 1, len 21938, vendor err 81"
    result = diagnose("nccl-system-error/nccl_warn_ib_completion_error_only.log")

    assert slug(result) == "nccl-system-error"


# --- only a launcher's summary ---------------------------------------------------------------


def test_launcher_summary_names_the_silent_rank_explains_its_exit_and_asks_for_its_output():
    result = diagnose("elastic-child-failed/torchrun_rank1_silent_exit3_rank0_collateral.log")

    assert slug(result) == "elastic-child-failed"
    assert result.initiating_rank == 1  # rank 0's gloo error came after rank 1 left
    assert result.root_cause is not None
    assert "Rank 1 exited with code 3" in result.root_cause
    assert any("rank 1's own output" in fact for fact in result.missing_facts)


def test_launcher_exit_code_of_a_signal_is_named():
    # the agent's line when a worker died of SIGSEGV, as torchrun prints it (tests/logs entry)
    result = diagnose("elastic-child-failed/rank3_sigsegv_no_traceback.log")

    assert slug(result) == "elastic-child-failed"
    assert result.initiating_rank == 3
    assert result.root_cause is not None
    assert "SIGSEGV" in result.root_cause


# --- wrong OOM sub-class ---------------------------------------------------------------------


def test_reserved_but_unallocated_above_the_request_in_mib_is_fragmentation():
    # kaito-project/kaito#976: "Tried to allocate 546.00 MiB ... 514.19 MiB is free ... and
    # 736.86 MiB is reserved by PyTorch but unallocated"
    result = diagnose("allocator-fragmentation/unallocated_mib_above_request_no_traceback.log")

    assert slug(result) == "allocator-fragmentation"


def test_unallocated_below_the_request_stays_activation_oom():
    result = diagnose("activation-oom/lm-eager-attention-long-batch.log")

    assert slug(result) == "activation-oom"


# An OOM message printed before the traceback of its exception (hpcaitech/ColossalAI#3509:
# the message, two "wandb: Waiting for W&B process to finish... (failed 1)." lines, then the
# traceback through coati's optimizer_step and ColossalAI's low-level ZeRO optimizer step).
_OOM_FIRST = (
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.12 GiB (GPU 5; "
    "23.70 GiB total capacity; 22.00 GiB already allocated; 292.56 MiB free; 22.29 GiB "
    "reserved in total by PyTorch)\n"
)
_WANDB = "wandb: Waiting for W&B process to finish... (failed 1).\n"
_ZERO_STEP_TRACE = (
    "Traceback (most recent call last):\n"
    '  File "train_sft.py", line 155, in train\n'
    "    trainer.fit(logger=logger, log_interval=args.log_interval)\n"
    '  File "/env/site-packages/coati/trainer/strategies/colossalai.py", line 154, in '
    "optimizer_step\n"
    "    optimizer.step()\n"
    '  File "/env/site-packages/colossalai/zero/sharded_optim/low_level_optim.py", line 480, '
    "in step\n"
    "    self.optim.step()\n"
)
_FORWARD_TRACE = (
    "Traceback (most recent call last):\n"
    '  File "train.py", line 40, in train\n'
    "    out = model(batch)\n"
    '  File "/env/site-packages/torch/nn/modules/conv.py", line 459, in forward\n'
    "    return self._conv_forward(input, self.weight, self.bias)\n"
)


def test_oom_message_before_its_traceback_reads_the_frames_that_follow():
    result = get_engine().diagnose([_OOM_FIRST + _WANDB + _WANDB + _ZERO_STEP_TRACE])

    assert slug(result) == "optimizer-state-oom"


def test_oom_message_before_a_forward_traceback_stays_activation_oom():
    result = get_engine().diagnose([_OOM_FIRST + _WANDB + _FORWARD_TRACE])

    assert slug(result) == "activation-oom"


def test_the_look_ahead_is_bounded_a_far_traceback_is_not_the_messages():
    between = "".join(f"step {n} loss 1.0\n" for n in range(10))
    result = get_engine().diagnose([_OOM_FIRST + between + _ZERO_STEP_TRACE])

    assert slug(result) == "activation-oom"


def test_an_oom_with_its_own_traceback_does_not_read_the_next_one():
    own = _FORWARD_TRACE + _OOM_FIRST
    result = get_engine().diagnose([own + _ZERO_STEP_TRACE])

    assert slug(result) == "activation-oom"


# --- rank not named --------------------------------------------------------------------------


def test_process_group_message_names_its_rank():
    # sgl-project/sglang#8296: "what():  [PG ID 2 PG GUID 3 Rank 1] Process group watchdog
    # thread terminated with exception: CUDA error: an illegal memory access was encountered"
    result = diagnose("cuda-illegal-memory-access/pg_rank_in_watchdog_message.log")

    assert slug(result) == "cuda-illegal-memory-access"
    assert result.initiating_rank == 1


def test_a_rank_reporting_that_its_remote_peer_exited_is_not_the_initiator():
    # pytorch/pytorch#150916 (an elastic agent killed on the other node): rank 1's watchdog
    # reports NCCL's ncclRemoteError about the peer that went away
    text = (
        "[rank1]:[E415 10:01:02.000000 ProcessGroupNCCL.cpp:1895] [PG ID 0 PG GUID "
        "0(default_pg) Rank 1] Process group watchdog thread terminated with exception: NCCL "
        "error: remote process exited or there was a network error, NCCL version 2.21.5\n"
        "ncclRemoteError: A call failed possibly due to a network error or a remote process "
        "exiting prematurely.\n"
        "Last error:\n"
        "socketProgress: Connection closed by remote peer <HOST_1><59116>\n"
    )
    result = get_engine().diagnose([text])

    assert result.failure is not None
    assert result.initiating_rank is None


def test_spawns_report_of_a_process_killed_by_a_signal_names_its_rank():
    # run-produced (bench/realruns, `--fault oom-kill --fail-rank 1 --fail-step 4 --seed 102`
    # under mp.spawn): rank 1 is SIGKILLed by the cgroup OOM killer and prints nothing; spawn
    # says "ProcessExitedException: process 1 terminated with signal SIGKILL"
    path = REALRUNS_DEV / "run-host-oom-killed__spawn_w2_rank1_cgroup.log"
    result = diagnose_path(str(path), get_engine())

    assert slug(result) == "host-oom-killed"
    assert result.initiating_rank == 1


def test_a_mismatch_report_names_the_other_rank_when_that_rank_failed_on_its_own():
    text = (
        "[rank1]: RuntimeError: Detected mismatch between collectives on ranks. Rank 1 is "
        "running collective: CollectiveFingerPrint(SequenceNumber=485, OpType=ALLREDUCE), but "
        "Rank 0 is running collective: CollectiveFingerPrint(SequenceNumber=485, "
        "OpType=BROADCAST).\n"
        "E0209 09:09:15.164000 1 torch/distributed/elastic/multiprocessing/api.py:869] failed "
        "(exitcode: 1) local_rank: 0 (pid: 170581) of binary: /usr/bin/python3\n"
    )
    # speechbrain/speechbrain#2401 (wording of the debug wrapper's report and the agent's line)
    result = get_engine().diagnose([text])

    assert slug(result) == "collective-mismatch"
    assert result.initiating_rank == 0


def test_a_lone_mismatch_report_without_backing_names_no_other_rank():
    text = (
        "RuntimeError: Detected mismatch between collectives on ranks. Rank 1 is running "
        "collective: CollectiveFingerPrint(SequenceNumber=0, OpType=_ALLGATHER_BASE, "
        "TensorShape=[359, 1, 1435, 16]), but Rank 2 is running collective: "
        "CollectiveFingerPrint(SequenceNumber=0, OpType=_ALLGATHER_BASE, "
        "TensorShape=[359, 1, 1436, 16]).\n"
    )
    result = get_engine().diagnose([text])

    assert slug(result) == "collective-mismatch"
    assert result.initiating_rank is None


def test_a_framework_reporting_on_rank_n_names_it():
    # NVIDIA/Megatron-LM#5026: "Unexpected result nan on rank 3 at iteration #3"
    text = (
        "ERROR:megatron.core.rerun_state_machine:Unexpected result nan on rank 3 at iteration "
        "#3 invocation #2 (message='found NaN in local grad norm for bucket #0 in backward "
        "pass before data-parallel communication collective')\n"
    )
    result = get_engine().diagnose([text])

    assert slug(result) == "nan-loss"
    assert result.initiating_rank == 3


# --- healthy runs: recovered events are not the failure --------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        "none/torchrun_tee_nonfinite_batch_skipped_on_every_rank.log",
        "none/checkpoint_read_retried_with_tracebacks_then_resumed.log",
        # facebookresearch/fairseq#103: "WARNING: ran out of memory on GPU #2, skipping batch"
        "none/fairseq_oom_skipping_batch_trains_on.log",
    ],
)
def test_a_failure_the_run_handled_is_not_the_failure(log):
    result = diagnose(log)

    assert result.outcome == "no_match", result.failure


def test_a_skipped_batch_followed_by_the_real_failure_is_still_diagnosed():
    text = (LOGS / "none/torchrun_tee_nonfinite_batch_skipped_on_every_rank.log").read_text()
    text += "[default0]:RuntimeError: Loss is nan at step 13, stopping training\n"

    result = get_engine().diagnose([text])

    assert slug(result) == "nan-loss"


# --- the similarity fallback -----------------------------------------------------------------


def test_a_wording_no_fingerprint_names_is_proposed_at_low_confidence():
    # Lightning-AI/pytorch-lightning#4420: every rank waiting in the store-based barrier with
    # one worker missing (world_size=8, worker_count=7) until the log ends; no fingerprint
    # names the waiting line, the catalogue's signature for the barrier timeout resembles it
    result = diagnose("rendezvous-timeout/store_barrier_waiting_short_of_workers.log")

    assert slug(result) == "rendezvous-timeout"
    assert result.failure is not None
    # a proposal is stated as a lead to confirm: below LIKELY whatever the fitted table (its
    # evidence score is CONFIDENCE_LOW..CONFIDENCE_HIGH, under any fingerprint's)
    assert result.failure.confidence < LIKELY
    assert len(result.evidence) == 1
    assert "store based barrier" in result.evidence[0].text
    assert "resembles the catalogue's signature" in result.missing_facts[0]


def test_the_fallback_never_overrides_a_fingerprint():
    waiting = (LOGS / "rendezvous-timeout/store_barrier_waiting_short_of_workers.log").read_text()
    oom = (LOGS / "activation-oom/cuda-error-out-of-memory-in-forward.log").read_text()

    result = get_engine().diagnose([waiting + oom])

    assert slug(result) == "activation-oom"
    assert result.failure is not None
    assert result.failure.confidence > CONFIDENCE_HIGH


def test_the_fallback_ignores_an_error_training_went_on_after():
    waiting = (LOGS / "rendezvous-timeout/store_barrier_waiting_short_of_workers.log").read_text()
    steps = "".join(f"step {n} loss 0.{n}1\n" for n in range(1, 6))

    result = get_engine().diagnose([waiting + steps])

    assert result.outcome == "no_match"


def _healthy_logs() -> list[Path]:
    logs = sorted((LOGS / "none").glob("*.log"))
    # the run-produced corpus's development part, when it has been generated (never the sealed)
    logs += sorted((REALRUNS_DEV).glob("run-none__*.log"))
    if SHARED.is_dir():
        import json

        for corpus in ("dev", "dev2"):
            labels = SHARED / corpus / "labels.jsonl"
            if labels.is_file():
                for line in labels.read_text(encoding="utf-8").splitlines():
                    row = json.loads(line) if line.strip() else {}
                    if row.get("slug") == "none":
                        logs.append(SHARED / corpus / row["file"])
    return logs


@pytest.mark.parametrize("path", _healthy_logs(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_healthy_log_gets_a_diagnosis_from_the_fallback(path):
    # tests/logs/none always; bench/realruns corpus/dev and ../shared/corpus/{dev,dev2} healthy
    # logs when the checkout has them
    result = diagnose_path(str(path), get_engine())

    assert result.outcome == "no_match", (result.failure, result.evidence)


def test_a_destructor_error_after_the_build_error_is_the_same_process():
    # deepspeedai/Megatron-DeepSpeed#333: the build error, then "Exception ignored in" the
    # optimizer's __del__ in the same process, then the agent's line naming the worker
    text = (
        "RuntimeError: Error building extension 'cpu_adam'\n"
        "Exception ignored in: <function DeepSpeedCPUAdam.__del__ at 0x7f2f4244a0e0>\n"
        "Traceback (most recent call last):\n"
        '  File "/opt/deepspeed/ops/adam/cpu_adam.py", line 102, in __del__\n'
        "AttributeError: 'DeepSpeedCPUAdam' object has no attribute 'ds_opt_adam'\n"
        "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 11971 closing "
        "signal SIGTERM\n"
        "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 "
        "(pid: 11970) of binary: /usr/bin/python\n"
    )
    result = get_engine().diagnose([text])

    assert slug(result) == "deepspeed-op-build"
    assert result.initiating_rank == 0


def test_the_same_error_raised_twice_without_ranks_names_no_rank():
    line = "RuntimeError: Error building extension 'cpu_adam'\n"
    launcher = (
        "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 "
        "(pid: 11970) of binary: /usr/bin/python\n"
    )
    result = get_engine().diagnose([line + line + launcher])

    assert slug(result) == "deepspeed-op-build"
    assert result.initiating_rank is None


# --- ranks named by a launcher's own header (run-produced, bench/realruns corpus/dev) --------


def test_mp_spawn_process_header_names_the_rank():
    # "-- Process 0 terminated with the following error:" (torch.multiprocessing.spawn)
    result = diagnose("dtype-mismatch/mp_spawn_process0_header_rank0.log")

    assert slug(result) == "dtype-mismatch"
    assert result.initiating_rank == 0


def test_multiprocessing_child_header_names_the_rank():
    # "Process SpawnProcess-3:" before rank 2's traceback, the others' gloo errors after it
    result = diagnose("shape-mismatch/multiprocessing_spawnprocess3_header_rank2.log")

    assert slug(result) == "shape-mismatch"
    assert result.initiating_rank == 2


# --- ranks given by host and local rank ------------------------------------------------------

_AGENT_FAILED = (
    "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: {local} "
    "(pid: 17966) of binary: /usr/bin/python\n"
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
)


def _diagnose_text(text: str) -> DiagnosisResult:
    return get_engine().diagnose([text])


def test_agent_local_rank_on_the_second_node_becomes_its_global_rank_torchelastic_02():
    # Lightning-AI/pytorch-lightning#3029: torchelastic's rendezvous result on the second node,
    # "group_rank=1 ... workers={'local_ranks': [0], 'global_ranks': [1], ...}"
    text = (
        "[default] Rendezvous complete for workers.\n"
        "Result:\n"
        "\trestart_count=3\n"
        "\tgroup_rank=1\n"
        "\tgroup_world_size=2\n"
        "\tworkers={'local_ranks': [0], 'global_ranks': [1], 'role_ranks': [1], "
        "'world_size': 2, 'role_world_size': 2}\n"
        "[default] Starting worker group\n" + _AGENT_FAILED.format(local=0)
    )
    result = _diagnose_text(text)

    assert slug(result) == "elastic-child-failed"
    assert result.initiating_rank == 1  # not the agent's local rank 0


def test_agent_local_rank_with_node_rank_and_nproc_per_node_stated():
    # pytorch/pytorch#123808's command line ("torchrun --nproc_per_node=4 --nnodes=1
    # --node_rank=0"), here on the second of two nodes: global = 1 * 4 + 2
    text = (
        "+ torchrun --nproc_per_node=4 --nnodes=2 --node_rank=1 llama.py\n"
        + _AGENT_FAILED.format(local=2)
    )
    result = _diagnose_text(text)

    assert slug(result) == "elastic-child-failed"
    assert result.initiating_rank == 6


def test_agent_local_rank_on_a_later_node_without_its_size_is_unknown_not_wrong():
    # pytorch/pytorch#182223's launch ("--nnodes=1:2 --node_rank=1"), without --nproc_per_node:
    # local rank 1 on node 1 is not rank 1, and the node's size is not stated
    text = "torchrun --nnodes=1:2 --node_rank=1 --rdzv_backend=c10d lstm_torch.py\n" + (
        _AGENT_FAILED.format(local=1)
    )
    result = _diagnose_text(text)

    assert slug(result) == "elastic-child-failed"
    assert result.initiating_rank is None


def test_two_nodes_launchers_in_one_paste_make_the_local_rank_unknown():
    # per-node agent outputs pasted one after the other: two rendezvous results (group_rank=0,
    # then 1, as in Lightning-AI/pytorch-lightning#3029) and no host prefix to tell them apart
    block = "[default] Rendezvous complete for workers.\nResult:\n\tgroup_rank={g}\n"
    text = block.format(g=0) + block.format(g=1) + _AGENT_FAILED.format(local=1)
    result = _diagnose_text(text)

    assert result.initiating_rank is None


def test_on_one_node_the_agent_local_rank_is_the_rank():
    # showlab/EgoVLP#21: "failed (exitcode: -9) local_rank: 3" on "a single A5000 Node with 4
    # GPUS", the rendezvous result saying group_rank=0
    text = "Result:\n  group_rank=0\n  group_world_size=1\n" + _AGENT_FAILED.format(local=3)
    result = _diagnose_text(text)

    assert result.initiating_rank == 3
    # and with nothing said about nodes, as today: a one-node run
    assert _diagnose_text(_AGENT_FAILED.format(local=3)).initiating_rank == 3


def test_root_cause_rank_field_is_preferred_over_the_agents_local_rank():
    # torchrun's summary: "rank : 5 (local_rank: 1)" is the global rank; the agent's own line
    # only knows local rank 1 of the second node (nothing gives the node's size)
    text = (
        "torchrun --nnodes=2 --node_rank=1 train.py\n"
        + _AGENT_FAILED.format(local=1)
        + "============================================================\n"
        "train.py FAILED\n"
        "------------------------------------------------------------\n"
        "Root Cause (first observed failure):\n"
        "[0]:\n"
        "  time      : 2024-04-11_10:00:00\n"
        "  host      : node-2\n"
        "  rank      : 5 (local_rank: 1)\n"
        "  exitcode  : 1 (pid: 17966)\n"
    )
    result = _diagnose_text(text)

    assert result.initiating_rank == 5


def test_pdsh_host_prefixed_layouts_convert_each_node_separately():
    # huggingface/accelerate#1317: DeepSpeed's launcher on each node, behind pdsh's host prefix
    # ("104.171.201.172: ... nnodes=2, num_local_procs=8, node_rank=0"); here an elastic agent
    # behind the same prefix reports local rank 2 of the node whose node_rank is 1
    text = (
        "node-a1: [INFO] [launch.py:235:main] nnodes=2, num_local_procs=8, node_rank=0\n"
        "node-b2: [INFO] [launch.py:235:main] nnodes=2, num_local_procs=8, node_rank=1\n"
        "node-b2: " + _AGENT_FAILED.format(local=2).replace("\n", "\nnode-b2: ", 1)
    )
    result = _diagnose_text(text)

    assert result.initiating_rank == 10


_TEE_OOM = (
    "{host}: [default{local}]:Traceback (most recent call last):\n"
    '{host}: [default{local}]:  File "train.py", line 40, in <module>\n'
    "{host}: [default{local}]:    loss.backward()\n"
    "{host}: [default{local}]:torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to "
    "allocate 2.00 GiB (GPU {local}; 79.15 GiB total capacity; 75.10 GiB already allocated)\n"
)


def test_tee_prefix_behind_a_host_is_a_local_rank_made_global_by_the_nodes_layout():
    # torchrun --tee prefixes a worker's lines with TailLog's "[{role}{local_rank}]:"
    # ("[default1]:"), and pdsh puts the host in front (huggingface/accelerate#1317:
    # "104.171.201.172: ... nnodes=2, num_local_procs=8, node_rank=0"): local rank 1 of the
    # node with node_rank 1 and 8 processes a node is rank 9
    text = (
        "node-a1: [INFO] [launch.py:235:main] nnodes=2, num_local_procs=8, node_rank=0\n"
        "node-b2: [INFO] [launch.py:235:main] nnodes=2, num_local_procs=8, node_rank=1\n"
        + _TEE_OOM.format(host="node-b2", local=1)
    )
    result = _diagnose_text(text)

    assert slug(result) == "activation-oom"
    assert result.initiating_rank == 9


def test_tee_prefix_behind_two_hosts_without_a_layout_is_not_a_global_rank():
    # two nodes' "[default0]:" streams and nothing that says which node is which: local rank 0
    # of node-b2 is not rank 0, so no rank is named rather than a wrong one
    text = (
        "node-a1: [default0]:step 10 loss 2.31\n"
        "node-b2: [default0]:step 10 loss 2.29\n" + _TEE_OOM.format(host="node-b2", local=0)
    )
    result = _diagnose_text(text)

    assert slug(result) == "activation-oom"
    assert result.initiating_rank is None


def test_tee_prefix_on_one_node_stays_the_rank():
    # one node, no host prefix: "[default1]:" is local rank 1, which is rank 1
    text = _TEE_OOM.format(host="x", local=1).replace("x: ", "")
    result = _diagnose_text(text)

    assert result.initiating_rank == 1


def test_nccl_device_index_is_not_a_rank():
    # pytorch/pytorch#124380: "10-12-3-162:7991:8061 [1] proxy.cc:1533 NCCL WARN ... from
    # localRank 2": host:pid:tid, then the CUDA device index, which names no rank
    text = (
        "10-12-3-162:7991:8061 [1] proxy.cc:1533 NCCL WARN [Service thread] Could not receive "
        "type from localRank 2, res=3, closed=0\n"
        "10-12-3-162:7992:8059 [2] misc/socket.cc:50 NCCL WARN socketProgress: Connection "
        "closed by remote peer 10-12-3-162<55133>\n"
    )
    result = _diagnose_text(text)

    assert result.initiating_rank not in (1, 2)


def test_deepspeed_exit_line_local_rank_is_weak_evidence_and_none_behind_a_host():
    # deepspeedai/DeepSpeedExamples#626: "[launch.py:324:sigkill_handler] [..., '--local_rank=1',
    # ...] exits with return code = -11" on two GPUs: DeepSpeed's launcher prints the command of
    # the last worker it started with the failed one's code, so the local rank there is named as
    # weak evidence, with that caveat (issue 32); behind a pdsh host prefix, with the node's
    # place unknown, it names nobody
    line = (
        "[2023-07-10 04:26:35,999] [ERROR] [launch.py:324:sigkill_handler] ['/venv/bin/python3.10', "
        "'-u', 'trainCLM.py', '--local_rank=1', '--deepspeed', 'ds.json'] exits with return "
        "code = -11\n"
    )
    result = _diagnose_text(line)
    assert slug(result) == "elastic-child-failed"
    assert result.initiating_rank == 1
    assert "last worker it started" in (result.root_cause or "")

    result = _diagnose_text("worker-1: " + line)
    assert slug(result) == "elastic-child-failed"
    assert result.initiating_rank is None


def test_rank_prefix_behind_a_host_is_already_global():
    # the `[rank9]:` prefix is the global rank, whatever node prints it (the layout of
    # huggingface/accelerate#1317's second node is not applied to it)
    text = "node-b2: [INFO] [launch.py:235:main] nnodes=2, num_local_procs=8, node_rank=1\n" + (
        _TEE_OOM.format(host="node-b2", local=9).replace("[default9]", "[rank9]")
    )
    result = _diagnose_text(text)

    assert slug(result) == "activation-oom"
    assert result.initiating_rank == 9


def test_a_truncated_zip_checkpoint_refused_by_the_os_is_checkpoint_corrupt():
    # a real 2-rank torchrun run (bench/realruns generate.py --round 9, `--fault ckpt --variant
    # truncated`, the rank files joined with `cat`; hand-reduced to each rank's first traceback):
    # torch 2.13's zip reader seeks before the start of the cut file and the OS refuses, so the
    # only error is `OSError: [Errno 22] Invalid argument` under torch.load's frames. Kept in
    # tests/rootcause/runs, not tests/logs: the masking corpus and property draw their lines from
    # tests/logs, and a new file there redraws them (docs/masking.md, "Known gap")
    log = Path(__file__).with_name("runs") / "torchrun_logdir_cat_truncated_zip_errno22.log"
    result = diagnose_path(str(log), get_engine())

    assert result.failure is not None
    assert result.failure.slug == "checkpoint-corrupt"
    assert result.initiating_rank is None


def test_an_invalid_argument_outside_torch_load_is_not_a_corrupt_checkpoint(tmp_path: Path) -> None:
    log = tmp_path / "open.log"
    log.write_text(
        "Traceback (most recent call last):\n"
        '  File "prep.py", line 12, in <module>\n'
        "    fh = open(path, 'rb')\n"
        "OSError: [Errno 22] Invalid argument\n"
    )
    result = diagnose_path(str(log), get_engine())

    assert result.failure is None or result.failure.slug != "checkpoint-corrupt"
