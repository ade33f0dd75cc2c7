"""The classes added to the taxonomy on 2026-12-01, and the neighbours they must not take over.

The whole logs live in tests/logs/<slug>/ (run-produced where the CPU can produce the failure,
excerpts of public threads otherwise, each named in its .expect.json) and are checked by
test_catalogue_logs.py. Here: the single decisive lines as public threads word them, across
versions, and the lines of neighbouring classes that look alike but must keep their class.
"""

from __future__ import annotations

import pytest

from rootcause.engine import get_engine


def diagnosed(text: str) -> str | None:
    result = get_engine().diagnose([text if text.endswith("\n") else text + "\n"])
    return result.failure.slug if result.failure else None


# A traceback's head for the excerpts that start at their exception.
TRACE = 'Traceback (most recent call last):\n  File "train.py", line 212, in <module>\n    main()\n'

# (thread, text, class): wordings posted in public threads.
WORDINGS = [
    # NCCL's check, wrapped by PyTorch 2.x; older NCCL only says "invalid usage"
    (
        "https://github.com/verl-project/verl/issues/161",
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
        "NCCLUtils.hpp:275, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version "
        "2.20.5\nncclInvalidUsage: This usually reflects invalid usage of NCCL library.\n"
        "Last error:\nDuplicate GPU detected : rank 1 and rank 0 both on CUDA device 10",
        "nccl-duplicate-gpu",
    ),
    (
        "https://github.com/NVIDIA-NeMo/RL/issues/3155",
        "(MegatronPolicyWorker pid=1391870) [2026-07-10 06:19:36] pool0-00008:1391870:1393239 [7]"
        " init.cc:904 NCCL WARN Duplicate GPU detected : rank 15 and rank 7 both on CUDA device "
        "e4000",
        "nccl-duplicate-gpu",
    ),
    # GradScaler in torch.cuda.amp (before 2.3) and torch.amp
    (
        "https://github.com/mark1879/Baichuan-13B-Finetuning/issues/21",
        'File "/root/miniconda3/lib/python3.8/site-packages/torch/cuda/amp/grad_scaler.py", '
        'line 212, in _unscale_grads_\n    raise ValueError("Attempting to unscale FP16 '
        'gradients.")\nValueError: Attempting to unscale FP16 gradients.\n'
        "  0%|          | 0/6931 [00:01<?, ?it/s]",
        "amp-fp16-params-unscale",
    ),
    # PyTorch 1.x: most of a 10.76 GiB card used, PyTorch reserved 2.75 GiB of it
    (
        "https://github.com/junyanz/pytorch-CycleGAN-and-pix2pix/issues/962",
        "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 10.76 GiB total "
        "capacity; 2.42 GiB already allocated; 26.12 MiB free; 2.75 GiB reserved in total by "
        "PyTorch).",
        "gpu-memory-held-elsewhere",
    ),
    (
        "https://github.com/cwpearson/stencil/issues/11",
        "/ccs/home/merth/pearson/stencil/include/stencil/local_domain.cuh@54: CUDA Runtime "
        "Error(46): all CUDA-capable devices are busy or unavailable",
        "gpu-memory-held-elsewhere",
    ),
    # a shell's report of SIGBUS, and torchrun's summary of it: no traceback at all
    (
        "https://github.com/facebookresearch/PyTorch-BigGraph/issues/33",
        "2019-04-16 11:58:14  Creating workers...\n2019-04-16 11:58:14  Initializing global "
        "model...\nBus error (core dumped)",
        "dataloader-shm",
    ),
    # Topdu/OpenOCR#71's bare torchrun summary of two ranks killed by SIGBUS is the launcher's
    # summary with dataloader-shm's checks since issue 32 (nothing in it shows shared memory in
    # use): tests/rootcause/test_sigbus.py
    # quotas and I/O errors while saving
    (
        "https://github.com/keras-team/keras-tuner/issues/390",
        "tensorflow.python.framework.errors_impl.ResourceExhaustedError: disk quota exceeded "
        "[Op:SaveV2]",
        "disk-full",
    ),
    (
        "https://github.com/tloen/alpaca-lora/issues/280",
        "OSError: [Errno 122] Disk quota exceeded",
        "disk-full",
    ),
    (
        "https://github.com/pytorch/pytorch/issues/48580",
        "    torch.save(net.state_dict(), os.path.join(save_dir, 'params.pth'))\n"
        '  File "/anaconda/envs/bone_mets/lib/python3.7/site-packages/torch/serialization.py", '
        "line 328, in save\n    _legacy_save(obj, opened_file, pickle_module, pickle_protocol)\n"
        '  File "/anaconda/envs/bone_mets/lib/python3.7/site-packages/torch/serialization.py", '
        "line 196, in __exit__\n    self.file_like.close()\nOSError: [Errno 5] Input/output error",
        "disk-full",
    ),
    # issue 32's wordings not yet known: the same failures as other stacks and drivers word
    # them (tests/rootcause/test_issue32_wordings.py has the leads and look-alikes)
    # --- memory, as TensorFlow, ROCm and cuDNN say it
    # issue 32: tensorflow/tensorflow#17669, zzw922cn/Automatic_Speech_Recognition#78
    (
        "https://github.com/tensorflow/tensorflow/issues/17669",
        "2018-06-08 17:26:00.908130: W tensorflow/core/framework/op_kernel.cc:1202] OP_REQUIRES "
        "failed at tile_ops.cc:123 : Resource exhausted: OOM when allocating tensor with "
        "shape[16,1,40960,8] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by "
        "allocator GPU_0_bfc\n" + TRACE + "tensorflow.python.framework.errors_impl."
        "ResourceExhaustedError: OOM when allocating tensor with shape[16,1,40960,8] and type "
        "float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc\n",
        "activation-oom",
    ),
    # issue 32: huggingface/autotrain-advanced#737
    (
        "https://github.com/huggingface/autotrain-advanced/issues/737",
        '  File "/opt/venv/lib/python3.11/site-packages/torch/nn/modules/conv.py", line 549, in '
        "_conv_forward\n    return F.conv2d(\ntorch.OutOfMemoryError: HIP out of memory. Tried to "
        "allocate 2.25 GiB. GPU 0 has a total capacity of 15.98 GiB of which 1.10 GiB is free. "
        "Of the allocated memory 13.02 GiB is allocated by PyTorch, and 152.50 MiB is reserved "
        "by PyTorch but unallocated.\n",
        "activation-oom",
    ),
    # issue 32: tensorflow/tensorflow#24828, #38929 (cuDNN failing to create its handle)
    (
        "https://github.com/tensorflow/tensorflow/issues/24828",
        TRACE + "tensorflow.python.framework.errors_impl.UnknownError:  Failed to get "
        "convolution algorithm. This is probably because cuDNN failed to initialize, so try "
        "looking to see if a warning log message was printed above.\n",
        "cudnn-error",
    ),
    # --- a full disk seen only as a file the writer cannot open
    # (torch.save's `File … cannot be opened`, a disk-full lead: test_issue32_wordings.py)
    # --- weights that do not fit the model, as Keras and TensorFlow word it
    # issue 32: xiph/LPCNet#39
    (
        "https://github.com/xiph/LPCNet/issues/39",
        TRACE + '  File "/usr/local/lib/python3.6/site-packages/keras/engine/saving.py", line '
        "1030, in load_weights_from_hdf5_group\n    str(len(filtered_layers)) + ' layers.')\n"
        "ValueError: You are trying to load a weight file containing 10 layers into a model with "
        "9 layers.\n",
        "state-dict-mismatch",
    ),
    # issue 32: xuannianz/EfficientDet#152
    (
        "https://github.com/xuannianz/EfficientDet/issues/152",
        TRACE + 'ValueError: Layer #232 (named "fpn_cells/cell_0/fnode0/add") expects 0 '
        "weight(s), but the saved weights have 1 element(s).\n",
        "state-dict-mismatch",
    ),
    # issue 32: titu1994/Wide-Residual-Networks#11
    (
        "https://github.com/titu1994/Wide-Residual-Networks/issues/11",
        TRACE + 'ValueError: Layer #0 (named "conv2d_1" in the current model) was found to '
        "correspond to layer convolution2d_1 in the save file. However the new layer conv2d_1 "
        "expects 1 weights, but the saved weights have 2 elements.\n",
        "state-dict-mismatch",
    ),
    # issue 32: VisualComputingInstitute/SiamR-CNN#6, tensorflow/models#3391
    (
        "https://github.com/VisualComputingInstitute/SiamR-CNN/issues/6",
        "INFO:tensorflow:Restoring parameters from out/model.ckpt-1000\n"
        + TRACE
        + "tensorflow.python.framework.errors_impl.InvalidArgumentError: Restoring from "
        "checkpoint failed. This is most likely due to a mismatch between the current graph and "
        "the graph from the checkpoint. Please ensure that you have not altered the graph "
        "expected based on the checkpoint. Original error:\n"
        "Assign requires shapes of both tensors to match. lhs shape= [2048,21] rhs shape= "
        "[2048,81]\n",
        "state-dict-mismatch",
    ),
    # issue 32: huggingface/transformers#20327, asahi417/tner#37
    (
        "https://github.com/huggingface/transformers/issues/20327",
        TRACE + "RuntimeError: Error(s) in loading state_dict for BertForSequenceClassification:"
        "\n\tsize mismatch for classifier.weight: copying a param with shape torch.Size([3, 768]) "
        "from checkpoint, the shape in current model is torch.Size([2, 768]).\n\tYou may consider "
        "adding `ignore_mismatched_sizes=True` in the model `from_pretrained` method.\n",
        "state-dict-mismatch",
    ),
    # --- non-finite values as TensorFlow stops on them
    # issue 32: tensorflow/models#9986, mozilla/DeepSpeech#1755
    (
        "https://github.com/tensorflow/models/issues/9986",
        "306/313 [============================>.] - ETA: 0s - loss: 2.3011\n"
        + TRACE
        + "tensorflow.python.framework.errors_impl.InvalidArgumentError: Nan in summary "
        "histogram for: conv2d/kernel_0 [Op:WriteHistogramSummary]\n",
        "nan-loss",
    ),
    # --- no device, as ROCm and older PyTorch say it
    # issue 32: ROCm/hip#3799, lllyasviel/Fooocus#1079 (a ROCm build of PyTorch)
    (
        "https://github.com/ROCm/hip/issues/3799",
        TRACE
        + '  File "/opt/venv/lib/python3.10/site-packages/torch/cuda/__init__.py", line 383, in '
        "_lazy_init\n    torch._C._cuda_init()\nRuntimeError: No HIP GPUs are available\n",
        "cuda-not-available",
    ),
    # issue 32: MasterBin-IIAU/CSA#5
    (
        "https://github.com/MasterBin-IIAU/CSA/issues/5",
        "THCudaCheck FAIL file=/pytorch/torch/csrc/cuda/Module.cpp line=34 error=38 : no "
        "CUDA-capable device is detected\n" + TRACE + "RuntimeError: cuda runtime error (38) : "
        "no CUDA-capable device is detected at /pytorch/torch/csrc/cuda/Module.cpp:34\n",
        "cuda-not-available",
    ),
    # issue 32: etched-ai/open-oasis#27, pytorch/pytorch#164346 (a GPU ROCm's build has no code for)
    (
        "https://github.com/etched-ai/open-oasis/issues/27",
        TRACE + "RuntimeError: HIP error: invalid device function\nHIP kernel errors might be "
        "asynchronously reported at some other API call, so the stacktrace below might be "
        "incorrect.\nFor debugging consider passing AMD_SERIALIZE_KERNEL=3\n",
        "no-kernel-image",
    ),
    # --- rendezvous in torch 2.x's wordings
    # issue 32: pytorch/pytorch#105782
    (
        "https://github.com/pytorch/pytorch/issues/105782",
        "[E108 20:04:34.467642512 socket.cpp:957] [c10d] The client socket has timed out after "
        "900s while trying to connect to (10.1.2.3, 29500).\n",
        "rendezvous-timeout",
    ),
    # issue 32: vllm-project/vllm#19670, nvidia-cosmos/cosmos-rl#681
    (
        "https://github.com/vllm-project/vllm/issues/19670",
        TRACE + '  File "/opt/venv/lib/python3.10/site-packages/torch/distributed/elastic/'
        'rendezvous/dynamic_rendezvous.py", line 1126, in _create_tcp_store_server\n'
        "    return dist.TCPStore(\ntorch.distributed.DistNetworkError: The client socket has "
        "timed out after 300000ms while trying to connect to (node-7, 41331).\n",
        "rendezvous-timeout",
    ),
]


