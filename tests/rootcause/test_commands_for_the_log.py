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

REALRUNS = Path(__file__).resolve().parents[2] / "bench" / "realruns" / "corpus"
# the run-produced corpus names the script by the path it ran from
RUN_SCRIPT = "bench/realruns/programs/train.py"

# (corpus, log, its launcher, its script): 20 logs of five launchers. "shared" is ../shared/corpus
# (the team's public-thread logs), "realruns" the project's own run-produced corpus.
LOGS = [
    ("shared", "dev3/gh-elastic-child-failed__deepspeed-5302.log", "deepspeed", "src/train_bash.py"),
    ("shared", "dev3/gh-elastic-child-failed__deepspeedexamples-626.log", "deepspeed", "trainCLM.py"),
    ("shared", "dev3/gh-host-oom-killed__deepspeed-3232.log", "deepspeed", "main.py"),
    ("shared", "dev2/gh-deepspeed-op-build__minimind-48.log", "deepspeed", "1-pretrain.py"),
    # DeepSpeed's launcher repeating a worker's command, a list cut past 1,200 characters
    ("shared", "dev3/gh-host-oom-killed__llava-1085.log", "deepspeed", "llava/train/train_mem.py"),
    ("shared", "dev/gh-address-in-use__pytorch-85604.log", "torchrun", "train.py"),
    ("shared", "dev2/gh-host-oom-killed__llama-856.log", "torchrun", "example_chat_completion.py"),
    ("shared", "dev/gh-elastic-child-failed__kohya-ss-1270.log", "torchrun", "train_db.py"),
    ("shared", "dev2/gh-elastic-child-failed__colossalai-3571.log", "torchrun", "train.py"),
    ("shared", "dev3/gh-elastic-child-failed__mmsegmentation-3106.log", "torchrun", "tools/train.py"),
    ("shared", "dev2/gh-elastic-child-failed__kohya-ss-897.log", "torchrun", "train_network.py"),
    ("shared", "dev/gh-inplace-modification__singan-110.log", "python", "main_train.py"),
    ("shared", "dev2/gh-dynamo-recompile-limit__pytorch-geometric-8418.log", "python3", "gcn.py"),
    ("shared", "dev2/gh-no-kernel-image__gail-pytorch-6.log", "python", "train.py"),
    ("shared", "dev3/gh-activation-oom__cmc-9.log", "python", "main.py"),
    ("shared", "dev3/gh-extension-abi-mismatch__armesh-1.log", "python", "5-train.py"),
    ("shared", "dev2/gh-deepspeed-op-build__deepspeed-3094.log", "python", "train_glm_finetune.py"),
    ("realruns", "dev/run-elastic-child-failed__accelerate_w2_rank1_3.log", "accelerate launch", RUN_SCRIPT),
    ("realruns", "dev/run-inplace-modification__accelerate_w2_rank1.log", "accelerate launch", RUN_SCRIPT),
    ("realruns", "dev/run-shape-mismatch__accelerate_w2_rank1_view.log", "accelerate launch", RUN_SCRIPT),
]  # fmt: skip
# an import from the user's own code, outside a command marked as a template
_OWN_IMPORT_RE = re.compile(
    r"\bfrom (?!torch\b|os\b|psutil\b|deepspeed\b|transformers\b|accelerate\b|bitsandbytes\b)"
    r"[A-Za-z_][\w.]* import "
)


@pytest.mark.parametrize(("corpus", "relative", "launcher", "script"), LOGS)
def test_the_printed_fix_command_carries_the_logs_own_launcher_and_script(
    corpus: str, relative: str, launcher: str, script: str
) -> None:
    root = SHARED if corpus == "shared" else REALRUNS
    if not root.is_dir():
        pytest.skip("needs ../shared/corpus beside the clone")
    result = diagnose_path(str(root / relative), get_engine())

    assert result.remediation
    command = result.remediation.command
    assert re.search(rf"(?:^|\s){re.escape(launcher)}\s", command), command
    assert script in command, command
    verification = result.remediation.verification_command
    assert verification.startswith("# TEMPLATE") or not _OWN_IMPORT_RE.search(verification)


def test_twenty_logs_of_several_launchers():
    assert len(LOGS) == len({log for _, log, _, _ in LOGS}) == 20
    assert {launcher for *_, launcher, _ in LOGS} == {
        "deepspeed",
        "torchrun",
        "python",
        "python3",
        "accelerate launch",
    }


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

    # 13 of 16 fits; accumulating over 2 steps instead of the log's 1 keeps the effective batch
    assert command == (
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True torchrun --nproc_per_node=2 "
        "finetune.py --output_dir out --per_device_train_batch_size 13 "
        "--gradient_accumulation_steps 2"
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

    # torchrun's own value for "one process per GPU", said as an assumption, not a placeholder
    assert command.startswith("torchrun --nproc_per_node=gpu <SCRIPT.py>")
    assert "--per_device_train_batch_size <MICRO_BATCH>" in command
    assert "# placeholders: " in command
    for name in ("<SCRIPT.py>", "<MICRO_BATCH>"):
        assert f"{name} = " in command
    assert "\n# assumed: torchrun uses every GPU of the machine" in command


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


def test_without_launch_facts_the_catalogues_script_and_batch_are_named_placeholders():
    command = "python train.py --per_device_train_batch_size 4"

    written = fix_command(command, slug="activation-oom", launch=None, evidence=[])

    assert written.splitlines() == [
        "python <SCRIPT.py> --per_device_train_batch_size <MICRO_BATCH>",
        "# placeholders: <SCRIPT.py> = your training script (the log does not name it); "
        "<MICRO_BATCH> = a micro-batch below the one that ran out of memory (the log does not "
        "show it)",
    ]
