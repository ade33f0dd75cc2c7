"""Commands written for the log, over launch lines written here for each launcher (torchrun,
python -m torch.distributed.launch, deepspeed, accelerate launch, Lightning, the HF Trainer's
arguments, srun, mpirun, horovodrun, plain python), and over every catalogue entry's fix and
verification command with a few launches: runnable as printed, or a template naming the one thing
to fill in, and never an import of the user's own names."""

import re

import pytest

from rootcause.catalogue import load_entries
from rootcause.commands import fix_command, verification_command
from rootcause.engine import get_engine
from rootcause.remediation import complete_result
from rootcause.result import DiagnosisResult, EvidenceLine, Launch
from rootcause.runfacts import RunFacts

# A CUDA OOM in the forward pass of the script, with torch >= 2.1's figures: 4 GiB asked, 2 free,
# 18 allocated, so 0.9 * 20 / 22 of the micro-batch fits.
OOM = """\
epoch 1 step 10 loss 2.31
Traceback (most recent call last):
  File "/work/{script}", line 88, in <module>
    main()
  File "/work/{script}", line 70, in main
    loss = model(**batch).loss
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total \
capacity of 23.69 GiB of which 2.00 GiB is free. Of the allocated memory 18.00 GiB is allocated \
by PyTorch, and 1.10 GiB is reserved by PyTorch but unallocated.
"""

# (name, the launch line as a log shows it, the launch the fix must carry, the script, the
# batch flag as the fix must write it: the log's micro-batch cut by the OOM's figures)
LAUNCHES = [
    ("torchrun", "$ torchrun --nproc_per_node=4 finetune.py --per_device_train_batch_size 16 "
     "--output_dir out", "torchrun --nproc_per_node=4 finetune.py", "finetune.py",
     "--per_device_train_batch_size 13"),
    ("torch.distributed.launch", "$ python -m torch.distributed.launch --nproc_per_node=2 "
     "--use_env train_ddp.py --batch-size 32", "python -m torch.distributed.launch "
     "--nproc_per_node=2 --use_env train_ddp.py", "train_ddp.py", "--batch-size 26"),
    ("deepspeed", "$ deepspeed --num_gpus=8 sft.py --deepspeed ds_z2.json "
     "--per_device_train_batch_size 8", "deepspeed --num_gpus=8 sft.py", "sft.py",
     "--per_device_train_batch_size 6"),
    ("accelerate", "$ accelerate launch --num_processes 2 --mixed_precision bf16 run_clm.py "
     "--per_device_train_batch_size 4", "accelerate launch --num_processes 2 --mixed_precision "
     "bf16 run_clm.py", "run_clm.py", "--per_device_train_batch_size 3"),
    ("lightning", "$ python cli_main.py fit --trainer.devices 2 --data.batch_size 64",
     "python cli_main.py fit --trainer.devices 2", "cli_main.py", "--data.batch_size 52"),
    ("hf-trainer", "$ python run_glue.py --model_name_or_path bert-base-cased "
     "--per_device_train_batch_size 32 --output_dir /tmp/out", "python run_glue.py "
     "--model_name_or_path bert-base-cased", "run_glue.py", "--per_device_train_batch_size 26"),
    ("srun", "+ srun --ntasks-per-node=4 python pretrain.py --batch_size 24",
     "srun --ntasks-per-node=4 python pretrain.py", "pretrain.py", "--batch_size 19"),
    ("mpirun", "$ mpirun -np 8 -H node1:4,node2:4 python train_hvd.py --batch-size 64",
     "mpirun -np 8 -H node1:4,node2:4 python train_hvd.py", "train_hvd.py", "--batch-size 52"),
    ("horovodrun", "$ horovodrun -np 4 -H localhost:4 python keras_mnist.py --batch-size 128",
     "horovodrun -np 4 -H localhost:4 python keras_mnist.py", "keras_mnist.py",
     "--batch-size 104"),
    ("python", "$ python main.py --bs 16", "python main.py", "main.py", "--bs 13"),
]  # fmt: skip
ENTRIES = {e.slug: e for e in load_entries()}


