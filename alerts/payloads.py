"""What an alert says: the event body of a finished diagnosis (the stored, masked result), and
the same event as a Slack message or as an e-mail's subject and text."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from diagnosis.models import Diagnosis
from diagnosis.selectors import stored_result
from plumbing.links import absolute_url
from rootcause.confidence import stated
from rootcause.hangs import parse_ranks
from rootcause.result import RankRow, as_json, rank_sentence

EVENT_DIAGNOSIS_DONE = "diagnosis.done"
EVENT_TEST = "webhook.test"


# An event as delivered and stored (WebhookDelivery.payload): JSON of a known shape read by key,
# several levels down (data.failure.title), where a JSON union would need a cast at each step.
Payload = dict[str, Any]


def diagnosis_payload(diagnosis: Diagnosis) -> Payload:
    """The event body: the typed result (masked text only; the fix only if the tier includes it,
    as the result stored it) and the fields a receiver routes on."""
    result = stored_result(diagnosis)
    data: dict[str, object] = {"diagnosis_id": str(diagnosis.id), "link": ""}
    data["link"] = absolute_url(f"/diagnoses/{diagnosis.id}/")
    if result is not None:
        full = as_json(result)
        data.update(
            failure=full.get("failure"),
            root_cause=full.get("root_cause"),
            initiating_rank=full.get("initiating_rank"),
            collateral=full.get("collateral", []),
            remediation=full.get("remediation"),
            result=full,
        )
        if full.get("hang"):
            data["hang"] = _hang_summary(full["hang"])
    return {
        "type": EVENT_DIAGNOSIS_DONE,
        "timestamp": timezone.now().isoformat(),
        "data": data,
    }


def _hang_summary(hang: Payload) -> Payload:
    """A bundle's hang, for a receiver to route on without reading the whole section (which is
    in `result.hang`): the verdict, the culprits and the stack group each stands in."""
    culprits = []
    for culprit in hang.get("culprits") or []:
        rank = culprit.get("rank")
        group = next(
            (g for g in hang.get("stacks") or [] if rank in parse_ranks(str(g.get("ranks", "")))),
            None,
        )
        culprits.append(
            {
                "rank": rank,
                "confidence": culprit.get("confidence"),
                "reason": culprit.get("reason"),
                "frame": group.get("frame") if group else None,
                "where": group.get("where") if group else None,
                "meaning": group.get("meaning_text") if group else None,
            }
        )
    return {
        "verdict": hang.get("verdict"),
        "world_size": hang.get("world_size"),
        "summary": hang.get("summary"),
        "culprits": culprits,
        "missing": hang.get("missing") or [],
    }


def hang_lines(data: Payload) -> list[str]:
    """The hang in a sentence or two: the verdict, each culprit and where it stands."""
    hang = data.get("hang")
    if not hang:
        return []
    lines = [f"Hang verdict: {hang.get('verdict')} on {hang.get('world_size')} ranks."]
    for c in hang.get("culprits") or []:
        where = f": in `{c['frame']}` at {c['where']} ({c['meaning']})" if c.get("frame") else ""
        lines.append(f"Culprit rank {c.get('rank')}{where}.")
    return lines


def _rank_words(data: Payload) -> str:
    """The rank sentence of the stored result's rank table (rootcause.result.rank_sentence)."""
    rows = [RankRow(**row) for row in (data.get("result") or {}).get("ranks", [])]
    return rank_sentence(data.get("initiating_rank"), rows)


def _slack_escaped(text: str) -> str:
    """Text for Slack's mrkdwn: &, < and > are its control characters."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack_message(payload: Payload) -> Payload:
    """The event as a Slack-compatible incoming-webhook message: `text` (one line with the link,
    for notifications and clients without blocks) and `blocks` (the failure as a linked heading,
    the root cause, the initiating rank)."""
    data = payload.get("data", {})
    if payload.get("type") != EVENT_DIAGNOSIS_DONE:
        text = f"rootcause: test event for webhook {data.get('webhook_id', '')}"
        return {"text": text, "blocks": [_slack_section(_slack_escaped(text))]}
    failure = data.get("failure") or {}
    what = failure.get("title") or "no known failure"
    ranks = _rank_words(data)
    where = f" ({ranks[0].lower()}{ranks[1:-1]})" if ranks else ""
    cause = data.get("root_cause") or ""
    link = data.get("link") or ""
    heading = f"*<{link}|{_slack_escaped(what)}>*"
    if failure.get("category"):
        heading += f" · {_slack_escaped(str(failure['category']))}"
    said = _confidence(failure)
    if said:
        heading += f" · confidence {_slack_escaped(said)}"
    blocks = [_slack_section(heading)]
    if cause:
        blocks.append(_slack_section(_slack_escaped(cause)))
    if ranks:
        blocks.append(
            {"type": "context", "elements": [{"type": "mrkdwn", "text": _slack_escaped(ranks)}]}
        )
    hang = hang_lines(data)
    if hang:
        blocks.append(_slack_section(_slack_escaped("\n".join(hang))))
    said = f" (confidence {_slack_escaped(said)})" if said else ""
    return {"text": f"rootcause: {what}{said}{where}: {cause} <{link}>", "blocks": blocks}


def _confidence(failure: Payload) -> str:
    """The figure and its words (rootcause.confidence.stated), "" without a figure; a payload
    stored before the words existed is worded from its figure."""
    if failure.get("confidence") is None:
        return ""
    return stated(float(failure["confidence"]), failure.get("confidence_words"))


def _slack_section(text: str) -> dict[str, object]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def email_text(payload: Payload) -> tuple[str, str]:
    """The subject and the plain-text body of an alert e-mail: masked text only (the stored
    result), with the link to the result."""
    data = payload.get("data", {})
    if payload.get("type") != EVENT_DIAGNOSIS_DONE:
        return (
            "rootcause: test alert",
            "This is a test of a rootcause e-mail alert: alerts on finished diagnoses that "
            f"match its filters come to this address.\n\n{data.get('link', '')}\n",
        )
    failure = data.get("failure") or {}
    title = failure.get("title") or "No known failure matched"
    lines = [title + (f" ({failure['category']})" if failure.get("category") else "")]
    if _confidence(failure):
        lines += [f"Confidence: {_confidence(failure)}"]
    if data.get("root_cause"):
        lines += ["", f"Root cause: {data['root_cause']}"]
    if ranks := _rank_words(data):
        lines += [ranks]
    if data.get("hang"):
        lines += ["", *hang_lines(data)]
    steps = (data.get("remediation") or {}).get("steps") or []
    if steps:
        lines += ["", "Fix:", *(f"{n}. {step}" for n, step in enumerate(steps, 1))]
    lines += ["", f"The result: {data.get('link', '')}", ""]
    return f"rootcause: {title}", "\n".join(lines)
