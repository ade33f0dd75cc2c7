"""What `run` and `watch` do with a diagnosis or a stall: print it (masked) on standard error,
post it to the service when one is configured, and remember what the exit code needs.

Standard error is shared with the job's own stderr passing through: every write here takes
the same lock as the pipes' writes (`Output`), so our report never lands inside a line of the
job's output block.
"""

from __future__ import annotations

import gzip
import io
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from rootcause.cli.errors import CliError, ExitCode, overall
from rootcause.cli.formats import render_text
from rootcause.cli.results import FileResult
from rootcause.engine.scanning import rank_from_name
from rootcause.evidence import parse_line
from rootcause.live import bundle as bundles
from rootcause.live.monitor import Diagnosis, Monitor
from rootcause.masking import Masker
from rootcause.masking.masker import WHEN_NEEDED


class Output:
    """Writes to file descriptors under one lock: the job's blocks and our reports."""

    def __init__(self) -> None:
        self.lock = threading.Lock()

    def write(self, fd: int, data: bytes) -> None:
        with self.lock:
            _write_all(fd, data)

    def report(self, text: str) -> None:
        self.write(2, ("\n" + text.rstrip("\n") + "\n").encode("utf-8", "replace"))


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except BrokenPipeError:
            return  # whoever reads us went away; the job keeps running
        except InterruptedError:
            continue
        view = view[written:]


@dataclass
class Settings:
    """How `run` and `watch` report: the service (empty: offline) and its options."""

    server: str = ""
    token: str = ""
    wait: float = 300.0
    key: str = ""
    labels: list[str] = field(default_factory=list)
    bundle_dir: str = ""


