"""Every entry answers the reference entry's standard questions, each in its own words.

The reference entry's FAQ asks: hardware or software? how long does the fix take? inference too?
the cheapest confirmation? will it recur? from 1 to 1,000 GPUs? what to monitor? An entry marks
its answers with `topic` (rootcause.catalogue.FAQ_TOPICS); the entries where diagnosing a job
while it runs changes the outcome (the watchdog timeout, the hangs, the out-of-memory failures)
also say what `rootcause run` / `rootcause watch` would have shown, and when.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from difflib import SequenceMatcher
from html import unescape
from typing import Any

import pytest
from django.test import Client
from msgspec import UnsetType

from rootcause.catalogue import FAQ_TOPICS, Entry, load_entries

ENTRIES = load_entries()
BY_SLUG = {e.slug: e for e in ENTRIES}
STANDARD = [t for t in FAQ_TOPICS if t != "live"]
ALL_TOPICS = [*STANDARD, "live"]
# Where `rootcause run` changes the story: a failure that leaves the other ranks waiting for the
# watchdog, or a hang that prints nothing.
LIVE = [
    "nccl-timeout",
    "gloo-timeout",
    "hang-inside-collective",
    "rank-stalled-before-collective",
    "straggler-rank",
    "optimizer-state-oom",
    "activation-oom",
    "allocator-fragmentation",
    "eval-memory-growth",
    "host-oom-killed",
    "setup-oom",
    "gpu-memory-held-elsewhere",
]
# An answer shorter than this is a yes or a no, not an answer.
MIN_ANSWER_CHARS = 100
# Two answers to the same question whose words agree this much are one template with the names
# swapped (0.93 for the test's template; the closest pair of the shipped catalogue: 0.45).
MAX_SIMILARITY = 0.5


def answers(entry: Entry) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for item in [] if isinstance(entry.faq, UnsetType) else entry.faq:
        if not isinstance(item.topic, UnsetType):
            found.setdefault(item.topic, []).append(item.a)
    return found


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9_]+", text.lower())


def similarity(a: str, b: str) -> float:
    return SequenceMatcher(None, words(a), words(b), autojunk=False).ratio()


def templated(texts: dict[str, str], limit: float = MAX_SIMILARITY) -> list[tuple[str, str]]:
    """Pairs of slugs whose answers are near-copies of each other."""
    return [
        (a, b)
        for (a, text_a), (b, text_b) in itertools.combinations(sorted(texts.items()), 2)
        if similarity(text_a, text_b) > limit
    ]


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.slug for e in ENTRIES])
def test_every_entry_answers_each_standard_question_once(entry: Entry) -> None:
    found = answers(entry)
    counts = Counter({topic: len(texts) for topic, texts in found.items()})
    assert {t: counts[t] for t in STANDARD} == dict.fromkeys(STANDARD, 1), entry.slug
    assert counts["live"] <= 1
    short = [t for t, texts in found.items() for a in texts if len(a) < MIN_ANSWER_CHARS]
    assert not short, f"{entry.slug}: one-line answers to {short}"


@pytest.mark.parametrize("topic", ALL_TOPICS)
def test_no_two_entries_give_the_same_answer(topic: str) -> None:
    texts = {e.slug: answers(e)[topic][0] for e in ENTRIES if topic in answers(e)}
    assert len(set(texts.values())) == len(texts)
    assert not templated(texts), f"near-identical answers to {topic!r}"


def test_the_template_check_catches_an_answer_with_the_names_swapped() -> None:
    template = (
        "Software. The {x} failure comes from the configuration of the job, not from the GPU; "
        "fix the {x} settings and rerun the same step to check that it passes."
    )
    texts = {"a": template.format(x="NCCL"), "b": template.format(x="cuDNN")}
    assert templated(texts) == [("a", "b")]
    texts["b"] = BY_SLUG["cudnn-error"].quick_answer
    assert templated(texts) == []


@pytest.mark.parametrize("slug", LIVE)
def test_live_answers_say_what_rootcause_run_shows_and_when(slug: str) -> None:
    (live,) = answers(BY_SLUG[slug])["live"]
    assert re.search(r"rootcause (run|watch)", live)
    # when: a time against the watchdog, the stall timer or the traceback
    assert re.search(r"\b\d+(\.\d+)?[ -]?(s|ms|seconds?|minutes?)\b", live), live


# Each optimizer entry answers these, each in one FAQ item that names what it must.
OPTIMIZER_NOTES = {
    "8-bit optimizers' stability": ("bitsandbytes", "StableEmbedding", "optim_bits"),
    "one rank out of memory while others proceed": ("ZeroRedundancyOptimizer", "ZeRO"),
    "state growing mid-run": ("add_param_group", "training loop"),
}


@pytest.mark.parametrize("slug", ["optimizer-state-oom", "optimizer-state-memory"])
@pytest.mark.parametrize("note", OPTIMIZER_NOTES)
def test_the_optimizer_entries_answer_their_own_questions(slug: str, note: str) -> None:
    items = [f"{f.q} {f.a}" for f in BY_SLUG[slug].faq or []]
    assert any(all(word in item for word in OPTIMIZER_NOTES[note]) for item in items), note


def test_the_entry_page_and_api_carry_the_standard_answers(client: Client, catalogue: Any) -> None:
    entry = BY_SLUG["nccl-timeout"]
    html = client.get("/encyclopedia/nccl-timeout/").content.decode()
    page = " ".join(unescape(re.sub(r"<[^>]+>", "", html)).split())  # as a reader sees it
    for item in entry.faq or []:
        assert " ".join(item.q.replace("`", "").split()) in page
        assert " ".join(item.a.replace("`", "").split()) in page

    data = client.get("/api/v1/encyclopedia/nccl-timeout/").json()
    topics = [item.get("topic") for item in data["faq"]]
    assert set(ALL_TOPICS) <= set(topics)
