"""Issue 32's "wordings not yet known": each failure as another stack or driver words it, one
test each, on excerpts in the wording of the public thread named beside it (values of their own;
inline rather than in tests/logs, see test_issue32_class_kinds.py). Wordings the catalogue
already read before (NCCL's `Cuda failure 'initialization error'`, Xid / "fallen off the bus" /
"GPU is lost" / ECC, the cpu_adam build, MPS's OOM, an OOM raised as cuDNN's
CUDNN_STATUS_ALLOC_FAILED) have their tests in test_real_log_kinds_dev3*.py,
test_real_log_kinds.py and tests/logs; cuDNN's "Unable to find a valid cuDNN algorithm" stays
cudnn-error, whose page explains its memory cause (tests/logs/cudnn-error).
"""

import pytest

from rootcause.engine import get_engine
from rootcause.result import DiagnosisResult


def diagnose(text: str) -> DiagnosisResult:
    return get_engine().diagnose([text])


def slug(result: DiagnosisResult) -> str | None:
    return result.failure.slug if result.failure else None


TRACE = 'Traceback (most recent call last):\n  File "train.py", line 212, in <module>\n    main()\n'

WORDINGS = [
    # --- memory, as TensorFlow, ROCm and cuDNN say it
    (
        "tensorflow/tensorflow#17669, zzw922cn/Automatic_Speech_Recognition#78",
        "2018-06-08 17:26:00.908130: W tensorflow/core/framework/op_kernel.cc:1202] OP_REQUIRES "
        "failed at tile_ops.cc:123 : Resource exhausted: OOM when allocating tensor with "
        "shape[16,1,40960,8] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by "
        "allocator GPU_0_bfc\n" + TRACE + "tensorflow.python.framework.errors_impl."
        "ResourceExhaustedError: OOM when allocating tensor with shape[16,1,40960,8] and type "
        "float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc\n",
        "activation-oom",
    ),
    (
        "huggingface/autotrain-advanced#737",
        '  File "/opt/venv/lib/python3.11/site-packages/torch/nn/modules/conv.py", line 549, in '
        "_conv_forward\n    return F.conv2d(\ntorch.OutOfMemoryError: HIP out of memory. Tried to "
        "allocate 2.25 GiB. GPU 0 has a total capacity of 15.98 GiB of which 1.10 GiB is free. "
        "Of the allocated memory 13.02 GiB is allocated by PyTorch, and 152.50 MiB is reserved "
        "by PyTorch but unallocated.\n",
        "activation-oom",
    ),
    (
        "tensorflow/tensorflow#24828, #38929 (cuDNN failing to create its handle)",
        TRACE + "tensorflow.python.framework.errors_impl.UnknownError:  Failed to get "
        "convolution algorithm. This is probably because cuDNN failed to initialize, so try "
        "looking to see if a warning log message was printed above.\n",
        "cudnn-error",
    ),
    # --- a full disk seen only as a file the writer cannot open
    (
        "Sachini/ronin#51, pytorch/pytorch#76108",
        "Epoch 0, time usage: 10319.676s, average loss: 0.050582\n"
        + TRACE
        + '  File "/src/ronin_resnet.py", line 227, in train\n    torch.save({"model_state_dict": '
        "network.state_dict()},\n"
        '  File "/opt/conda/lib/python3.9/site-packages/torch/serialization.py", line 422, in save\n'
        "    with _open_zipfile_writer(f) as opened_zipfile:\n"
        '  File "/opt/conda/lib/python3.9/site-packages/torch/serialization.py", line 287, in __init__\n'
        "    super().__init__(torch._C.PyTorchFileWriter(str(name)))\n"
        "RuntimeError: File out/checkpoints/checkpoint_3.pt cannot be opened.\n",
        "disk-full",
    ),
    # --- weights that do not fit the model, as Keras and TensorFlow word it
    (
        "xiph/LPCNet#39",
        TRACE + '  File "/usr/local/lib/python3.6/site-packages/keras/engine/saving.py", line '
        "1030, in load_weights_from_hdf5_group\n    str(len(filtered_layers)) + ' layers.')\n"
        "ValueError: You are trying to load a weight file containing 10 layers into a model with "
        "9 layers.\n",
        "state-dict-mismatch",
    ),
    (
        "xuannianz/EfficientDet#152",
        TRACE + 'ValueError: Layer #232 (named "fpn_cells/cell_0/fnode0/add") expects 0 '
        "weight(s), but the saved weights have 1 element(s).\n",
        "state-dict-mismatch",
    ),
    (
        "titu1994/Wide-Residual-Networks#11",
        TRACE + 'ValueError: Layer #0 (named "conv2d_1" in the current model) was found to '
        "correspond to layer convolution2d_1 in the save file. However the new layer conv2d_1 "
        "expects 1 weights, but the saved weights have 2 elements.\n",
        "state-dict-mismatch",
    ),
    (
        "VisualComputingInstitute/SiamR-CNN#6, tensorflow/models#3391",
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
    (
        "huggingface/transformers#20327, asahi417/tner#37",
        TRACE + "RuntimeError: Error(s) in loading state_dict for BertForSequenceClassification:"
        "\n\tsize mismatch for classifier.weight: copying a param with shape torch.Size([3, 768]) "
        "from checkpoint, the shape in current model is torch.Size([2, 768]).\n\tYou may consider "
        "adding `ignore_mismatched_sizes=True` in the model `from_pretrained` method.\n",
        "state-dict-mismatch",
    ),
    # --- non-finite values as TensorFlow stops on them
    (
        "tensorflow/models#9986, mozilla/DeepSpeech#1755",
        "306/313 [============================>.] - ETA: 0s - loss: 2.3011\n"
        + TRACE
        + "tensorflow.python.framework.errors_impl.InvalidArgumentError: Nan in summary "
        "histogram for: conv2d/kernel_0 [Op:WriteHistogramSummary]\n",
        "nan-loss",
    ),
    # --- no device, as ROCm and older PyTorch say it
    (
        "ROCm/hip#3799, lllyasviel/Fooocus#1079 (a ROCm build of PyTorch)",
        TRACE
        + '  File "/opt/venv/lib/python3.10/site-packages/torch/cuda/__init__.py", line 383, in '
        "_lazy_init\n    torch._C._cuda_init()\nRuntimeError: No HIP GPUs are available\n",
        "cuda-not-available",
    ),
    (
        "MasterBin-IIAU/CSA#5",
        "THCudaCheck FAIL file=/pytorch/torch/csrc/cuda/Module.cpp line=34 error=38 : no "
        "CUDA-capable device is detected\n" + TRACE + "RuntimeError: cuda runtime error (38) : "
        "no CUDA-capable device is detected at /pytorch/torch/csrc/cuda/Module.cpp:34\n",
        "cuda-not-available",
    ),
    (
        "etched-ai/open-oasis#27, pytorch/pytorch#164346 (a GPU ROCm's build has no code for)",
        TRACE + "RuntimeError: HIP error: invalid device function\nHIP kernel errors might be "
        "asynchronously reported at some other API call, so the stacktrace below might be "
        "incorrect.\nFor debugging consider passing AMD_SERIALIZE_KERNEL=3\n",
        "no-kernel-image",
    ),
    # --- rendezvous in torch 2.x's wordings
    (
        "pytorch/pytorch#105782",
        "[E108 20:04:34.467642512 socket.cpp:957] [c10d] The client socket has timed out after "
        "900s while trying to connect to (10.1.2.3, 29500).\n",
        "rendezvous-timeout",
    ),
    (
        "vllm-project/vllm#19670, nvidia-cosmos/cosmos-rl#681",
        TRACE + '  File "/opt/venv/lib/python3.10/site-packages/torch/distributed/elastic/'
        'rendezvous/dynamic_rendezvous.py", line 1126, in _create_tcp_store_server\n'
        "    return dist.TCPStore(\ntorch.distributed.DistNetworkError: The client socket has "
        "timed out after 300000ms while trying to connect to (node-7, 41331).\n",
        "rendezvous-timeout",
    ),
]


@pytest.mark.parametrize(
    ("thread", "text", "expected"), WORDINGS, ids=[w[0].split(" ")[0] for w in WORDINGS]
)
def test_wording_is_its_class(thread: str, text: str, expected: str) -> None:
    assert slug(diagnose(text)) == expected, thread


def test_a_checkpoint_that_cannot_be_opened_is_a_lead_that_says_what_decides_it():
    result = diagnose(WORDINGS[3][1])

    decide = " ".join(f for f in result.missing_facts if f.startswith("what would decide it"))
    assert "df -h" in decide
    assert "ls -ld" in decide
    # the same words outside torch.save's writer are not a full disk
    elsewhere = TRACE + "RuntimeError: File data/train.lst cannot be opened.\n"
    assert slug(diagnose(elsewhere)) != "disk-full"


def test_tensorflows_cuda_warnings_that_it_runs_on_past_are_no_failure():
    # tensorflow/tensorflow#45930, #56413, #44869: TensorFlow warns and goes on on the CPU
    healthy = (
        "2022-06-09 15:50:37.711160: W tensorflow/stream_executor/platform/default/dso_loader.cc:"
        "64] Could not load dynamic library 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: "
        "cannot open shared object file: No such file or directory\n"
        "2022-06-09 15:50:37.711178: I tensorflow/stream_executor/cuda/cudart_stub.cc:29] Ignore "
        "above cudart dlerror if you do not have a GPU set up on your machine.\n"
        "2020-11-11 10:46:37.467224: E tensorflow/stream_executor/cuda/cuda_driver.cc:314] "
        "failed call to cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected\n"
        "Epoch 1/2\n1875/1875 [==============================] - 4s 2ms/step - loss: 0.2953\n"
    )
    assert diagnose(healthy).outcome == "no_match"
    # an import that stops on the same missing library is a broken install
    broken = (
        TRACE
        + "ImportError: libcudart.so.7.5: cannot open shared object file: No such file or directory\n"
    )
    assert slug(diagnose(broken)) == "extension-abi-mismatch"