def _diagnosed(text: str) -> DiagnosisResult:
    result = get_engine().diagnose([text])
    assert result.failure is not None
    entry = ENTRIES[result.failure.slug]
    return complete_result(result, entry=entry, include_fix=True, masking={})


def _launch(lines: str) -> Launch:
    facts = RunFacts()
    for line in lines.splitlines():
        facts.observe(line)
    return Launch(
        launcher=facts.launcher_name,
        script=facts.script,
        command=facts.command,
        batch_size=facts.batch_size,
        world_size=facts.world_size,
    )


@pytest.mark.parametrize(("name", "line", "launch", "script", "batch"), LAUNCHES)
def test_the_printed_fix_command_carries_the_launch_line_and_script(
    name: str, line: str, launch: str, script: str, batch: str
) -> None:
    result = _diagnosed(f"{line}\n{OOM.format(script=script)}")

    assert result.launch
    assert result.launch.script == script
    assert result.remediation
    assert launch in result.remediation.command, result.remediation.command


@pytest.mark.parametrize(("name", "line", "launch", "script", "batch"), LAUNCHES)
def test_an_oom_fix_cuts_the_logs_own_batch_flag_by_the_ooms_figures(
    name: str, line: str, launch: str, script: str, batch: str
) -> None:
    text = f"{line}\n{OOM.format(script=script)}"
    evidence = [EvidenceLine(line=9, text=text.splitlines()[-1])]

    command = fix_command(
        ENTRIES["activation-oom"].fix.command,
        slug="activation-oom",
        launch=_launch(text),
        evidence=evidence,
    )

    assert launch in command
    assert batch in command, command
    assert "<" not in command  # nothing left to fill in: the log showed it all


def test_the_hf_trainers_config_dump_gives_the_batch_when_no_command_line_shows_it():
    dump = (
        "TrainingArguments(\n_n_gpu=1,\noutput_dir=out,\nper_device_train_batch_size=8,\n"
        "gradient_accumulation_steps=1,\n)"
    )
    launch = _launch(f"{dump}\n{OOM.format(script='train_sft.py')}")

    assert (launch.launcher, launch.script, launch.batch_size) == (None, "/work/train_sft.py", 8)
    command = fix_command(
        "python train.py --per_device_train_batch_size 4 --gradient_accumulation_steps 8",
        slug="activation-oom",
        launch=launch,
        evidence=[],
    )
    # no figures: half the batch, twice the accumulation; python assumed, and said so
    assert command.splitlines() == [
        "python /work/train_sft.py --per_device_train_batch_size 4 --gradient_accumulation_steps 2",
        "# assumed: python runs the script (the log shows no launch command)",
    ]


def test_the_accumulation_keeps_the_logs_own_effective_batch():
    launch = Launch(
        launcher="torchrun",
        script="ft.py",
        command="torchrun --nproc_per_node=2 ft.py --output_dir o --per_device_train_batch_size 8 "
        "--gradient_accumulation_steps 4",
        batch_size=8,
        world_size=2,
    )

    command = fix_command(
        "python train.py --per_device_train_batch_size 4 --gradient_accumulation_steps 8",
        slug="activation-oom",
        launch=launch,
        evidence=[],
    )

    # 8 x 4 = 32 per process before; 4 x 8 = 32 after
    assert command == (
        "torchrun --nproc_per_node=2 ft.py --output_dir o --per_device_train_batch_size 4 "
        "--gradient_accumulation_steps 8"
    )


