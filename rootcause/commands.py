"""The catalogue's fix and verification commands rewritten for the log in hand.

A catalogue command is written for a generic run (`torchrun --nproc_per_node=8 train.py`,
`python train.py --per_device_train_batch_size 4`). What the log shows of its own launch
(rootcause.result.Launch: the launcher and its flags — srun, mpirun and horovodrun wrappers
included —, the script, the micro-batch and world sizes) replaces that part; what it does not show
becomes a `<PLACEHOLDER>`, named in a comment line. An OOM's memory figures say how far to cut the
micro-batch, and the gradient accumulation keeps the effective batch. An import of names the log
does not show (`from train import build_model`) gets a placeholder module; a verification command
with any placeholder starts with `# TEMPLATE — fill in …`, so that what is printed without one
runs as it is. Scripts a command writes itself (`cat > /tmp/nccl_smoke.py`) are kept.
"""

from __future__ import annotations

import math
import re
import sys
from dataclasses import dataclass, field

from rootcause.result import EvidenceLine, Launch

# The launch part of a catalogue command: launcher, its flags, the script.
# one argument: a placeholder's `<NAME>` whole (not a redirection), else no separator; a lone `<`
# only where no placeholder starts (one way to read each character: no backtracking to explode)
_PH = r"<[A-Z][A-Z_]{0,40}(?:\.[a-z]{1,9})?>"
_ARG = rf"(?:{_PH}|<(?!{_PH[1:]})|[^\s;|&><])+"
_LAUNCH_RE = re.compile(
    r"(?P<launch>(?:torchrun|deepspeed|accelerate launch|python3?(?: -m torch\.distributed\.run)?)"
    r"(?:\s+--?[\w.-]+(?:[= ](?!-)[^\s;|&]+)?)*?\s+(?P<script>[\w./<>-]+\.py))"
    # the script's arguments, up to a redirection, a pipe or the next command
    rf"(?P<args>(?:\s+(?!\d*>|&&|\|\||;|\|){_ARG})*)"
)
_ARGS_RE = re.compile(rf"(?:\s+(?!\d*>|&&|\|\||;|\|){_ARG})*")
# a script the command writes itself (a heredoc, a redirection, tee): not the user's
_WRITTEN_RE = re.compile(r"(?:>|\btee(?: -a)?)\s*(?P<path>[\w./-]+\.py)\b")
# the catalogue's name for the user's script, wherever a command names it (pgrep -f train.py)
_GENERIC_SCRIPT_RE = re.compile(r"(?<![\w./<-])train\.py\b")
_IMPORT_RE = re.compile(
    r"\bfrom (?P<module>[A-Za-z_][\w.]*) import (?P<names>\w+(?:(?: as \w+)?, *\w+)*)"
)
# modules a command may import: the standard library and the libraries of the catalogue's stacks
_LIBRARIES = frozenset((
    "torch", "torchvision", "torchaudio", "numpy", "psutil", "transformers", "datasets",
    "tokenizers", "peft", "accelerate", "deepspeed", "bitsandbytes", "safetensors", "vllm",
    "lightning", "pytorch_lightning", "tensorflow", "jax", "flax", "apex", "flash_attn",
    "xformers", "triton", "megatron", "pynvml",
))  # fmt: skip
_BATCH_FLAG_RE = re.compile(
    r"(?P<flag>--(?:\w+\.)*(?:per_device_train_batch_size|train_batch_size|micro_batch_size|"
    r"batch[_-]size|bs))(?P<sep>[= ])(?P<value>\d{1,6}|<[A-Z_]+>)"
)
_ACCUM_FLAG_RE = re.compile(
    r"(?P<flag>--gradient_accumulation_steps)(?P<sep>[= ])(?P<value>\d{1,6})"
)
# the catalogue's extra flags are the HF Trainer's: added only to a command that takes them
_HF_ARGS_RE = re.compile(r"--(?:per_device_train_batch_size|output_dir|model_name_or_path)\b")
_SIZE = r"([0-9.]+) ?([KMGT]i?B)"
# "Tried to allocate 2.00 GiB (GPU 0; 23.69 GiB total capacity; 20.12 GiB already allocated;
# 1.23 GiB free" (torch < 2.1) and "Tried to allocate 2.00 GiB. GPU 0 has a total capacity of
# 23.69 GiB of which 1.23 GiB is free ... 20.12 GiB is allocated by PyTorch" (torch >= 2.1)
_OLD_OOM_RE = re.compile(
    rf"Tried to allocate {_SIZE}[^\n]{{0,80}}?; {_SIZE} total capacity; {_SIZE} already allocated;"
    rf" {_SIZE} free\b"
)
_NEW_OOM_RE = re.compile(
    rf"Tried to allocate {_SIZE}\. GPU \d+ has a total capacity of {_SIZE} of which {_SIZE} is"
    rf" free[^\n]{{0,400}}?{_SIZE} is allocated by PyTorch"
)
_UNITS = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
OOM_CLASSES = frozenset(
    {"activation-oom", "eval-memory-growth", "allocator-fragmentation", "optimizer-state-oom"}
)
# A launcher's process-count flag, and its value when the log does not show the count (torchrun's
# "gpu": one process per GPU; deepspeed and accelerate use every GPU without the flag).
_LAUNCHER_FLAGS = {
    "torchrun": ("--nproc_per_node={n}", "gpu"),
    "deepspeed": ("--num_gpus={n}", None),
    "accelerate launch": ("--num_processes={n}", None),
}
SCRIPT, MODULE, MICRO_BATCH = "<SCRIPT.py>", "<MODULE>", "<MICRO_BATCH>"
# The data a catalogue command reads or writes (a checkpoint, the output directory, a model, a
# config) is written there as one of these placeholders, never as an example path that would run
# against nothing (`ckpt/last.pt`, `/scratch/...`): the log's own value replaces it where the log
# shows one (the launch's flags, a checkpoint path in the evidence), else it stays, named.
_DATA: dict[str, str] = {
    "<CHECKPOINT.pt>": "the checkpoint file the run loaded",
    "<CHECKPOINT_DIR>": "the directory the run saves its checkpoints in",
    "<GOOD_CHECKPOINT>": "the last checkpoint saved before the loss went wrong",
    "<OUTPUT_DIR>": "the run's output directory",
    "<BIG_DISK>": "a directory on a disk with room (`df -h` shows which)",
    "<MODEL_DIR>": "the model's directory or hub id",
    "<DS_CONFIG.json>": "the DeepSpeed config file",
    "<IMAGE>": "the container image the job runs in",
}
_DATA_RE = re.compile("|".join(re.escape(name) for name in _DATA))
# the launch flags that give a placeholder its value (the HF Trainer's, Lightning's, DeepSpeed's)
_DATA_FLAGS = {
    "<OUTPUT_DIR>": ("output_dir", "output-dir", "save_dir", "trainer.default_root_dir"),
    "<CHECKPOINT_DIR>": ("checkpoint_dir", "checkpoint-dir", "ckpt_dir", "save_dir"),
    "<MODEL_DIR>": ("model_name_or_path", "model-name-or-path", "model_path", "pretrained"),
    "<DS_CONFIG.json>": ("deepspeed", "deepspeed_config"),
}
# a checkpoint file named in the evidence (torch.load's argument, an "opened" message)
_CHECKPOINT_FILE_RE = re.compile(
    r"(?<![\w.])(?P<path>(?:[~/.]|[\w-]+/)?[\w./~-]{0,200}\.(?:pt|pth|ckpt|bin|safetensors))\b"
)


