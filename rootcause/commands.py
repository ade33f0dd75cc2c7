"""The catalogue's fix and verification commands rewritten for the log in hand.

A catalogue command is written for a generic run (`torchrun --nproc_per_node=8 train.py`,
`python train.py --per_device_train_batch_size 4`). What the log shows of its own launch
(rootcause.result.Launch: the launcher and its flags, the script, the micro-batch and world
sizes) replaces that part; what it does not show becomes a `<PLACEHOLDER>`, named in a comment
line under the command. An OOM's memory figures say how far to cut the micro-batch. A
verification command that imports names the log does not show (`from train import
build_model`) is marked as a template, its module a placeholder.
"""

from __future__ import annotations

import math
import re

from rootcause.result import EvidenceLine, Launch

# The launch part of a catalogue command: launcher, its flags, the script.
_LAUNCH_RE = re.compile(
    r"(?P<launch>(?:torchrun|deepspeed|accelerate launch|python3?(?: -m torch\.distributed\.run)?)"
    r"(?:\s+--?[\w.-]+(?:[= ](?!-)[^\s;|&]+)?)*?\s+(?P<script>[\w./<>-]+\.py))"
    # the script's arguments, up to a redirection, a pipe or the next command
    r"(?P<args>(?:\s+(?!\d*>|&&|\|\||;|\|)[^\s;|&>]+)*)"
)
_IMPORT_RE = re.compile(r"\bfrom (?P<module>[A-Za-z_][\w.]*) import (?P<names>[\w, ]+)")
# modules a verification may import: the standard library and the usual packages
_KNOWN_MODULES = re.compile(
    r"^(?:torch|os|sys|json|time|datetime|math|psutil|numpy|transformers|deepspeed|accelerate|"
    r"bitsandbytes|safetensors|subprocess|pathlib|collections|gc|re|socket|shutil)(?:\.|$)"
)
_BATCH_FLAG_RE = re.compile(
    r"(?P<flag>--(?:per_device_train_batch_size|train_batch_size|micro_batch_size|"
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
_LAUNCHER_FLAGS = {
    "torchrun": "--nproc_per_node={n}",
    "deepspeed": "--num_gpus={n}",
    "accelerate launch": "--num_processes={n}",
}


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


def _launch_of_log(launch: Launch, placeholders: dict[str, str]) -> tuple[str, str]:
    """(launcher + flags + script, the script's own arguments) as the log shows them."""
    if launch.command:
        m = _LAUNCH_RE.search(launch.command)
        if m:
            return m.group("launch"), m.group("args").strip()
    launcher = launch.launcher or "python"
    script = launch.script
    if script is None:
        script = "<SCRIPT.py>"
        placeholders["<SCRIPT.py>"] = "your training script (the log does not name it)"
    flag = _LAUNCHER_FLAGS.get(launcher)
    if flag is None:
        return f"{launcher} {script}", ""
    if launch.world_size:
        return f"{launcher} {flag.format(n=launch.world_size)} {script}", ""
    placeholders["<NPROC>"] = "processes per node (the log does not show it)"
    return f"{launcher} {flag.format(n='<NPROC>')} {script}", ""


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


def _set_batch(
    command: str,
    slug: str,
    launch: Launch | None,
    evidence: list[EvidenceLine],
    placeholders: dict[str, str],
) -> str:
    if slug not in OOM_CLASSES:
        return command
    m = _BATCH_FLAG_RE.search(command)
    batch = launch.batch_size if launch is not None else None
    if batch is None and m and m.group("value").isdigit() and launch and launch.command:
        batch = int(m.group("value")) if m.group("value") in launch.command else None
    if m is None:
        return command
    if batch is None:
        placeholders["<MICRO_BATCH>"] = (
            "a micro-batch below the one that ran out of memory (the log does not show it)"
        )
        return command[: m.start("value")] + "<MICRO_BATCH>" + command[m.end("value") :]
    new = cut_batch(batch, oom_figures(evidence))
    command = command[: m.start("value")] + str(new) + command[m.end("value") :]
    accum = _ACCUM_FLAG_RE.search(command)
    if accum:
        # the same effective batch: the cut is made up with accumulation
        steps = max(int(accum.group("value")), math.ceil(batch / new))
        command = command[: accum.start("value")] + str(steps) + command[accum.end("value") :]
    return command


def _notes(placeholders: dict[str, str]) -> str:
    if not placeholders:
        return ""
    return "\n# placeholders: " + "; ".join(f"{k} = {v}" for k, v in placeholders.items())


def fix_command(
    command: str, *, slug: str, launch: Launch | None, evidence: list[EvidenceLine]
) -> str:
    """The catalogue's fix command with the log's own launch in place of the generic one."""
    if not command or launch is None or not (launch.launcher or launch.script):
        return command
    placeholders: dict[str, str] = {}
    m = _LAUNCH_RE.search(command)
    log_launch, log_args = _launch_of_log(launch, placeholders)
    if m is None:
        rerun = f"{log_launch} {log_args}".strip()
        return f"{command}\n# then rerun as the log launched it:\n{rerun}{_notes(placeholders)}"
    args = _merge_args(log_args, m.group("args"))
    written = command[: m.start()] + f"{log_launch} {args}".rstrip() + command[m.end() :]
    written = _set_batch(written, slug, launch, evidence, placeholders)
    return written + _notes(placeholders)


def verification_command(command: str, *, launch: Launch | None) -> str:
    """The catalogue's verification command, runnable as printed, or marked as a template: an
    import of names from the user's own code (which the log does not show) becomes a
    placeholder module; a generic launch becomes the log's."""
    if not command:
        return command
    unknown = [
        m for m in _IMPORT_RE.finditer(command) if not _KNOWN_MODULES.match(m.group("module"))
    ]
    if launch is not None and (launch.launcher or launch.script):
        m = _LAUNCH_RE.search(command)
        if m and not unknown:
            placeholders: dict[str, str] = {}
            log_launch, log_args = _launch_of_log(launch, placeholders)
            args = _merge_args(log_args, m.group("args"))
            command = command[: m.start()] + f"{log_launch} {args}".rstrip() + command[m.end() :]
            command += _notes(placeholders)
    if not unknown:
        return command
    names = ", ".join(sorted({n.strip() for m in unknown for n in m.group("names").split(",")}))
    module = "<MODULE>"
    for m in reversed(unknown):
        command = command[: m.start("module")] + module + command[m.end("module") :]
    where = f"the module of {launch.script}" if launch and launch.script else "your training code"
    return (
        f"# TEMPLATE — fill in {module}: {where} that defines {names} (the log does not show "
        f"them; write them if your code has none)\n{command}"
    )