def test_deepspeeds_cut_worker_list_gives_the_command_without_its_partial_argument():
    args = ", ".join(f"'--flag_{i}', 'value_{i}'" for i in range(60))
    line = (
        "[launch.py:321:sigkill_handler] ['/usr/bin/python', '-u', 'train/run.py', "
        f"'--local_rank=3', {args}"
    )
    launch = _launch(line)

    assert (launch.launcher, launch.script) == ("deepspeed", "train/run.py")
    assert launch.command is not None
    assert launch.command.startswith("deepspeed train/run.py --flag_0 value_0 --flag_1")
    assert "--local_rank" not in launch.command
    assert not launch.command.endswith("'")


@pytest.mark.parametrize(
    ("line", "command"),
    [
        (
            "$ torchrun --nproc_per_node=2 train.py --db-password '<SECRET>'",
            "torchrun --nproc_per_node=2 train.py --db-password '<SECRET>'",
        ),
        ('+ python train.py --name "run 7"', 'python train.py --name "run 7"'),
        ("> python train.py --out ./runs`", "python train.py --out ./runs"),
    ],
)
def test_a_quote_that_closes_an_argument_stays_and_one_that_closes_prose_goes(
    line: str, command: str
) -> None:
    assert _launch(line).command == command


# -- every catalogue entry's commands, with a few launches

SAMPLE_LAUNCHES = {
    "nothing shown": None,
    "torchrun, no script": Launch(
        launcher="torchrun", script=None, command=None, batch_size=None, world_size=None
    ),
    "torchrun line": Launch(
        launcher="torchrun",
        script="finetune.py",
        command="torchrun --nproc_per_node=4 finetune.py --per_device_train_batch_size 16 "
        "--output_dir out",
        batch_size=16,
        world_size=4,
    ),
    "deepspeed line": Launch(
        launcher="deepspeed",
        script="sft.py",
        command="deepspeed --num_gpus=8 sft.py --deepspeed ds_z2.json",
        batch_size=None,
        world_size=8,
    ),
    "srun line": Launch(
        launcher="srun",
        script="pretrain.py",
        command="srun --ntasks-per-node=4 python pretrain.py --batch_size 24",
        batch_size=24,
        world_size=4,
    ),
    "a traceback's script": Launch(
        launcher=None, script="/opt/job/main.py", command=None, batch_size=None, world_size=None
    ),
}
_PLACEHOLDER_RE = re.compile(r"<[A-Z_]+(?:\.[a-z]+)?>")
# something shaped like a placeholder but not one the commands name (`<last-good-checkpoint>`)
_LOOSE_PLACEHOLDER_RE = re.compile(r"<[a-z][^<>\n]{0,60}>")
# A data path a command reads or writes: absolute (/data/..., /scratch/...), in a home (~/dataset),
# a relative path with a directory (ckpt/last.pt, ./output) or a data file's name (model.pt,
# ds_config.json). Not: what the command writes itself under /tmp, the system's own (/dev/shm,
# /proc, /usr/local/cuda-*, ~/.cache), a container's mount point, URLs, the user's script.
_DATA_PATH_RE = re.compile(
    # (not a name `find -name` looks for among what the command wrote)
    r"(?<![\w.:/<>=)\]*-])(?<!-name )(?:/(?:[\w.$*-]+/?)+|~/[\w./$*-]*|\.{1,2}/[\w./$*-]*|"
    r"[\w-]+/[\w./$*-]*\.(?:pt|pth|ckpt|bin|safetensors|json|ya?ml|csv|jsonl|parquet|arrow)|"
    r"[\w-]+\.(?:pt|pth|ckpt|bin|safetensors|json|ya?ml|csv|jsonl|parquet|arrow))(?![\w<>])"
)
# what stands before the program of a command: its start, environment assignments, a launcher
_PROGRAM_RE = re.compile(r"(?:^|[;&|]\s*|\b(?:mpirun|srun)\b[^;&|\n]*\s)(?:\w+=\S+\s+)*$")
_NOT_DATA_RE = re.compile(
    r"^(?:/tmp/|/dev/|/proc/|/sys/|/usr/|/opt/|/etc/|/workspace$|~/\.cache/|/2\*\*)"
)
_FROM_RE = re.compile(r"\bfrom (?P<module><?[\w.]+>?) import ")
# the user's modules as the catalogue names them; anything else imported is a library
_USER_MODULES = {"train", "data", "model", "losses"}
_SCRIPT_RE = re.compile(r"(?<![\w./<-])[\w./-]*\.py\b")