@dataclass
class Session:
    """One job's reports; what was decided so far gives the exit code of `--exit-code diagnosis`."""

    monitor: Monitor
    output: Output
    settings: Settings
    decided: FileResult | None = None
    final: FileResult | None = None
    errors: list[CliError] = field(default_factory=list)
    bundle: bundles.Bundle | None = None
    _posting: list[threading.Thread] = field(default_factory=list)

    def check(self, *, running: bool) -> bool:
        """A due diagnosis, run and reported if it decides a failure; True when it did."""
        if self.decided is not None or not self.monitor.due(ended=not running):
            return False
        found = self.monitor.diagnose()
        if not found.decides:
            return False
        self.decided = found.result
        state = "while the job runs" if running else "as the job ended"
        self.output.report(f"rootcause: failure diagnosed {state}\n{render_text(found.result)}")
        self._post(found)
        return True

    def finish(self, *, failed: bool) -> None:
        """At the end: diagnose what is left if nothing decided yet and the job failed."""
        if self.decided is None and failed:
            found = self.monitor.diagnose()
            self.final = found.result
            self.output.report(
                f"rootcause: diagnosis of the job's output\n{render_text(found.result)}"
            )
            if found.result.failure is not None:
                self._post(found)
        for thread in self._posting:
            thread.join(timeout=self.settings.wait + 60)

    def _post(self, found: Diagnosis) -> None:
        if not self.settings.server:
            return
        thread = threading.Thread(target=self._send, args=(found,), daemon=True)
        thread.start()
        self._posting.append(thread)

    def _send(self, found: Diagnosis) -> None:
        # imported here: httpx is most of the start-up time, and offline never talks HTTP
        from rootcause.cli.client import Service, ci_metadata, idempotency_key, submit, wait_for
        from rootcause.cli.results import from_record

        name = self.monitor.name
        try:
            service = Service(
                self.settings.server,
                self.settings.token,
                self.settings.wait,
                metadata=ci_metadata(self.settings.labels),
            )
            body = _gzipped(found.texts)
            with service.client() as client:
                record, location = submit(
                    service,
                    client,
                    name=name,
                    filename="live.log",
                    body=body,
                    key=idempotency_key(self.settings.key, [name]),
                    on_upload=lambda _: None,
                )
                record = wait_for(
                    service,
                    client,
                    name=name,
                    record=record,
                    location=location,
                    on_state=lambda _: None,
                )
            posted = from_record(record, name)
        except CliError as exc:
            self.errors.append(exc)
            self.output.report(f"rootcause: warning: not posted: {exc}")
            return
        cls = posted.failure.slug if posted.failure else "no known failure"
        where = f" ({posted.id})" if isinstance(posted.id, str) else ""
        self.output.report(f"rootcause: posted to {self.settings.server}: {cls}{where}")

    def stall(self, *, root_pid: int | None, env: dict[str, str], idle: float) -> None:
        """No progress: the hang bundle (with process access) or each rank's last lines."""
        last = self.monitor.last_lines()
        head = f"rootcause: no progress for {idle:.0f} s (no new output, no step counter moving)"
        shown = _masked_last_lines(last)
        if root_pid is None:
            self.output.report(
                f"{head}\n{shown}\n"
                "rootcause: watching files gives no process access; `rootcause run` (or py-spy "
                "dump of each rank and the flight recorder's dumps) would add each rank's stack "
                "and its last collectives, which name the rank that stalled and where"
            )
            return
        self.output.report(f"{head}; collecting a hang bundle")
        directory = bundles.bundle_directory(self.settings.bundle_dir)
        self.bundle = bundles.collect_bundle(
            directory=directory, root_pid=root_pid, env=env, last_lines=last
        )
        notes = "\n".join(f"  {n}" for n in self.bundle.notes())
        self.output.report(f"{shown}\nrootcause: hang bundle in {directory}\n{notes}")
        self.report_verdict(directory)

    def report_verdict(self, directory: Path) -> None:
        try:
            verdict = bundles.diagnose_bundle(directory)
        except Exception as exc:  # the analyser's own failure must not end the job's run
            self.output.report(f"rootcause: the hang analyser failed on {directory}: {exc}")
            return
        if verdict is None:
            self.output.report(
                "rootcause: the hang verdict needs the hang analyser (rootcause.hangs), which "
                "this install lacks; the bundle keeps everything it reads"
            )
            return
        self.output.report(f"rootcause: hang verdict\n{render_text(verdict)}")
        if verdict.failure is not None and self.decided is None:
            self.decided = verdict

    def exit_code(self) -> ExitCode:
        """The CLI's table (`--exit-code diagnosis`): 1 diagnosed, 0 nothing known, 3/4 posting."""
        codes = [e.code for e in self.errors]
        result = self.decided or self.final
        if result is not None and result.failure is not None:
            codes.append(ExitCode.DIAGNOSED)
        return overall(codes)


def _masked_last_lines(last: dict[int | None, list[str]]) -> str:
    """Each rank's last lines, masked as a log is (they are printed)."""
    masker = Masker(analyzer=WHEN_NEEDED)
    order = sorted(last, key=lambda r: -1 if r is None else r)
    blocks = ["\n".join(last[r]) + "\n" for r in order]
    for block in blocks:
        masker.learn(block)
    out = []
    for rank, block in zip(order, blocks, strict=True):
        name = "lines naming no rank" if rank is None else f"rank {rank}"
        shown = masker.mask(block).rstrip("\n").split("\n")[-5:]
        out.append(f"  {name}, last lines:")
        out.extend(f"    {line}" for line in shown)
    return "\n".join(out) if out else "  (no output at all)"


def _gzipped(texts: list[tuple[str, str]]) -> io.BytesIO:
    """The masked buffer as one upload; with several files, each line without a rank gets its
    file's (as `diagnose --merge` sends per-rank logs)."""
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=6, mtime=0) as packed:
        for index, (name, text) in enumerate(texts):
            if len(texts) == 1:
                packed.write(text.encode("utf-8", "surrogatepass"))
                continue
            for line in text.splitlines():
                if line.strip() and parse_line(line).rank is None:
                    line = f"[rank{rank_from_name(name, index)}]: {line}"
                packed.write((line + "\n").encode("utf-8", "surrogatepass"))
    out.seek(0)
    return out
