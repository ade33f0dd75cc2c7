"""The kinds of miss left on the third open set after its first round (issue 32): launcher-only
rank evidence, wordings not yet known, the numbers of older OOM messages, where an OOM was raised.
Each test holds short lines of our own in the wording the threads show."""

import pytest

from rootcause.engine import get_engine
from rootcause.engine.report import _first_sentence
from rootcause.matching import parse_numeric
from rootcause.result import DiagnosisResult


def _diagnose(text: str) -> DiagnosisResult:
    return get_engine().diagnose([text])


def slug(result: DiagnosisResult) -> str | None:
    return result.failure.slug if result.failure else None


# --- launcher-only rank evidence -----------------------------------------------------------------

_DS_KILLS = (
    "[2025-01-02 03:04:05,100] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 4101\n"
    "[2025-01-02 03:04:05,200] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 4102\n"
)


def test_deepspeed_launcher_line_names_its_rank_as_weak_evidence_and_says_what_confirms_it():
    text = _DS_KILLS + (
        "[2025-01-02 03:04:05,300] [ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python', "
        "'-u', 'finetune.py', '--local_rank=2', '--deepspeed', 'ds.json'] exits with return "
        "code = -11\n"
    )
    result = _diagnose(text)

    assert slug(result) == "elastic-child-failed"
    assert result.initiating_rank == 2
    assert "weak evidence" in (result.root_cause or "")
    # launch.py prints its last worker's command line: the reader is told
    assert "last worker it started" in (result.root_cause or "")
    assert any("rank 2" in fact for fact in result.missing_facts)


def test_deepspeed_launcher_line_wrapped_by_a_paste_keeps_rank_and_code():
    text = _DS_KILLS + (
        "[2025-01-02 03:04:05,300] [ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python', "
        "'-u', 'finetune.py', '--local_rank=3', '--deepspeed', 'ds.json', '--lr', '2e-5',\n"
        "'--epochs', '3'] exits with return code = -9\n"
    )
    result = _diagnose(text)

    assert slug(result) == "host-oom-killed"
    assert result.initiating_rank == 3
    assert any("launcher's report alone" in fact for fact in result.missing_facts)


def test_deepspeed_launcher_line_of_a_node_whose_place_is_stated_gives_the_global_rank():
    text = (
        "node-b: [INFO] [launch.py:163:main] nnodes=2, num_local_procs=4, node_rank=1\n"
        "node-b: [ERROR] [launch.py:321:sigkill_handler] ['python', '-u', 'finetune.py', "
        "'--local_rank=2'] exits with return code = 1\n"
    )
    assert _diagnose(text).initiating_rank == 6


def test_a_launcher_only_rank_lowers_the_confidence():
    line = (
        "[2025-01-02 03:04:05,300] [ERROR] [launch.py:321:sigkill_handler] ['python', '-u', "
        "'finetune.py', '--local_rank=1'] exits with return code = 1\n"
    )
    named = _diagnose(_DS_KILLS + line)
    unnamed = _diagnose(_DS_KILLS + line.replace("'--local_rank=1'", "'--seed=1'"))

    assert named.initiating_rank == 1
    assert unnamed.initiating_rank is None
    assert named.failure is not None
    assert unnamed.failure is not None
    assert named.failure.confidence <= unnamed.failure.confidence


def test_root_cause_block_without_the_child_failed_line_names_its_rank():
    # the paste starts inside torchrun's summary: no ChildFailedError line above it
    text = (
        "  <NO_OTHER_FAILURES>\n"
        "-----------------------------------------\n"
        "Root Cause (first observed failure):\n"
        "[0]:\n"
        "  time      : 2025-03-04_05:06:07\n"
        "  host      : node-a\n"
        "  rank      : 2 (local_rank: 2)\n"
        "  exitcode  : -6 (pid: 31337)\n"
        "  error_file: <N/A>\n"
        "  traceback : Signal 6 (SIGABRT) received by PID 31337\n"
        "=========================================\n"
    )
    result = _diagnose(text)

    assert slug(result) == "elastic-child-failed"
    assert result.initiating_rank == 2