def _body(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.startswith("#"))


def _check_names(body: str, launch: Launch | None) -> None:
    """No import of the user's own names; no script but the log's, one the command writes, or a
    placeholder; no data path but the log's own or a placeholder."""
    for m in _FROM_RE.finditer(body):
        assert m.group("module") not in _USER_MODULES, body
    assert not _LOOSE_PLACEHOLDER_RE.search(body), body
    shown = launch.command or "" if launch else ""
    for m in _DATA_PATH_RE.finditer(body):
        path = m.group(0)
        if _PROGRAM_RE.search(body[: m.start()]):
            continue  # the program a command runs (nccl-tests' ./build/all_reduce_perf), not data
        assert _NOT_DATA_RE.match(path) or path in shown, (path, body)
    written = set(re.findall(r"(?:>|\btee)\s*([\w./-]+\.py)\b", body))
    own = {launch.script} if launch and launch.script else set()
    for script in _SCRIPT_RE.findall(body):
        assert script in written | own or script.startswith("/tmp/"), (script, body)


@pytest.mark.parametrize("slug", sorted(ENTRIES))
@pytest.mark.parametrize("shown", list(SAMPLE_LAUNCHES))
def test_a_verification_is_runnable_as_printed_or_a_template_with_one_thing_to_fill_in(
    slug: str, shown: str
) -> None:
    launch = SAMPLE_LAUNCHES[shown]
    text = verification_command(ENTRIES[slug].verification.command, launch=launch)
    body = _body(text)

    placeholders = set(_PLACEHOLDER_RE.findall(body))
    if placeholders:
        (one,) = placeholders
        assert text.startswith(f"# TEMPLATE — fill in {one}: "), text
    else:
        assert not text.startswith("# TEMPLATE"), text
    _check_names(body, launch)
    if launch is not None and launch.command and slug in _LAUNCHING:
        # the log's launcher, its flags and its script, in order (the catalogue's own flags for
        # the same launcher may join them)
        head = launch.command[
            : launch.command.index(launch.script or "") + len(launch.script or "")
        ]
        pattern = r"\s(?:\S+\s)*?".join(re.escape(word) for word in head.split())
        assert re.search(pattern, body), body


# entries whose verification runs the user's training script (the catalogue's `train.py`)
_LAUNCHING = {
    slug
    for slug, e in ENTRIES.items()
    if re.search(r"(?:python|torchrun|deepspeed)\b[^|;\n]*\btrain\.py", e.verification.command)
}


@pytest.mark.parametrize("slug", sorted(ENTRIES))
@pytest.mark.parametrize("shown", list(SAMPLE_LAUNCHES))
def test_a_fix_names_every_placeholder_and_imports_no_name_the_log_does_not_show(
    slug: str, shown: str
) -> None:
    launch = SAMPLE_LAUNCHES[shown]
    text = fix_command(ENTRIES[slug].fix.command, slug=slug, launch=launch, evidence=[])
    body = _body(text)

    for name in set(_PLACEHOLDER_RE.findall(body)):
        assert f"{name} = " in text, text
    _check_names(body, launch)


def test_several_catalogue_verifications_launch_the_users_script():
    # the launching check above is not empty
    assert len(_LAUNCHING) >= 5


def test_a_script_the_command_writes_itself_is_kept_whatever_the_log_shows():
    text = verification_command(
        ENTRIES["gloo-timeout"].verification.command, launch=SAMPLE_LAUNCHES["deepspeed line"]
    )

    assert text.rstrip().endswith("torchrun --nproc_per_node=4 /tmp/gloo_check.py")
    assert "sft.py" not in text


