"""The output formats of `diagnose`: text, json (JSON lines), github (annotations and a step
summary) and junit (an XML report). Standard output carries the result and nothing else."""

from __future__ import annotations

import html
import json
import os
import re
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

import msgspec
from msgspec import UnsetType

from rootcause.cli.errors import ExitCode, overall
from rootcause.cli.results import FileResult, Outcome
from rootcause.confidence import stated
from rootcause.result import HangSection, rank_sentence

FORMATS = ("text", "json", "github", "junit")
# GitHub shows at most 10 error annotations of a step; more would be dropped silently.
MAX_ANNOTATIONS = 10


def render_text(result: FileResult, server: str = "") -> str:
    out = [f"== {result.file}"]
    if result.failure is None:
        out.append("no known failure matched")
        # a failure of a kind no class covers may still name the rank its launcher saw fail
        if sentence := rank_sentence(result.initiating_rank, result.ranks):
            out.append(f"ranks:      {sentence}")
    else:
        f = result.failure
        out.append(f"class:      {f.slug} ({f.title}, {f.category})")
        out.append(f"confidence: {stated(f.confidence, f.confidence_words)}")
        out.append(f"root cause: {result.root_cause}")
        rank = result.initiating_rank
        out.append(f"initiating rank: {'n/a (single process)' if rank is None else rank}")
        if sentence := rank_sentence(rank, result.ranks):
            out.append(f"ranks:      {sentence}")
        for c in result.collateral:
            ranks = ", ".join(str(r) for r in c.ranks) or "-"
            out.append(f"collateral: {c.slug} on ranks {ranks}")
    if not isinstance(result.hang, UnsetType):
        out.extend(_hang_lines(result.hang))
    if result.evidence:
        out.append("evidence:")
        out.extend(
            f"  {e.file + ':' if isinstance(e.file, str) else ''}{e.line:>7}: {e.text}"
            for e in result.evidence
        )
    remediation = result.remediation
    if remediation:
        out.append("fix:")
        out.extend(f"  - {step}" for step in remediation.steps)
        out.append(f"  command: {remediation.command}")
        out.append(f"verify: {remediation.verification_command}")
    for fact in result.missing_facts:
        out.append(f"missing: {fact}")
    if result.encyclopedia_url and server:
        out.append(f"more: {server}{result.encyclopedia_url}")
    if isinstance(result.id, str):
        out.append(f"id: {result.id}")
    if isinstance(result.link, str):
        out.append(f"page: {result.link}")
    return "\n".join(out)


def rank_map_text(hang: HangSection) -> str:
    """The rank map in words: "culprit 7; waiting 0-6, 8-15; no dump 16"."""
    from rootcause.hangs.report import rank_states  # the hang reader only for a hang
    from rootcause.hangs.stacks import rank_ranges

    by_state: dict[str, list[int]] = {}
    for rank, state in rank_states(hang):
        by_state.setdefault(state, []).append(rank)
    words = {"culprit": "culprit", "waiting": "waiting", "missing": "no dump"}
    return "; ".join(
        f"{words[state]} {rank_ranges(by_state[state])}"
        for state in ("culprit", "waiting", "missing")
        if state in by_state
    )


def _hang_lines(hang: HangSection) -> list[str]:
    out = [f"hang verdict: {hang.verdict} ({hang.world_size} ranks): {hang.summary}"]
    if hang.world_size:
        out.append(f"  rank map: {rank_map_text(hang)}")
    out.extend(
        f"  culprit rank {c.rank} (confidence {c.confidence:.2f}): {c.reason}"
        for c in hang.culprits
    )
    d = hang.divergent
    if d is not None:
        out.append(f"  first divergent collective: process group {d.process_group}, seq {d.seq}")
        out.extend(
            f"    ranks {s.ranks}: {s.op} sizes {s.sizes} {','.join(s.dtypes)} ({s.state})"
            for s in d.sides
        )
        if d.missing_ranks:
            out.append(f"    never issued by ranks {d.missing_ranks}")
    if hang.stacks:
        out.append("  stacks:")
        out.extend(
            f"    rank{'s' if g.count > 1 else ''} {g.ranks}: in `{g.frame}` at {g.where} "
            f"({g.meaning_text})"
            for g in hang.stacks
        )
    return out  # the missing dumps are in missing_facts, printed below