def test_mpirun_report_whose_blank_node_name_masking_took_for_a_host():
    # "on node  exited on signal" with the node's name removed: masking reads "exited" as a host
    text = "mpirun noticed that process rank 3 with PID 0 on node <HOST_1> on signal 11 (Segmentation fault).\n"
    result = _diagnose(text)

    assert slug(result) == "elastic-child-failed"
    assert result.initiating_rank == 3


def test_nccl_info_trees_line_gives_the_rank_of_its_pid():
    text = (
        "gpu7:5001:5100 [0] NCCL INFO Trees [0] 1/-1/-1->0->-1 [1] 1/-1/-1->0->-1\n"
        "gpu7:5002:5101 [1] NCCL INFO Trees [0] -1/-1/-1->1->0 [1] -1/-1/-1->1->0\n"
        "gpu7:5001:5100 [0] NCCL INFO Channel 00 : 0[1000] -> 1[2000] via P2P/IPC\n"
        "gpu7:5002:5101 [1] include/socket.h:403 NCCL WARN Connect to 10.0.0.9<41234> failed : "
        "Network is unreachable\n"
    )
    result = _diagnose(text)

    assert slug(result) == "nccl-system-error"
    assert result.initiating_rank == 1


def test_nccl_init_summary_line_gives_the_rank_of_its_pid():
    text = (
        "gpu7:6001:6001 [0] NCCL INFO comm 0x55d0 rank 0 nRanks 2 nNodes 1 localRanks 2 "
        "localRank 0 MNNVL 0\n"
        "gpu7:6002:6002 [1] NCCL INFO comm 0x55e0 rank 1 nRanks 2 nNodes 1 localRanks 2 "
        "localRank 1 MNNVL 0\n"
        "gpu7:6001:6001 [0] include/socket.h:403 NCCL WARN Connect to 10.0.0.9<41234> failed : "
        "No route to host\n"
    )
    result = _diagnose(text)

    assert slug(result) == "nccl-system-error"
    assert result.initiating_rank == 0


def test_nccl_device_index_alone_still_names_no_rank():
    text = (
        "gpu7:5002:5101 [1] include/socket.h:403 NCCL WARN Connect to 10.0.0.9<41234> failed : "
        "Network is unreachable\n"
    )
    result = _diagnose(text)

    assert slug(result) == "nccl-system-error"
    assert result.initiating_rank is None


# --- wordings -----------------------------------------------------------------------------------


def test_store_client_timing_out_on_the_master_address_is_a_rendezvous_timeout():
    text = (
        "[W socket.cpp:663] [c10d] The client socket has failed to connect to "
        "[10.1.2.3]:29500 (errno: 110 - Connection timed out).\n"
    )
    assert slug(_diagnose(text)) == "rendezvous-timeout"


def test_cudnn_alloc_failed_is_an_out_of_memory_not_a_cudnn_bug():
    oom = (
        '  File "net.py", line 40, in backward\n'
        "    loss.backward()\n"
        "RuntimeError: CUDNN_STATUS_ALLOC_FAILED\n"
    )
    other = oom.replace("ALLOC_FAILED", "INTERNAL_ERROR")

    assert slug(_diagnose(oom)) == "activation-oom"
    assert slug(_diagnose(other)) == "cudnn-error"


def test_dataloader_bus_error_wrapped_by_the_terminal():
    text = (
        "RuntimeError: DataLoader worker (pid 12) is killed by signal: Bus\n"
        "error. It is possible that dataloader's workers are out of shared\n"
        "memory. Please try to raise your shared memory limit.\n"
    )
    assert slug(_diagnose(text)) == "dataloader-shm"


def test_huge_grad_norm_logged_before_a_huge_finite_loss_is_divergence():
    text = "".join(
        f"Step {s}: grad_norm=91234.5, loss=8812345.0, lr=0.0003\n" for s in (100, 200, 300)
    )
    assert slug(_diagnose(text)) == "loss-divergence"


# --- the numbers of older OOM messages ------------------------------------------------------------

