"""Follow-up questions on a diagnosis (Scale): asking one keeps it, with its answer, on the
diagnosis's thread."""

from __future__ import annotations

from django.db import transaction
from msgspec import UnsetType

from accounts.actors import Actor
from accounts.selectors import Forbidden
from billing_tiers.selectors import entitlements_for
from diagnosis.models import Diagnosis
from diagnosis.selectors import stored_result
from plumbing.problems import ApplicationError
from plumbing.text import several_lines
from questions.answers import answer_text, rank_sections, sources_of
from questions.models import DiagnosisQuestion


def ask_question(*, actor: Actor, diagnosis: Diagnosis, question: str) -> DiagnosisQuestion:
    """Answers a question on one of the organisation's diagnoses and keeps it on its thread.
    Scale only; counts against no quota."""
    entitled = entitlements_for(actor)
    if not entitled.follow_up_questions:
        raise Forbidden(
            f"Follow-up questions come with the {entitled.unlocked_by('follow_up_questions')} tier "
            f"(this organisation is on {entitled.tier_label})."
        )
    if diagnosis.organization_id is None:  # a visitor's: no thread, and no Scale tier
        raise Forbidden("Follow-up questions are for an organisation's diagnoses.")
    # Kept on the thread that the organisation's members read: no controls, no direction changes.
    question = several_lines(question)
    if not question:
        raise ApplicationError("Ask a question: this one has no words.")
    result = stored_result(diagnosis)
    evidence = "\n".join(e.text for e in result.evidence) if result else ""
    fix = ""
    if result is not None and not isinstance(result.remediation, UnsetType):
        fix = "\n".join([*result.remediation.steps, result.remediation.command])
    sources = sources_of(diagnosis, question, fix=fix, evidence=evidence)
    hits = rank_sections(sources.own, question, sources.others)
    with transaction.atomic():
        return DiagnosisQuestion.objects.create(
            organization_id=diagnosis.organization_id,
            diagnosis=diagnosis,
            asked_by=actor.user,
            question=question,
            answer=answer_text(hits),
            citations=[
                {
                    "slug": h.section.slug,
                    "section": h.section.key,
                    "title": h.section.title,
                    "link": h.section.link,
                    "score": round(h.score, 3),
                }
                for h in hits
            ],
        )
