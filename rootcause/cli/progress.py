"""What `rootcause diagnose` shows on standard error while it reads, uploads and waits.

On a terminal a progress bar (rich, which Typer brings); elsewhere, as in a CI log, one quiet
line per change of state. Standard output carries nothing but the result.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING

# rich is imported when a bar is shown: it is a fifth of the start-up of `diagnose --offline`.
if TYPE_CHECKING:
    from rich.progress import TaskID


def size_text(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 100_000 else f"{n / 1e3:.1f} kB"


class Reporter:
    """One line per state change on standard error (the non-terminal form)."""

    def __init__(self) -> None:
        self._last: dict[str, str] = {}

    def __enter__(self) -> Reporter:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None

    def note(self, message: str) -> None:
        """A line for the user: what was kept of a log, a warning."""
        print(f"rootcause: {message}", file=sys.stderr, flush=True)

    def bar(self, name: str, what: str, total: int | None) -> Callable[[int], None]:
        """Work measured in bytes (reading a big log, uploading); returns a callback taking the
        bytes done so far."""
        size = f" {size_text(total)}" if total else ""
        self.state(name, f"{what}{size}")
        return _ignore

    def state(self, name: str, status: str, percent: int | None = None) -> None:
        """The diagnosis moved on (queued, masking, matching ...): one line when it changes."""
        if self._last.get(name) != status:
            self._last[name] = status
            self.note(f"{name}: {status}")

    def done(self, name: str) -> None:
        self._last.pop(name, None)


def _ignore(done: int) -> None:
    return None


def escape(text: str) -> str:
    from rich.markup import escape as rich_escape

    return rich_escape(text)


class TerminalReporter(Reporter):
    """A rich progress bar per log, removed when the log is done."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        super().__init__()
        self.console = Console(stderr=True)
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[figure]}"),
            TimeElapsedColumn(),
            console=self.console,
            transient=True,
        )
        self._tasks: dict[str, TaskID] = {}

    def __enter__(self) -> TerminalReporter:
        self.progress.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.progress.stop()

    def note(self, message: str) -> None:
        self.console.print(f"rootcause: {escape(message)}", highlight=False)

    def _task(self, name: str) -> TaskID:
        task = self._tasks.get(name)
        if task is None:
            task = self._tasks[name] = self.progress.add_task(name, total=None, figure="")
        return task

    def bar(self, name: str, what: str, total: int | None) -> Callable[[int], None]:
        task = self._task(name)
        self.progress.reset(task, total=total, description=escape(f"{name}: {what}"), figure="")

        def advance(done: int) -> None:
            figure = f"{size_text(done)} of {size_text(total)}" if total else size_text(done)
            self.progress.update(task, completed=done, figure=figure)

        return advance

    def state(self, name: str, status: str, percent: int | None = None) -> None:
        task = self._task(name)
        if self._last.get(name) != status:
            self._last[name] = status
            self.progress.reset(task, total=100, description=escape(f"{name}: {status}"))
        self.progress.update(
            task, completed=percent or 0, figure=f"{percent}%" if percent is not None else ""
        )

    def done(self, name: str) -> None:
        super().done(name)
        task = self._tasks.pop(name, None)
        if task is not None:
            self.progress.remove_task(task)


def reporter() -> Reporter:
    """The bar on a terminal, lines elsewhere."""
    return TerminalReporter() if sys.stderr.isatty() else Reporter()