_OOM_14 = (
    "RuntimeError: CUDA out of memory. Tried to allocate {req} (GPU 0; 15.90 GiB total capacity; "
    "{alloc} already allocated; 20.00 MiB free; {res} reserved in total by PyTorch)\n"
)


def test_pytorch_1x_reserve_half_again_the_allocation_serving_the_request_is_fragmentation():
    text = _OOM_14.format(req="2.00 GiB", alloc="8.00 GiB", res="13.00 GiB")
    assert slug(_diagnose(text)) == "allocator-fragmentation"


def test_pytorch_1x_reserve_a_fifth_above_the_allocation_is_a_full_card():
    text = _OOM_14.format(req="1.50 GiB", alloc="20.00 GiB", res="24.50 GiB")
    assert slug(_diagnose(text)) == "activation-oom"


def test_pytorch_1_0_cached_figure_above_the_request_is_fragmentation():
    # 1.0-1.3 print the cache's unallocated part as "N cached"
    text = (
        "RuntimeError: CUDA out of memory. Tried to allocate 200.00 MiB (GPU 0; 7.90 GiB total "
        "capacity; 6.00 GiB already allocated; 40.00 MiB free; 500.00 MiB cached)\n"
    )
    small = text.replace("500.00 MiB cached", "100.00 MiB cached")

    assert slug(_diagnose(text)) == "allocator-fragmentation"
    assert slug(_diagnose(small)) == "activation-oom"


def test_numeric_condition_on_a_difference():
    condition = parse_numeric("reserved - allocated > requested")

    assert condition.holds({"reserved": "13 GiB", "allocated": "8 GiB", "requested": "2 GiB"})
    assert not condition.holds({"reserved": "9 GiB", "allocated": "8 GiB", "requested": "2 GiB"})
    assert not condition.holds({"reserved": "9 GiB", "requested": "2 GiB"})


# --- where the OOM was raised ---------------------------------------------------------------------


def test_oom_glued_to_the_optimizer_step_line_is_optimizer_state():
    # two ranks' output interleaved: the code line of the frame and the message on one line
    text = (
        "torch.cuda.OutOfMemoryError    : self.optimizer.step()CUDA out of memory. Tried to "
        "allocate 4.00 GiB. GPU 2 has a total capacity of 39.00 GiB of which 500.00 MiB is free.\n"
    )
    assert slug(_diagnose(text)) == "optimizer-state-oom"


def test_oom_in_forward_under_an_optimizer_closure_stays_activation():
    text = (
        "Traceback (most recent call last):\n"
        '  File "loop.py", line 10, in run\n'
        "    optimizer.step(closure=closure)\n"
        '  File "model.py", line 22, in forward\n'
        "    h = self.attn(x)\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
    )
    assert slug(_diagnose(text)) == "activation-oom"


def test_oom_while_a_trainer_is_constructed_is_setup():
    # the message printed before its traceback, which stops in the trainer's constructor
    text = (
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 136.00 MiB. GPU 0 "
        "has a total capacity of 23.65 GiB of which 90.00 MiB is free.\n"
        "Traceback (most recent call last):\n"
        '  File "run.py", line 5, in main\n'
        "    trainer = RewardTrainer(model=model, args=args)\n"
        '  File "/src/rm/trainer.py", line 23, in __init__\n'
        "    super().__init__(*args, **kwargs)\n"
    )
    assert slug(_diagnose(text)) == "setup-oom"


def test_oom_listing_two_more_processes_holding_gib_is_ranks_sharing_a_gpu():
    text = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 30.00 MiB. GPU 0 has a "
        "total capacity of 79.00 GiB of which 6.00 MiB is free. Process 2001 has 20.00 GiB "
        "memory in use. Process 2002 has 30.00 GiB memory in use. Including non-PyTorch memory, "
        "this process has 28.00 GiB memory in use.\n"
    )
    contexts = text.replace("20.00 GiB memory", "400.00 MiB memory")

    result = _diagnose(text)
    assert slug(result) == "nccl-duplicate-gpu"
    # the root cause speaks of ranks sharing a card, not only of NCCL's refusal
    assert (result.root_cause or "").startswith("Several ranks of the job use the same")
    assert slug(_diagnose(contexts)) != "nccl-duplicate-gpu"


