"""What a log shows of how the run was launched: the launcher, the script, the command line, the
micro-batch size and the world size. Remediation writes the fix and verification commands with
these (rootcause/remediation.py), and marks what the log does not show as a placeholder.

The scan feeds only the lines its `launch` marker flags (engine/scanning.py); the first value of
each fact wins, and each regex reads a bounded head of the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# The line the scanner flags for `observe` (one Hyperscan pattern among the engine's markers).
MARKER = (
    r"\.py\"?,? line \d+, in <module>|\.py FAILED|\bcmd = |sigkill_handler\] \[|"
    r"\b(?:torchrun|deepspeed|accelerate launch|horovodrun|mpirun|srun|lightning run model|"
    r"fabric run|python3?(?:\.\d+)?)\s"
    r"[^\n]{0,300}\.py\b|torch/distributed/(?:run|launch)\.py|accelerate/commands/launch\.py|"
    r"deepspeed/launcher|\[launch\.py:\d+:main\]|ChildFailedError|lightning/(?:pytorch/)?trainer/|"
    r"batch_size['\"]?\s{0,2}[:=]\s{0,2}\d|--nproc[_-]per[_-]node[= ]\d|--num_gpus[= ]\d|"
    r"world_size['\"]?\s{0,2}[:=]\s{0,2}\d"
)
HEAD = 2000
_SCRIPT = r"(?P<script>[\w./<>~-]{0,200}?[\w-]+\.py)\b"
# A command line as typed: an optional env prefix, the launcher and its flags, the script, its
# arguments (a shell prompt before it is dropped, and bash -x's "+ "); srun, mpirun and horovodrun
# wrap the python command that runs the script, which stays part of the launch
_COMMAND_RE = re.compile(
    r"(?:^|[$#>+]\s)(?P<cmd>(?:[A-Z_][A-Z0-9_]*=\S+\s+){0,6}"
    r"(?P<launcher>torchrun|deepspeed|accelerate launch|horovodrun|mpirun|srun|"
    r"lightning run model|fabric run|"
    r"python3?(?:\.\d+)? -m torch\.distributed\.(?:run|launch)|python3?(?:\.\d+)?)"
    rf"\s(?:[^\n]{{0,300}}?\s)?{_SCRIPT}[^\n]{{0,600}})"
)
# DeepSpeed's runner: "cmd = /usr/bin/python -u -m deepspeed.launcher.launch ... train.py --x"
_DS_CMD_RE = re.compile(
    rf"\bcmd = \S+ -u -m deepspeed\.launcher\.launch [^\n]*?\s{_SCRIPT}(?P<args>[^\n]{{0,600}})"
)
# DeepSpeed's launcher repeating a worker's command: ['/usr/bin/python', '-u', 'train.py', ...]
# (a long list is cut: its last, partial argument is dropped)
_DS_LIST_RE = re.compile(
    rf"sigkill_handler\] \['[^']*', '-u', '{_SCRIPT}'(?P<args>[^\]\n]{{0,1200}})(?P<end>\])?"
)
_SUMMARY_RE = re.compile(rf"^\s*{_SCRIPT} FAILED")
_MODULE_FRAME_RE = re.compile(rf'File "{_SCRIPT}", line \d+, in <module>')
# frames of launchers and libraries, not the user's script
_NOT_USER_RE = re.compile(
    r"site-packages|dist-packages|/bin/|torch/distributed/|/deepspeed/|/accelerate/|runpy\.py"
)
_LAUNCHER_HINTS = (
    (
        "deepspeed",
        re.compile(
            r"deepspeed/launcher|deepspeed\.launcher|\[launch\.py:\d+:main\]|sigkill_handler\] \["
        ),
    ),
    ("accelerate launch", re.compile(r"accelerate/commands/launch\.py")),
    ("torchrun", re.compile(r"torch/distributed/(?:run|launch)\.py|ChildFailedError")),
)
_BATCH_RE = re.compile(
    r"--(?:\w+\.)*(?:per_device_train_batch_size|per-device-train-batch-size|train_batch_size|"
    r"micro_batch_size|batch[_-]size|bs)[= ](?P<a>\d{1,6})\b|"
    r"\b(?:per_device_train_batch_size|train_micro_batch_size_per_gpu|micro_batch_size|"
    r"batch_size)['\"]?\s{0,2}[:=]\s{0,2}(?P<b>\d{1,6})\b"
)
_WORLD_RE = re.compile(
    r"--nproc[_-]per[_-]node[= ](?P<a>\d{1,5})\b|--num_gpus[= ](?P<b>\d{1,5})\b|"
    r"\bworld_size['\"]?\s{0,2}[:=]\s{0,2}(?P<c>\d{1,5})\b|\s-np? (?P<d>\d{1,5})\b|"
    # Lightning's CLI (--trainer.devices 2), srun's tasks, accelerate's processes
    r"--(?:trainer\.)?devices[= ](?P<e>\d{1,5})\b|--ntasks(?:-per-node)?[= ](?P<f>\d{1,5})\b|"
    r"--num_processes[= ](?P<g>\d{1,5})\b"
)


def _without_unpaired_quotes(command: str) -> str:
    """A command line quoted in prose (`torchrun … train.py`, "python train.py") without the
    quote that closed the prose; a quote that closes one of its own arguments (`--password
    '<SECRET>'`) stays."""
    while command and command[-1] in "`'\"" and command.count(command[-1]) % 2 == 1:
        command = command[:-1].rstrip()
    return command


@dataclass
class RunFacts:
    launcher: str | None = None  # torchrun, deepspeed, accelerate launch, python, ...
    script: str | None = None  # as the log names it (a path, or a file name)
    command: str | None = None  # the launch command line as the log shows it
    batch_size: int | None = None
    world_size: int | None = None
    # a launcher named by its own lines (frames, summaries), when no command line shows one
    _hinted: str | None = None

    def observe(self, text: str) -> None:
        head = text[:HEAD]
        if self.command is None:
            self._command(head)
            if self.command is not None:
                head = f"{self.command} {head}"  # its flags are facts too
        if self.script is None:
            for regex in (_SUMMARY_RE, _MODULE_FRAME_RE):
                m = regex.search(head)
                if m and not _NOT_USER_RE.search(m.group("script")):
                    self.script = m.group("script")
                    break
        if self._hinted is None:
            self._hinted = next((name for name, rx in _LAUNCHER_HINTS if rx.search(head)), None)
        if self.batch_size is None:
            b = _BATCH_RE.search(head)
            if b:
                self.batch_size = int(b.group("a") or b.group("b"))
        if self.world_size is None:
            w = _WORLD_RE.search(head)
            if w:
                self.world_size = int(next(g for g in w.groups() if g is not None))

    def _command(self, head: str) -> None:
        m = _DS_CMD_RE.search(head) or _DS_LIST_RE.search(head)
        if m:
            args = m.group("args")
            if "end" in m.groupdict() and m.group("end") is None:
                args = args[: args.rfind(",")]
            args = _DS_LOCAL_RANK_RE.sub("", args)
            args = " ".join(a.strip().strip("'") for a in args.split(",") if a.strip())
            self.launcher, self.script = "deepspeed", m.group("script")
            self.command = f"deepspeed {m.group('script')} {args}".strip()
            return
        m = _COMMAND_RE.search(head)
        if m:
            launcher = m.group("launcher")
            self.launcher = (
                "python" if launcher.startswith("python") and "-m" not in launcher else launcher
            )
            if self.launcher.startswith("python") and "-m torch.distributed" in launcher:
                self.launcher = "torchrun"
            self.script = m.group("script")
            self.command = _without_unpaired_quotes(m.group("cmd").strip())

    @property
    def launcher_name(self) -> str | None:
        """The launcher: as the command line shows it, else as its own lines name it."""
        if self.launcher is not None and self.launcher != "python":
            return self.launcher
        return self._hinted or self.launcher


_DS_LOCAL_RANK_RE = re.compile(r",?\s*'--local_rank=\d+'")