def test_a_library_import_is_left_runnable():
    text = verification_command(ENTRIES["kv-cache-insufficient"].verification.command, launch=None)

    assert text == ENTRIES["kv-cache-insufficient"].verification.command
    assert "from vllm import" in text


def test_the_catalogues_launcher_flags_join_the_logs_own_launch_of_the_same_launcher():
    # the verification reads back the per-rank files torchrun writes with --tee and --log-dir
    text = verification_command(
        ENTRIES["elastic-child-failed"].verification.command,
        launch=SAMPLE_LAUNCHES["torchrun line"],
    )

    assert text.startswith(
        "torchrun --nproc_per_node=4 --log-dir /tmp/torchrun_logs --redirects 3 --tee 3 "
        "finetune.py --per_device_train_batch_size 16 --output_dir out;"
    )
    # another launcher does not take torchrun's flags
    other = verification_command(
        ENTRIES["elastic-child-failed"].verification.command,
        launch=SAMPLE_LAUNCHES["deepspeed line"],
    )
    assert other.startswith("deepspeed --num_gpus=8 sft.py --deepspeed ds_z2.json;")


def test_a_data_path_the_log_shows_fills_its_placeholder_and_one_it_does_not_is_named():
    checked = ENTRIES["disk-full"].verification.command
    assert "<OUTPUT_DIR>" in checked

    # the torchrun line shows `--output_dir out`: the check reads that directory, runnable as is
    shown = verification_command(checked, launch=SAMPLE_LAUNCHES["torchrun line"])
    assert "disk_usage('out')" in shown
    assert "ls -d out/checkpoint-*" in shown
    assert "<" not in shown
    assert not shown.startswith("# TEMPLATE")

    # DeepSpeed's line shows no output directory: a one-blank template naming it
    unshown = verification_command(checked, launch=SAMPLE_LAUNCHES["deepspeed line"])
    assert unshown.startswith("# TEMPLATE — fill in <OUTPUT_DIR>: the run's output directory")


def test_the_logs_own_deepspeed_config_is_kept_over_the_catalogues_example():
    command = fix_command(
        ENTRIES["fp16-loss-scale-underflow"].fix.command,
        slug="fp16-loss-scale-underflow",
        launch=SAMPLE_LAUNCHES["deepspeed line"],
        evidence=[],
    )

    assert command.startswith("deepspeed --num_gpus=8 sft.py --deepspeed ds_z2.json")
    assert "<DS_CONFIG.json>" not in command


def test_a_checkpoint_path_in_the_evidence_fills_the_checkpoint_placeholder():
    evidence = [
        EvidenceLine(
            line=7,
            text="RuntimeError: PytorchStreamReader failed reading zip archive: failed finding "
            "central directory (while loading runs/exp3/ckpt_step400.pt)",
        )
    ]

    fix = fix_command(
        ENTRIES["checkpoint-corrupt"].fix.command,
        slug="checkpoint-corrupt",
        launch=None,
        evidence=evidence,
    )
    verify = verification_command(
        ENTRIES["checkpoint-corrupt"].verification.command, launch=None, evidence=evidence
    )

    assert fix.endswith("runs/exp3/ckpt_step400.pt")
    assert "glob.glob('runs/exp3/*.pt')" in verify
    assert not verify.startswith("# TEMPLATE")


@pytest.mark.parametrize(
    "example",
    ["/data/imagenet/train", "~/dataset/train.jsonl", "ckpt/last.pt", "./output", "model.pt"],
)
def test_the_data_path_check_catches_an_unmarked_example_path(example: str) -> None:
    # the check above is not empty: an example path the catalogue might write is caught
    with pytest.raises(AssertionError):
        _check_names(f"python -c \"import torch; torch.load('{example}')\"", None)