# --- the sentence the root cause quotes -----------------------------------------------------------


@pytest.mark.parametrize("abbreviation", ["e.g.", "i.e."])
def test_first_sentence_does_not_end_at_an_abbreviation(abbreviation: str):
    text = (
        f"The loss leaves its normal range ({abbreviation} from 2.3 to 40) and stays there. More."
    )

    assert _first_sentence(text).endswith("stays there.")


# --- timeouts in collectives of different sizes -------------------------------------------------


def _watchdog(rank: int, numel: int, seq: int = 812) -> str:
    return (
        f"[rank{rank}]:[E ProcessGroupNCCL.cpp:563] [Rank {rank}] Watchdog caught collective "
        f"operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn={numel}, "
        f"NumelOut={numel}, Timeout(ms)=600000) ran for 600031 milliseconds before timing out.\n"
    )


def test_of_two_ranks_the_one_in_a_one_element_collective_left_the_training_loop():
    result = _diagnose(_watchdog(0, 2359296) + _watchdog(1, 1))

    assert slug(result) == "nccl-timeout"
    assert result.initiating_rank == 1
    assert "one-element" in (result.root_cause or "")


def test_of_several_ranks_the_one_in_a_collective_of_another_size_is_named():
    result = _diagnose(
        _watchdog(0, 4096) + _watchdog(1, 4096) + _watchdog(2, 77) + _watchdog(3, 4096)
    )

    assert result.initiating_rank == 2


def test_two_ranks_in_collectives_of_two_large_sizes_name_no_rank():
    assert _diagnose(_watchdog(0, 4096) + _watchdog(1, 8192)).initiating_rank is None


# --- a paste cut inside the traceback ---------------------------------------------------------

_EVAL_FRAMES = (
    '  File "run_qa.py", line 700, in main\n'
    "    metrics = trainer.evaluate(max_length=64)\n"
    '  File "/site-packages/transformers/trainer.py", line 2515, in evaluation_loop\n'
    "    preds_host = logits if preds_host is None else nested_concat(preds_host, logits)\n"
    '  File "/site-packages/transformers/trainer_pt_utils.py", line 97, in nested_concat\n'
    "    return torch_pad_and_concatenate(tensors, new_tensors, padding_index=padding_index)\n"
)


def test_traceback_cut_in_the_concatenation_of_eval_predictions_is_eval_memory_growth():
    result = _diagnose(_EVAL_FRAMES)

    assert slug(result) == "eval-memory-growth"
    assert any("stops inside a traceback" in fact for fact in result.missing_facts)


def test_the_same_frames_ending_in_another_exception_are_that_exception():
    result = _diagnose(
        _EVAL_FRAMES + "RuntimeError: Sizes of tensors must match except in dimension 0\n"
    )
    assert slug(result) != "eval-memory-growth"


def test_traceback_cut_in_the_grad_scaler_unscale_is_the_fp16_parameters_error():
    text = (
        "Steps:   0%|          | 0/15000 [00:03<?, ?it/s, lr=0.0001, step_loss=0.126]\n"
        "Traceback (most recent call last):\n"
        '  File "train_lora.py", line 798, in main\n'
        "    accelerator.clip_grad_norm_(params_to_clip, 1.0)\n"
        '  File "/site-packages/accelerate/accelerator.py", line 2040, in clip_grad_norm_\n'
        "    self.unscale_gradients()\n"
        '  File "/site-packages/accelerate/accelerator.py", line 2003, in unscale_gradients\n'
        "    self.scaler.unscale_(opt)\n"
    )
    assert slug(_diagnose(text)) == "amp-fp16-params-unscale"
    ended = (
        text
        + "RuntimeError: unscale_() has already been called on this optimizer since the last update().\n"
    )
    assert slug(_diagnose(ended)) != "amp-fp16-params-unscale"
