"""Class kinds learned from issue 32's open-corpus misses, one test each, on excerpts written in
the wording real threads show (not the corpus logs: they stay in ../shared). Kept inline rather
than in tests/logs: every line there is a carrier of the generated masking corpus
(bench/masking_corpus/generate.py), which each new file reshuffles.
"""

from rootcause.confidence import LIKELY
from rootcause.engine import get_engine
from rootcause.result import DiagnosisResult


def diagnose(text: str) -> DiagnosisResult:
    return get_engine().diagnose([text])


def slug(result: DiagnosisResult) -> str | None:
    return result.failure.slug if result.failure else None


# pytorch/pytorch#1846's kind: PyTorch 0.x's THCudaCheck line, then the traceback of a sampling
# call the training script makes between steps
SAMPLE_OOM = (
    "iter 15800 | kld 2.314 | rec 41.02 | lr 0.0005\n"
    "iter 15900 | kld 2.298 | rec 40.87 | lr 0.0005\n"
    "THCudaCheck FAIL file=/pytorch/torch/lib/THC/generic/THCStorage.cu line=66 error=2 : out of memory\n"
    "Traceback (most recent call last):\n"
    '  File "train_vae.py", line 131, in <module>\n'
    "    print(model.sample(loader, seq_len=50, use_cuda=True))\n"
    '  File "/home/user/textvae/model/rvae.py", line 142, in sample\n'
    "    logits, state = self(None, decoder_input, z, state)\n"
    '  File "/usr/lib/python3.6/site-packages/torch/nn/modules/module.py", line 224, in __call__\n'
    "    result = self.forward(*input, **kwargs)\n"
    '  File "/home/user/textvae/model/rvae.py", line 77, in forward\n'
    "    out, final_state = self.decoder(decoder_input, z, initial_state)\n"
    "RuntimeError: cuda runtime error (2) : out of memory at /pytorch/torch/lib/THC/generic/THCStorage.cu:66\n"
)


def test_an_oom_inside_a_sampling_call_between_training_steps_is_memory_growth():
    assert slug(diagnose(SAMPLE_OOM)) == "eval-memory-growth"
    # the same OOM in the forward pass of a training step stays activation-oom
    training = SAMPLE_OOM.replace("in sample", "in train_step").replace("model.sample(", "model(")
    assert slug(diagnose(training)) == "activation-oom"


# BVLC/caffe#6425's kind: Caffe's CUDA_CHECK right after the solver's first update line
CAFFE_FIRST_UPDATE = (
    "I0302 09:14:51.220413 17211 solver.cpp:60] Solver scaffolding done.\n"
    "I0302 09:14:51.231774 17211 caffe.cpp:252] Starting Optimization\n"
    "I0302 09:14:51.231787 17211 solver.cpp:279] Solving segnet\n"
    "I0302 09:14:51.231791 17211 solver.cpp:280] Learning Rate Policy: fixed\n"
    "I0302 09:14:52.907310 17211 solver.cpp:228] Iteration 0, loss = 4.81217\n"
    "I0302 09:14:52.907356 17211 solver.cpp:244]     Train net output #0: loss = 4.81217 (* 1 = 4.81217 loss)\n"
    "I0302 09:14:52.907371 17211 sgd_solver.cpp:106] Iteration 0, lr = 0.001\n"
    "F0302 09:14:52.941208 17211 syncedmem.cpp:56] Check failed: error == cudaSuccess (2 vs. 0)  out of memory\n"
    "*** Check failure stack trace: ***\n"
    "    @     0x7f1b8f1c5daa  (unknown)\n"
    "    @     0x7f1b8f1c5ce4  (unknown)\n"
    "    @     0x7f1b8f88d5ab  caffe::SyncedMemory::to_gpu()\n"
    "    @     0x7f1b8f88c5f9  caffe::SyncedMemory::mutable_gpu_data()\n"
    "    @     0x7f1b8f8f0a82  caffe::AdamSolver<>::ComputeUpdateValue()\n"
)
CAFFE_LATER = (
    "I0302 10:02:11.554120 18012 solver.cpp:228] Iteration 2400, loss = 0.912\n"
    "I0302 10:02:11.554161 18012 sgd_solver.cpp:106] Iteration 2400, lr = 0.001\n"
    "I0302 10:02:14.130772 18012 net.cpp:91] Creating Layer conv5_3_D\n"
    "F0302 10:02:14.201334 18012 syncedmem.cpp:56] Check failed: error == cudaSuccess (2 vs. 0)  out of memory\n"
    "*** Check failure stack trace: ***\n"
    "    @     0x7f1b8f88d5ab  caffe::SyncedMemory::to_gpu()\n"
    "    @     0x7f1b8f9a1c20  caffe::CuDNNConvolutionLayer<>::Forward_gpu()\n"
)


def test_caffes_oom_right_after_the_first_solver_update_is_the_optimizer_state():
    assert slug(diagnose(CAFFE_FIRST_UPDATE)) == "optimizer-state-oom"


def test_caffes_oom_at_a_later_iteration_is_activation_memory():
    assert slug(diagnose(CAFFE_LATER)) == "activation-oom"