def render_json(result: FileResult) -> str:
    return json.dumps(msgspec.to_builtins(result), ensure_ascii=False)


# -- GitHub: workflow commands and the step summary


def _escape_data(text: str) -> str:
    """A workflow command's message, as GitHub's toolkit escapes it."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    """A workflow command's property value (title, file): also `:` and `,`."""
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def workflow_command(kind: str, message: str, **properties: str | int | None) -> str:
    props = ",".join(
        f"{key}={_escape_property(str(value))}"
        for key, value in properties.items()
        if value is not None and value != ""
    )
    return f"::{kind}{' ' + props if props else ''}::{_escape_data(message)}"


def repository_path(path: str) -> str:
    """A path as GitHub's annotations want it: relative to the repository's root
    ($GITHUB_WORKSPACE, else the working directory). A path outside it, or standard input,
    stays as it is."""
    if path == "-":
        return path
    root = Path(os.environ.get("GITHUB_WORKSPACE") or os.getcwd()).resolve()
    absolute = Path(path) if os.path.isabs(path) else Path.cwd() / path
    try:
        return Path(os.path.normpath(absolute)).relative_to(root).as_posix()
    except ValueError:
        return path


def _where(result: FileResult) -> tuple[str, int | None]:
    """The file (relative to the repository) and line an annotation points at: the initiating
    rank's first error, else the first evidence line; a bundle's hang, the bundle (its evidence
    is the ranks' stacks)."""
    file, line = _where_given(result)
    return repository_path(file), line


def _where_given(result: FileResult) -> tuple[str, int | None]:
    if not isinstance(result.hang, UnsetType):
        return result.file, None
    if result.initiating_rank is not None:
        for row in result.ranks:
            if row.rank == result.initiating_rank:
                for e in result.evidence:
                    if e.line == row.first_error_line and isinstance(e.file, str):
                        return e.file, e.line
                return result.file.split(",")[0], row.first_error_line
    if result.evidence:
        first = result.evidence[0]
        return (first.file if isinstance(first.file, str) else result.file), first.line
    return result.file.split(",")[0], None


def github_annotations(outcomes: list[Outcome]) -> list[str]:
    """One ::error per distinct failure (class and initiating rank), at most MAX_ANNOTATIONS,
    then the logs that could not be diagnosed, and a note when some were left out."""
    groups: dict[tuple[str, int | None], list[FileResult]] = {}
    for o in outcomes:
        if o.result is not None and o.result.failure is not None:
            groups.setdefault((o.result.failure.slug, o.result.initiating_rank), []).append(
                o.result
            )
    lines: list[str] = []
    for results in groups.values():
        first = results[0]
        assert first.failure is not None
        file, line = _where(first)
        rank = first.initiating_rank
        title = f"{first.failure.title} ({first.failure.slug})"
        if rank is not None:
            title += f" on rank {rank}"
        message = first.root_cause or first.failure.title
        message += "\nConfidence: " + stated(
            first.failure.confidence, first.failure.confidence_words
        )
        if not isinstance(first.hang, UnsetType):
            message += "".join(f"\n{line.strip()}" for line in _hang_lines(first.hang)[1:])
        if first.remediation:
            message += f"\nFix: {first.remediation.command}"
            message += f"\nVerify: {first.remediation.verification_command}"
        if len(results) > 1:
            message += "\nAlso in: " + ", ".join(repository_path(r.file) for r in results[1:])
        if isinstance(first.link, str):
            message += f"\nDetails: {first.link}"
        lines.append(workflow_command("error", message, title=title, file=file, line=line))
    for o in outcomes:
        if o.error is not None:
            kind = "warning" if o.allowed else "error"
            title = "rootcause could not diagnose " + o.file
            lines.append(workflow_command(kind, str(o.error), title=title))
    errors = [line for line in lines if line.startswith("::error")]
    shown, hidden = errors[:MAX_ANNOTATIONS], len(errors) - MAX_ANNOTATIONS
    out = shown + [line for line in lines if not line.startswith("::error")]
    if hidden > 0:
        out.append(
            workflow_command(
                "warning",
                f"{hidden} more failure annotations were left out (GitHub shows "
                f"{MAX_ANNOTATIONS} per step); the job summary lists every log",
                title="rootcause",
            )
        )
    for o in outcomes:
        if o.result is not None and o.result.failure is None:
            out.append(
                workflow_command("notice", f"No known failure found in {o.file}", title="rootcause")
            )
    return out


