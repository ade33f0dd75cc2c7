"""Fix and verification commands written for the log in hand (rootcause/commands.py)."""

import os
import re
from pathlib import Path

import pytest

from rootcause.cli import diagnose_path
from rootcause.commands import cut_batch, fix_command, oom_figures, verification_command
from rootcause.engine import get_engine
from rootcause.result import EvidenceLine, Launch

# ../shared beside the clone (the CI machine has it; a user's clone does not); a worktree
# elsewhere names it with ROOTCAUSE_SHARED
SHARED = (
    Path(os.environ.get("ROOTCAUSE_SHARED", Path(__file__).resolve().parents[3] / "shared"))
    / "corpus"
)

# (log under the shared corpus, its launcher, its script), of different launchers
LOGS = [
    ("dev3/gh-elastic-child-failed__deepspeed-5302.log", "deepspeed", "src/train_bash.py"),
    ("dev3/gh-elastic-child-failed__deepspeedexamples-626.log", "deepspeed", "trainCLM.py"),
    ("dev3/gh-host-oom-killed__deepspeed-3232.log", "deepspeed", "main.py"),
    ("dev2/gh-deepspeed-op-build__minimind-48.log", "deepspeed", "1-pretrain.py"),
    ("dev/gh-address-in-use__pytorch-85604.log", "torchrun", "train.py"),
    ("dev2/gh-host-oom-killed__llama-856.log", "torchrun", "example_chat_completion.py"),
    ("dev/gh-elastic-child-failed__kohya-ss-1270.log", "torchrun", "train_db.py"),
    ("dev2/gh-elastic-child-failed__colossalai-3571.log", "torchrun", "train.py"),
    ("dev2/gh-elastic-child-failed__minigpt-4-237.log", "torchrun", "train.py"),
    ("dev3/gh-elastic-child-failed__mmsegmentation-3106.log", "torchrun", "tools/train.py"),
    ("dev3/gh-host-oom-killed__chatglm2-6b-520.log", "torchrun", "main.py"),
    ("dev2/gh-elastic-child-failed__kohya-ss-897.log", "torchrun", "train_network.py"),
    ("dev/gh-inplace-modification__singan-110.log", "python", "main_train.py"),
    ("dev2/gh-dynamo-recompile-limit__pytorch-geometric-8418.log", "python3", "gcn.py"),
    ("dev2/gh-no-kernel-image__gail-pytorch-6.log", "python", "train.py"),
    ("dev3/gh-activation-oom__cmc-9.log", "python", "main.py"),
    ("dev3/gh-extension-abi-mismatch__armesh-1.log", "python", "5-train.py"),
    ("dev3/gh-host-oom-killed__langchain-chatchat-35.log", "python", "knowledge_based_chatglm.py"),
    ("dev2/gh-deepspeed-op-build__deepspeed-3094.log", "python", "train_glm_finetune.py"),
    ("dev2/gh-nan-loss__graphx-conv-14.log", "python", "train.py"),
]
# an import from the user's own code, outside a command marked as a template
_OWN_IMPORT_RE = re.compile(
    r"\bfrom (?!torch\b|os\b|psutil\b|deepspeed\b|transformers\b|accelerate\b|bitsandbytes\b)"
    r"[A-Za-z_][\w.]* import "
)


@pytest.mark.skipif(not SHARED.is_dir(), reason="needs ../shared/corpus beside the clone")
@pytest.mark.parametrize(("relative", "launcher", "script"), LOGS)
def test_the_printed_fix_command_carries_the_logs_own_launcher_and_script(
    relative: str, launcher: str, script: str
) -> None:
    result = diagnose_path(str(SHARED / relative), get_engine())

    assert result.remediation
    command = result.remediation.command
    assert re.search(rf"(?:^|\s){re.escape(launcher)}\s", command), command
    assert script in command, command
    verification = result.remediation.verification_command
    assert verification.startswith("# TEMPLATE") or not _OWN_IMPORT_RE.search(verification)


def test_twenty_logs_of_several_launchers():
    assert len(LOGS) == 20
    assert {launcher for _, launcher, _ in LOGS} == {"deepspeed", "torchrun", "python", "python3"}


_OOM = EvidenceLine(
    line=9,
    text="torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB (GPU 0; 23.69 "
    "GiB total capacity; 18.00 GiB already allocated; 2.00 GiB free; 20.10 GiB reserved in "
    "total by PyTorch)",
)


def test_the_oom_figures_say_how_far_to_cut_the_micro_batch():
    figures = oom_figures([_OOM])
    assert figures == (4 * 2**30, 2 * 2**30, 18 * 2**30)
    # 20 GiB could be had of the 22 needed: 16 * 0.9 * 20 / 22 = 13.09
    assert cut_batch(16, figures) == 13
    assert cut_batch(16, None) == 8
    assert cut_batch(1, figures) == 1


def test_an_oom_fix_uses_the_logs_launch_and_cuts_its_batch_with_accumulation():
    launch = Launch(
        launcher="torchrun",
        script="finetune.py",
        command="torchrun --nproc_per_node=2 finetune.py --output_dir out "
        "--per_device_train_batch_size 16 --gradient_accumulation_steps 1",
        batch_size=16,
        world_size=2,
    )
    command = fix_command(
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True python train.py "
        "--per_device_train_batch_size 4 --gradient_accumulation_steps 8",
        slug="activation-oom",
        launch=launch,
        evidence=[_OOM],
    )

    assert command == (
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True torchrun --nproc_per_node=2 "
        "finetune.py --output_dir out --per_device_train_batch_size 13 "
        "--gradient_accumulation_steps 8"
    )


def test_what_the_log_does_not_show_is_a_named_placeholder():
    launch = Launch(
        launcher="torchrun", script=None, command=None, batch_size=None, world_size=None
    )
    command = fix_command(
        "python train.py --per_device_train_batch_size 4",
        slug="activation-oom",
        launch=launch,
        evidence=[],
    )

    assert command.startswith("torchrun --nproc_per_node=<NPROC> <SCRIPT.py>")
    assert "--per_device_train_batch_size <MICRO_BATCH>" in command
    assert "# placeholders: " in command
    for name in ("<SCRIPT.py>", "<NPROC>", "<MICRO_BATCH>"):
        assert f"{name} = " in command


def test_a_verification_importing_unshown_names_is_marked_as_a_template():
    launch = Launch(
        launcher="python", script="main.py", command=None, batch_size=None, world_size=None
    )
    text = verification_command(
        'python -c "import torch; from train import build_model; print(build_model())"',
        launch=launch,
    )

    first, command = text.split("\n", 1)
    assert first.startswith("# TEMPLATE — fill in <MODULE>: the module of main.py")
    assert "build_model" in first
    assert "from train import" not in command
    assert "from <MODULE> import build_model" in command


def test_a_verification_of_library_code_only_is_left_runnable():
    command = 'python -c "import torch; print(torch.cuda.is_available())"'
    assert verification_command(command, launch=None) == command


def test_without_launch_facts_the_catalogue_command_is_unchanged():
    command = "python train.py --per_device_train_batch_size 4"
    assert fix_command(command, slug="activation-oom", launch=None, evidence=[]) == command