# karpathy/llm.c#309's kind: an allocation report with the size before "optimizer state"
ALLOCATION_REPORT = (
    "+-----------------------+----------------------------------------------------+\n"
    "| model                 | gpt2-medium (d24)                                  |\n"
    "| num_processes         | 1                                                  |\n"
    "| zero_stage            | 0                                                  |\n"
    "+-----------------------+----------------------------------------------------+\n"
    "num_parameters: 354823168 ==> bytes: 709646336\n"
    "allocated 676 MiB for model parameters\n"
    "allocated 5208 MiB for activations\n"
    "val loss 3.121807\n"
    "allocated 676 MiB for parameter gradients\n"
    "allocated 1353 MiB for AdamW optimizer state m\n"
    "allocated 1353 MiB for AdamW optimizer state v\n"
    "step    1/5000 | train loss 3.118840 | norm 2.0615 | lr 3.00e-06 | 412.31 ms\n"
)


def test_an_allocation_report_with_the_size_before_the_optimizer_state_is_read():
    assert slug(diagnose(ALLOCATION_REPORT)) == "optimizer-state-memory"
    without = "".join(
        line for line in ALLOCATION_REPORT.splitlines(keepends=True) if "optimizer" not in line
    )
    assert slug(diagnose(without)) is None


# Peterande/D-FINE#75's kind: a gloo group's send/recv timeouts, then the NCCL watchdog of the
# same stall
GLOO_THEN_NCCL = (
    "Epoch: [41]  [ 900/1250]  eta: 0:03:12  lr: 0.000125  loss: 21.3318  time: 0.5470  data: 0.0112  max mem: 17210\n"
    "Traceback (most recent call last):\n"
    '  File "/workspace/det/train.py", line 84, in <module>\n'
    "    main(args)\n"
    '  File "/workspace/det/engine/solver/det_solver.py", line 71, in fit\n'
    "    test_stats, coco_evaluator = evaluate(module, self.criterion, self.postprocessor, self.val_dataloader, self.evaluator, self.device)\n"
    '  File "/workspace/det/engine/misc/dist_utils.py", line 212, in all_gather\n'
    "    dist.all_gather_object(data_list, data, group=cpu_group)\n"
    '  File "/usr/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py", line 2456, in all_gather_object\n'
    "    work.wait()\n"
    "RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 1800000ms for recv operation to complete\n"
    "RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:133] Timed out waiting 1800000ms for send operation to complete\n"
    "[rank0]:[E1203 04:10:51.612877035 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=812233, OpType=ALLREDUCE, NumelIn=6, NumelOut=6, Timeout(ms)=1800000) ran for 1800091 milliseconds before timing out.\n"
    "[rank0]:[E1203 04:10:51.615003127 ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) Rank 0] Exception (either an error or timeout) detected by watchdog at work: 812233, last enqueued NCCL work: 812233, last completed NCCL work: 812232.\n"
    "W1203 04:10:52.001000 913 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 988 closing signal SIGTERM\n"
)


def test_the_group_that_timed_out_first_names_the_class_either_way():
    assert slug(diagnose(GLOO_THEN_NCCL)) == "gloo-timeout"
    # the same two kinds of line the other way round: nccl-timeout, the scores unchanged
    lines = GLOO_THEN_NCCL.splitlines(keepends=True)
    gloo = [line for line in lines if "Timed out waiting" in line]
    nccl = [line for line in lines if "Watchdog caught" in line]
    assert slug(diagnose("".join(gloo + nccl))) == "gloo-timeout"
    assert slug(diagnose("".join(nccl + gloo))) == "nccl-timeout"


# huggingface/accelerate#3735's kind: a paste cut inside the broadcast of the parameters while
# the model is wrapped (DDP's module-state sync here, DeepSpeed's _broadcast_model there)
WRAP_CUT = (
    "[rank1]: Traceback (most recent call last):\n"
    '[rank1]:   File "/home/user/proj/train_ddp.py", line 142, in <module>\n'
    "[rank1]:     main()\n"
    '[rank1]:   File "/home/user/proj/train_ddp.py", line 97, in main\n'
    "[rank1]:     model = DDP(model, device_ids=[local_rank])\n"
    "[rank1]:             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
    '[rank1]:   File "/usr/lib/python3.11/site-packages/torch/nn/parallel/distributed.py", line 835, in __init__\n'
    "[rank1]:     _sync_module_states(\n"
    '[rank1]:   File "/usr/lib/python3.11/site-packages/torch/distributed/utils.py", line 318, in _sync_module_states\n'
    "[rank1]:     _sync_params_and_buffers(process_group, module_states, broadcast_bucket_size, src)\n"
    '[rank1]:   File "/usr/lib/python3.11/site-packages/torch/distributed/utils.py", line 329, in _sync_params_and_buffers\n'
    "[rank1]:     dist._broadcast_coalesced(\n"
)


def test_a_paste_cut_in_the_wrapping_broadcast_is_a_setup_oom_lead_and_its_end_decides():
    lead = diagnose(WRAP_CUT)
    assert slug(lead) == "setup-oom"
    assert any("stops inside a traceback" in fact for fact in lead.missing_facts)
    decides = [f for f in lead.missing_facts if f.startswith("what would decide it")]
    assert "nccl-system-error" in decides[0]
    assert lead.failure is not None
    if lead.failure.confidence < LIKELY:
        assert "nccl-system-error" in str(lead.failure.confidence_words)

    # with the exception line the paste left out, that line decides
    whole = WRAP_CUT + (
        "[rank1]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/"
        "c10d/ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for "
        "details), NCCL version 2.20.5\n[rank1]: ncclSystemError: System call (e.g. socket, "
        "malloc) or external library call failed or device error.\n"
    )
    assert slug(diagnose(whole)) == "nccl-system-error"