# What can start markup inside a paragraph (line-start constructs cannot occur: _md joins lines).
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")


def _md(text: str) -> str:
    """Text from a log as Markdown that renders as the same text (no markup, no HTML).

    Catalogue text (titles, fix steps) is written in Markdown and goes in as it is."""
    return _MD_SPECIAL.sub(r"\\\1", html.escape(" ".join(text.split()), quote=False))


def _code_block(lines: list[str], lang: str = "") -> str:
    longest = max((len(m) for line in lines for m in re.findall(r"`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    return "\n".join([fence + lang, *lines, fence])


def step_summary(outcomes: list[Outcome], server: str = "") -> str:
    """The Markdown appended to $GITHUB_STEP_SUMMARY: per log, the class, the root cause, the
    fix, the verification command and a link to the encyclopedia."""
    out = ["## rootcause", "", "| log | diagnosis | initiating rank |", "| --- | --- | --- |"]
    for o in outcomes:
        r = o.result
        if r is None:
            verdict = "not diagnosed: " + ("outage (allowed)" if o.allowed else "error")
            rank = ""
        elif r.failure is None:
            verdict, rank = "no known failure found", ""
        else:
            verdict = f"**{r.failure.title}** (`{r.failure.slug}`)"
            rank = "" if r.initiating_rank is None else str(r.initiating_rank)
        out.append(f"| `{_md_code(o.file)}` | {verdict} | {rank} |")
    for o in outcomes:
        out.append("")
        r = o.result
        if r is None:
            out += [f"### `{_md_code(o.file)}`: not diagnosed", "", _md(str(o.error))]
            continue
        if r.failure is None:
            out += [f"### `{_md_code(o.file)}`: no known failure found", ""]
            out += [f"- {_md(fact)}" for fact in r.missing_facts]
            if isinstance(r.link, str):
                out += ["", f"[The diagnosis on rootcause]({r.link})"]
            continue
        f = r.failure
        ranks = rank_sentence(r.initiating_rank, r.ranks)
        out += [
            f"### `{_md_code(o.file)}`: {f.title}",
            "",
            f"Class `{f.slug}` ({f.category}), confidence"
            f" {_md(stated(f.confidence, f.confidence_words))}"
            + (f". {_md(ranks)}" if ranks else ""),
            "",
            f"**Root cause.** {_md(r.root_cause or '')}",
        ]
        if not isinstance(r.hang, UnsetType):
            out += ["", *_hang_markdown(r.hang)]
        elif r.collateral:
            out += [
                "",
                "Collateral: "
                + "; ".join(
                    f"`{c.slug}` on ranks {', '.join(map(str, c.ranks)) or '-'}"
                    for c in r.collateral
                ),
            ]
        if r.remediation:
            out += ["", "**Fix**", ""]
            out += [f"- {' '.join(step.split())}" for step in r.remediation.steps]
            out += ["", _code_block(r.remediation.command.splitlines(), "sh")]
            out += ["", "**Verify**", ""]
            out += [_code_block(r.remediation.verification_command.splitlines(), "sh")]
            if r.remediation.verification_expect:
                out += ["", f"Expect: {' '.join(r.remediation.verification_expect.split())}"]
        if isinstance(r.link, str):
            out += ["", f"[The diagnosis on rootcause]({r.link}) (say there whether it was right)"]
        if r.encyclopedia_url:
            link = f"{server}{r.encyclopedia_url}" if server else r.encyclopedia_url
            out += ["", f"[{f.title} in the encyclopedia]({link})"]
        if r.evidence:
            lines = [
                f"{e.file + ':' if isinstance(e.file, str) else ''}{e.line}: {e.text}"
                for e in r.evidence
            ]
            out += [
                "",
                "<details><summary>Evidence</summary>",
                "",
                _code_block(lines, "text"),
                "",
                "</details>",
            ]
    return "\n".join(out) + "\n"


def _hang_markdown(hang: HangSection) -> list[str]:
    """A bundle's hang in the step summary: the verdict, the rank map, the culprits, the first
    divergent collective and the grouped stacks (missing dumps follow with missing_facts)."""
    out = [
        f"**Hang verdict.** `{hang.verdict}` on {hang.world_size} ranks: {_md(hang.summary)}",
        "",
        f"Rank map: {_md(rank_map_text(hang))}",
    ]
    if hang.culprits:
        out += ["", "| culprit rank | confidence | why |", "| --- | --- | --- |"]
        out += [
            f"| {c.rank} | {c.confidence:.2f} | {_md(c.reason).replace('|', '/')} |"
            for c in hang.culprits
        ]
    d = hang.divergent
    if d is not None:
        out += ["", f"First divergent collective: process group `{d.process_group}`, seq {d.seq}"]
        out += [
            f"- ranks {s.ranks}: `{s.op}` sizes `{s.sizes}` {_md(','.join(s.dtypes))} ({s.state})"
            for s in d.sides
        ]
        if d.missing_ranks:
            out.append(f"- never issued by ranks {d.missing_ranks}")
    if hang.stacks:
        out += ["", "Stacks:", ""]
        out += [
            f"- rank{'s' if g.count > 1 else ''} {g.ranks}: in `{_md_code(g.frame)}` at "
            f"`{_md_code(g.where)}` ({_md(g.meaning_text)})"
            for g in hang.stacks
        ]
    out += [f"- missing: {_md(fact)}" for fact in hang.missing]
    return out


def _md_code(text: str) -> str:
    return text.replace("`", "'").replace("|", "\\|")


def write_github(outcomes: list[Outcome], server: str, out: TextIO) -> None:
    for line in github_annotations(outcomes):
        print(line, file=out)
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a", encoding="utf-8") as f:
            f.write(step_summary(outcomes, server))


# -- JUnit XML

# Characters XML 1.0 cannot carry at all (a log's escape sequences, NUL, stray surrogates).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _x(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def junit_report(outcomes: list[Outcome], server: str = "") -> str:
    """One test case per log: a failure element for a diagnosed failure, an error element for a
    log that could not be diagnosed (skipped when --allow-outage let it pass)."""
    suite = ET.Element("testsuite", name="rootcause")
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for o in outcomes:
        counts["tests"] += 1
        case = ET.SubElement(suite, "testcase", classname="rootcause", name=_x(o.file))
        r = o.result
        if o.error is not None:
            tag = "skipped" if o.allowed else "error"
            counts["skipped" if o.allowed else "errors"] += 1
            ET.SubElement(case, tag, message=_x(str(o.error)), type=o.error.code.name.lower())
        elif r is not None and r.failure is not None:
            counts["failures"] += 1
            said = stated(r.failure.confidence, r.failure.confidence_words)
            failure = ET.SubElement(
                case,
                "failure",
                message=_x(f"{r.failure.title} ({r.failure.slug}), confidence {said}"),
                type=_x(r.failure.slug),
            )
            failure.text = _x(render_text(r, server))
        elif r is not None:
            ET.SubElement(case, "system-out").text = _x(render_text(r, server))
    for key, value in counts.items():
        suite.set(key, str(value))
    root = ET.Element("testsuites", {"name": "rootcause", **{k: str(v) for k, v in counts.items()}})
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode")


class Emitter:
    """Writes each outcome as it comes (text, json) or all of them at the end (github, junit)."""

    def __init__(self, fmt: str, server: str = "", out: TextIO | None = None) -> None:
        self.fmt, self.server = fmt, server
        self.out = out or sys.stdout
        self.outcomes: list[Outcome] = []

    def add(self, outcome: Outcome) -> None:
        self.outcomes.append(outcome)
        if outcome.result is None:
            return
        streaming: dict[str, Callable[[FileResult], str]] = {
            "text": lambda r: render_text(r, self.server),
            "json": render_json,
        }
        render = streaming.get(self.fmt)
        if render is not None:
            print(render(outcome.result), file=self.out, flush=True)

    def finish(self) -> ExitCode:
        if self.fmt == "github":
            write_github(self.outcomes, self.server, self.out)
        elif self.fmt == "junit":
            print(junit_report(self.outcomes, self.server), file=self.out)
        self.out.flush()
        return overall([o.code for o in self.outcomes])