@dataclass
class _Notes:
    """What the written command leaves to the reader: placeholders to fill, defaults assumed."""

    placeholders: dict[str, str] = field(default_factory=dict)
    assumed: list[str] = field(default_factory=list)

    def placeholder(self, name: str, meaning: str) -> str:
        self.placeholders.setdefault(name, meaning)
        return name

    def text(self) -> str:
        out = ""
        if self.placeholders:
            out += "\n# placeholders: " + "; ".join(
                f"{k} = {v}" for k, v in self.placeholders.items()
            )
        if self.assumed:
            out += "\n# assumed: " + "; ".join(self.assumed)
        return out


def _bytes(value: str, unit: str) -> float:
    return float(value) * _UNITS.get(unit[0], 1)


def oom_figures(evidence: list[EvidenceLine]) -> tuple[float, float, float] | None:
    """(requested, free, allocated) in bytes, from the OOM line among the evidence."""
    for line in evidence:
        m = _OLD_OOM_RE.search(line.text)
        if m:
            req, _, alloc, free = (_bytes(m.group(i), m.group(i + 1)) for i in (1, 3, 5, 7))
            return req, free, alloc
        m = _NEW_OOM_RE.search(line.text)
        if m:
            req, _, free, alloc = (_bytes(m.group(i), m.group(i + 1)) for i in (1, 3, 5, 7))
            return req, free, alloc
    return None