@pytest.mark.parametrize(
    ("thread", "text", "slug"), WORDINGS, ids=[w[0].split("github.com/")[1] for w in WORDINGS]
)
def test_thread_wording_is_its_class(thread: str, text: str, slug: str) -> None:
    assert diagnosed(text) == slug, thread


OWN_MEMORY_CLASSES = {"activation-oom", "allocator-fragmentation", "optimizer-state-oom"}
OWN_MEMORY_CLASSES |= {"eval-memory-growth"}

# OOM messages from public threads where this process's PyTorch holds most of the card: the
# memory is not held elsewhere, whatever else the message lists (other small processes, the
# process itself listed by pid inside a container, the CUDA context).
OWN_MEMORY_OOMS = [
    (
        "https://github.com/awslabs/keys_values/issues/92",
        "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 572.00 MiB. GPU 0 "
        "has a total capacity of 39.49 GiB of which 321.31 MiB is free. Process 3721648 has 414.00"
        " MiB memory in use. Including non-PyTorch memory, this process has 37.46 GiB memory in "
        "use. Process 1374765 has 414.00 MiB memory in use. Process 1374763 has 414.00 MiB memory"
        " in use. Process 1374764 has 414.00 MiB memory in use. Of the allocated memory 36.04 GiB"
        " is allocated by PyTorch, and 321.37 MiB is reserved by PyTorch but unallocated. If "
        "reserved but unallocated memory is large try setting PYTORCH_ALLOC_CONF=expandable_"
        "segments:True to avoid fragmentation.  See documentation for Memory Management  "
        "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
    ),
    (
        "https://github.com/FoundationVision/GenerateU/issues/10",
        'File "/opt/conda/lib/python3.10/site-packages/torch/nn/modules/linear.py", line 114, in'
        " forward\n    return F.linear(input, self.weight, self.bias)\ntorch.cuda.OutOfMemoryError"
        ": CUDA out of memory. Tried to allocate 496.00 MiB. GPU 0 has a total capacty of 14.75 "
        "GiB of which 235.06 MiB is free. Process 20398 has 14.52 GiB memory in use. Of the "
        "allocated memory 14.06 GiB is allocated by PyTorch, and 330.42 MiB is reserved by PyTorch"
        " but unallocated. If reserved but unallocated memory is large try setting "
        "max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and "
        "PYTORCH_CUDA_ALLOC_CONF",
    ),
    (
        "https://github.com/Synthintel0/MyGirlGPT/issues/11",
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 32.00 MiB. GPU 0 has a"
        " total capacty of 4.00 GiB of which 41.56 MiB is free. Including non-PyTorch memory, this"
        " process has 3.44 GiB memory in use. Of the allocated memory 2.58 GiB is allocated by "
        "PyTorch, and 1.90 MiB is reserved by PyTorch but unallocated. If reserved but unallocated"
        " memory is large try setting max_split_size_mb to avoid fragmentation.  See "
        "documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF.",
    ),
    (
        "https://github.com/kaito-project/kaito/issues/976",
        "ERROR 04-01 23:46:56 [engine.py:160] torch.OutOfMemoryError: CUDA out of memory. Tried to"
        " allocate 546.00 MiB. GPU 0 has a total capacity of 15.77 GiB of which 514.19 MiB is free."
        " Process 562167 has 15.25 GiB memory in use. Of the allocated memory 13.73 GiB is "
        "allocated by PyTorch, with 46.00 MiB allocated in private pools (e.g., CUDA Graphs), and "
        "736.86 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is "
        "large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
        "fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/"
        "stable/notes/cuda.html#environment-variables)",
    ),
    # Windows (WDDM) reports GiB free: the card is not full, nobody else holds it
    (
        "https://github.com/jhc13/taggui/issues/188",
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a"
        " total capacity of 4.00 GiB of which 2.35 GiB is free. Of the allocated memory 825.15 MiB"
        " is allocated by PyTorch, and 24.85 MiB is reserved by PyTorch but unallocated. If "
        "reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF="
        "expandable_segments:True to avoid fragmentation. See documentation for Memory Management",
    ),
    (
        "https://github.com/pytorch/pytorch/issues/67971",
        "RuntimeError: CUDA out of memory. Tried to allocate 2.00 MiB (GPU 0; 6.00 GiB total "
        "capacity; 4.88 GiB already allocated; 0 bytes free; 4.96 GiB reserved in total by "
        "PyTorch)",
    ),
]


@pytest.mark.parametrize(
    ("thread", "text"), OWN_MEMORY_OOMS, ids=[o[0].split("github.com/")[1] for o in OWN_MEMORY_OOMS]
)
def test_oom_of_this_process_keeps_its_own_memory_class(thread: str, text: str) -> None:
    # which of the process's own classes (the batch, the cache's fragmentation) is the other
    # entries' decision; none of these may be read as memory held elsewhere or at set-up
    assert diagnosed(text) in OWN_MEMORY_CLASSES, thread


def test_large_loss_values_alone_are_not_a_divergence() -> None:
    """A large loss alone is not a divergence: regression losses can be that large and healthy.

    Lines from the run-produced logs none/healthy-regression-loss-in-millions.log and
    loss-divergence/adamw-lr-too-high-collapse.log.
    """
    text = "".join(f"epoch {e:3d} loss={v}\n" for e, v in enumerate(["6.9969e+06", "5.0261e+06"]))
    assert diagnosed(text) is None
    # with a gradient norm in the same range on the same line it is one
    assert diagnosed("step    2 | loss 941922.9375 | grad_norm 34393.56") == "loss-divergence"
