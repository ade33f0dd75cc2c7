"""Issue 32's "wordings not yet known" beyond their class: each wording's class is checked with
the other public-thread wordings in test_new_classes.py (excerpts in the thread's wording, values
of their own, the threads named beside them); here, what a lead says and the look-alikes that
must stay no failure. Wordings the catalogue already read before (NCCL's `Cuda failure
'initialization error'`, Xid / "fallen off the bus" / "GPU is lost" / ECC, the cpu_adam build,
MPS's OOM, an OOM raised as cuDNN's CUDNN_STATUS_ALLOC_FAILED) have their tests in
test_real_log_kinds_dev3*.py, test_real_log_kinds.py and tests/logs; cuDNN's "Unable to find a
valid cuDNN algorithm" stays cudnn-error, whose page explains its memory cause
(tests/logs/cudnn-error).
"""

from rootcause.engine import get_engine
from rootcause.result import DiagnosisResult


def diagnose(text: str) -> DiagnosisResult:
    return get_engine().diagnose([text])


def slug(result: DiagnosisResult) -> str | None:
    return result.failure.slug if result.failure else None


TRACE = 'Traceback (most recent call last):\n  File "train.py", line 212, in <module>\n    main()\n'

# Sachini/ronin#51, pytorch/pytorch#76108: torch.save's writer cannot open its file
SAVE_CANNOT_OPEN = (
    "Epoch 0, time usage: 10319.676s, average loss: 0.050582\n"
    + TRACE
    + '  File "/src/ronin_resnet.py", line 227, in train\n    torch.save({"model_state_dict": '
    "network.state_dict()},\n"
    '  File "/opt/conda/lib/python3.9/site-packages/torch/serialization.py", line 422, in save\n'
    "    with _open_zipfile_writer(f) as opened_zipfile:\n"
    '  File "/opt/conda/lib/python3.9/site-packages/torch/serialization.py", line 287, in __init__\n'
    "    super().__init__(torch._C.PyTorchFileWriter(str(name)))\n"
    "RuntimeError: File out/checkpoints/checkpoint_3.pt cannot be opened.\n"
)


def test_a_checkpoint_that_cannot_be_opened_is_a_lead_that_says_what_decides_it():
    result = diagnose(SAVE_CANNOT_OPEN)

    assert slug(result) == "disk-full"

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