def cut_batch(batch: int, figures: tuple[float, float, float] | None) -> int:
    """The micro-batch that fits: activations scale with it, so cut by what was free over what
    was needed (allocated + requested), with a tenth kept spare; half when no figures."""
    if figures is None:
        return max(1, batch // 2)
    requested, free, allocated = figures
    needed = allocated + requested
    if needed <= 0:
        return max(1, batch // 2)
    fits = math.floor(batch * 0.9 * (allocated + free) / needed)
    return max(1, min(batch - 1, fits))


def _flag_value(command: str, flags: tuple[str, ...]) -> str | None:
    for flag in flags:
        m = re.search(rf"(?:^|\s)--{re.escape(flag)}[= ](?P<v>[^\s'\";|&<>]+)", command)
        if m is not None and not m.group("v").startswith("-"):
            return m.group("v")
    return None


def _data_value(name: str, launch: Launch | None, evidence: list[EvidenceLine]) -> str | None:
    """The value the log shows for a data placeholder, or None."""
    flags = _DATA_FLAGS.get(name)
    if flags and launch is not None and launch.command:
        shown = _flag_value(launch.command, flags)
        if shown is not None:
            return shown
    if name in ("<CHECKPOINT.pt>", "<CHECKPOINT_DIR>"):
        for line in evidence:
            m = _CHECKPOINT_FILE_RE.search(line.text)
            if m is not None:
                path = m.group("path")
                if name == "<CHECKPOINT.pt>":
                    return path
                return path.rpartition("/")[0] or "."
    return None


def _fill_data(
    command: str, launch: Launch | None, evidence: list[EvidenceLine], notes: _Notes
) -> str:
    """Each data placeholder replaced by the log's value, or left and named in the notes."""

    def fill(m: re.Match[str]) -> str:
        name = m.group(0)
        value = _data_value(name, launch, evidence)
        if value is not None:
            return value
        return notes.placeholder(name, f"{_DATA[name]} (the log does not show it)")

    return _DATA_RE.sub(fill, command)


def _written(command: str) -> set[str]:
    return {m.group("path") for m in _WRITTEN_RE.finditer(command)}


def _catalogue_launch(command: str) -> re.Match[str] | None:
    """The catalogue command's launch of the user's script (not of a script it writes)."""
    written = _written(command)
    return next((m for m in _LAUNCH_RE.finditer(command) if m["script"] not in written), None)


def _log_launch(launch: Launch | None, notes: _Notes) -> tuple[str, str] | None:
    """(the launcher, its flags and the script; the script's own arguments) as the log shows
    them; None when the log shows neither a launcher nor a script."""
    if launch is None or not (launch.launcher or launch.script):
        return None
    command, script = launch.command, launch.script
    if command and script and script in command:
        end = command.index(script) + len(script)
        args = _ARGS_RE.match(command, end)
        return command[:end], args.group(0).strip() if args else ""
    script = script or notes.placeholder(SCRIPT, "your training script (the log does not name it)")
    if launch.launcher is None:
        notes.assumed.append("python runs the script (the log shows no launch command)")
    launcher = launch.launcher or "python"
    flag, default = _LAUNCHER_FLAGS.get(launcher, (None, None))
    if flag is None:
        return f"{launcher} {script}", ""
    if launch.world_size:
        return f"{launcher} {flag.format(n=launch.world_size)} {script}", ""
    notes.assumed.append(
        f"{launcher} uses every GPU of the machine (the log does not show how many)"
    )
    if default is None:
        return f"{launcher} {script}", ""
    return f"{launcher} {flag.format(n=default)} {script}", ""


def _merge_args(log_args: str, catalogue_args: str) -> str:
    """The log's arguments with the catalogue's flags set (a flag both have takes the
    catalogue's value); a script whose arguments are not the HF Trainer's keeps its own, the
    batch flag excepted (set by _set_batch)."""
    out = log_args
    if log_args and not _HF_ARGS_RE.search(log_args):
        return log_args
    for m in re.finditer(r"(--[\w.-]+)(?:[= ]((?!--)[^\s]+))?", catalogue_args):
        flag, value = m.group(1), m.group(2)
        present = re.search(rf"{re.escape(flag)}(?:[= ](?!--)[^\s]+)?(?=\s|$)", out)
        text = f"{flag} {value}" if value is not None else flag
        if present:
            out = out[: present.start()] + text + out[present.end() :]
        else:
            out = f"{out} {text}".strip()
    return out


def _rewrite_launch(
    command: str, launch: Launch | None, log: tuple[str, str] | None, notes: _Notes
) -> str:
    """The command with the log's launch (`log`, see _log_launch) in place of the catalogue's,
    and the user's script named as the log names it, or a placeholder."""
    m = _catalogue_launch(command)
    if m is not None and log is not None:
        head, log_args = log
        if launch is not None and launch.launcher:
            head = _with_launcher_flags(head, launch.launcher, m)
        args = _merge_args(log_args, m.group("args"))
        command = command[: m.start()] + f"{head} {args}".rstrip() + command[m.end() :]
    if "train.py" in _written(command) or not _GENERIC_SCRIPT_RE.search(command):
        return command
    script = launch.script if launch is not None and launch.script else None
    name = script or notes.placeholder(SCRIPT, "your training script (the log does not name it)")
    return _GENERIC_SCRIPT_RE.sub(lambda _: name, command)


_FLAG_RE = re.compile(r"--?(?P<name>[\w.-]+)(?:[= ](?!-)[^\s;|&]+)?")
# the process count is the log's (or the assumed one), never the catalogue's example
_COUNT_FLAGS = frozenset({"nproc_per_node", "nproc-per-node", "num_gpus", "num_processes"})


def _with_launcher_flags(head: str, launcher: str, m: re.Match[str]) -> str:
    """The log's launch with the catalogue's launcher flags it lacks (torchrun's `--tee 3
    --log-dir …` that the verification reads back), when both use the same launcher."""
    generic = m.group("launch")[: m.start("script") - m.start("launch")]
    if not generic.startswith(launcher + " "):
        return head
    have = {f.group("name") for f in _FLAG_RE.finditer(head)}
    extra = [
        f.group(0)
        for f in _FLAG_RE.finditer(generic[len(launcher) :])
        if f.group("name") not in have and f.group("name") not in _COUNT_FLAGS
    ]
    if not extra:
        return head
    before, _, script = head.rpartition(" ")
    return f"{before} {' '.join(extra)} {script}"


def _own_modules(command: str, launch: Launch | None, notes: _Notes) -> str:
    """Imports from modules that are neither the standard library nor a known library are the
    user's own code, which the log does not show: their module becomes a placeholder."""
    own = [m for m in _IMPORT_RE.finditer(command) if not _is_library(m.group("module"))]
    if not own:
        return command
    names = sorted({n.split(" as ")[0].strip() for m in own for n in m.group("names").split(",")})
    where = f"the module of {launch.script}" if launch and launch.script else "your training code"
    notes.placeholder(
        MODULE,
        f"{where} that defines {', '.join(names)} (the log does not show them; write them if "
        "your code has none)",
    )
    for m in reversed(own):
        command = command[: m.start("module")] + MODULE + command[m.end("module") :]
    return command


def _is_library(module: str) -> bool:
    top = module.split(".")[0]
    return top in _LIBRARIES or top in sys.stdlib_module_names


def _set_batch(
    command: str,
    slug: str,
    launch: Launch | None,
    evidence: list[EvidenceLine],
    notes: _Notes,
) -> str:
    if slug not in OOM_CLASSES:
        return command
    m = _BATCH_FLAG_RE.search(command)
    if m is None:
        return command
    batch = launch.batch_size if launch is not None else None
    if batch is None:
        notes.placeholder(
            MICRO_BATCH,
            "a micro-batch below the one that ran out of memory (the log does not show it)",
        )
        return command[: m.start("value")] + MICRO_BATCH + command[m.end("value") :]
    new = cut_batch(batch, oom_figures(evidence))
    command = command[: m.start("value")] + str(new) + command[m.end("value") :]
    accum = _ACCUM_FLAG_RE.search(command)
    if accum:
        # the same effective batch: the cut is made up with accumulation over the log's own
        shown = _ACCUM_FLAG_RE.search(launch.command or "") if launch is not None else None
        steps = math.ceil((int(shown.group("value")) if shown else 1) * batch / new)
        command = command[: accum.start("value")] + str(steps) + command[accum.end("value") :]
    return command


def fix_command(
    command: str, *, slug: str, launch: Launch | None, evidence: list[EvidenceLine]
) -> str:
    """The catalogue's fix command with the log's own launch in place of the generic one."""
    if not command:
        return command
    notes = _Notes()
    log = _log_launch(launch, notes)
    written = _own_modules(_rewrite_launch(command, launch, log, notes), launch, notes)
    if _catalogue_launch(command) is not None:
        written = _set_batch(written, slug, launch, evidence, notes)
    elif log is not None:
        rerun = f"{log[0]} {log[1]}".strip()
        written = f"{written}\n# then rerun as the log launched it:\n{rerun}"
    return _fill_data(written, launch, evidence, notes) + notes.text()


def verification_command(
    command: str, *, launch: Launch | None, evidence: list[EvidenceLine] | None = None
) -> str:
    """The catalogue's verification command, runnable as printed, or marked as a template with
    what to fill in: the user's script when the log does not name it, the module of names from
    the user's own code (which the log does not show), a data path the log does not show; a
    generic launch becomes the log's."""
    if not command:
        return command
    notes = _Notes()
    log = _log_launch(launch, notes) if _catalogue_launch(command) is not None else None
    written = _own_modules(_rewrite_launch(command, launch, log, notes), launch, notes)
    written = _fill_data(written, launch, evidence or [], notes)
    if notes.assumed:
        written += "\n# assumed: " + "; ".join(notes.assumed)
    if not notes.placeholders:
        return written
    fill = "; ".join(f"{k}: {v}" for k, v in notes.placeholders.items())
    return f"# TEMPLATE — fill in {fill}\n{written}"
