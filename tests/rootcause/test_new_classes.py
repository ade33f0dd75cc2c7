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
