"""Pages: the form on /, a diagnosis, the organisation's history."""

from __future__ import annotations

import copy
import re
import uuid
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.core.files.uploadedfile import UploadedFile
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST
from msgspec import UnsetType
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request

from accounts.actors import Actor, actor_of
from accounts.selectors import Forbidden
from billing_tiers.entitlements import entitlements_for, upgrade_from
from billing_tiers.selectors import quota_status
from diagnosis import selectors, services
from diagnosis.bundles import HEAD_BYTES
from diagnosis.forms import DiagnoseForm, HistoryFilterForm
from diagnosis.intake import gunzip_if_needed
from diagnosis.models import Diagnosis
from diagnosis.pagination import HistoryPagination
from diagnosis.pipeline.table import is_active, stages, stages_for, stages_from
from diagnosis.selectors import HistoryFilters
from diagnosis.services.carry import remember_visitor_diagnosis
from diagnosis.services.undo import DELETE_UNDO_SECONDS, delete_with_undo
from diagnosis.services.undo import undo_delete as undo_deletion
from encyclopedia import downloads
from encyclopedia.selectors import list_entries
from plumbing.problems import ApplicationError
from rootcause.hangs import is_archive, parse_ranks, rank_states
from rootcause.result import DiagnosisResult, rank_sentence


def _result_url(submission: services.Submission) -> str:
    url = reverse("diagnosis-detail", args=[submission.diagnosis.id])
    # A visitor's result is reachable only by this link; query strings are in no log line.
    return f"{url}?key={submission.access_key}" if submission.access_key else url


# Sample logs for "No log to hand? Try one": copies of logs of tests/logs, produced by real code.
SAMPLES_DIR = Path(__file__).resolve().parent / "static" / "diagnosis" / "samples"
_SAMPLE_NAME_RE = re.compile(r"^[a-z0-9-]{1,64}$")


def _sample_text(name: str) -> str:
    """A shipped sample log by its name (the file name without `.log`), or "" if there is none."""
    if not _SAMPLE_NAME_RE.match(name):
        return ""
    path = SAMPLES_DIR / f"{name}.log"
    return path.read_text(encoding="utf-8") if path.is_file() else ""


def paste_context(request: HttpRequest) -> dict[str, object]:
    """What the paste box shows beside it: today's allowance, the tier that would raise it, and
    how long results are kept (the numbers from settings)."""
    actor = actor_of(request)
    entitlements = entitlements_for(actor)
    return {
        "quota": quota_status(actor, entitlements=entitlements),
        "upgrade": upgrade_from(entitlements),
        "signed_in": not actor.is_anonymous,
        "anonymous_hours": settings.ANONYMOUS_RESULT_HOURS,
        "history_days": entitlements.history_days,
        "max_log_bytes": settings.ROOTCAUSE_MAX_LOG_BYTES,
        "install": downloads.install(),
    }


def home(request: HttpRequest) -> HttpResponse:
    """The form, for everyone: visitors diagnose within the anonymous allowance."""
    actor = actor_of(request)
    # `?sample=<name>` fills the box with a sample log: "Try one" works without JavaScript.
    sample = _sample_text(request.GET.get("sample", ""))
    form = DiagnoseForm(initial={"log_text": sample} if sample else None)
    status = 200
    headers: dict[str, str] = {}
    if request.method == "POST":
        form = DiagnoseForm(request.POST, request.FILES)
        if form.is_valid():
            try:
                submission = _submit_form(actor, form)
            except ApplicationError as exc:
                # Over quota too: the message says when it resets and which tier raises it.
                form.add_error(None, exc.detail)
                status, headers = exc.status_code, exc.headers
            else:
                if submission.access_key:  # a visitor's: carried into the account they make
                    remember_visitor_diagnosis(
                        request.session, submission.diagnosis, submission.access_key
                    )
                return redirect(_result_url(submission))
        else:
            status = 400
    context = {"form": form, **paste_context(request)}
    response = render(request, "diagnosis/home.html", context, status=status)
    for header, value in headers.items():  # a 429's Retry-After and RateLimit-*
        response[header] = value
    return response


def _submit_form(actor: Actor, form: DiagnoseForm) -> services.Submission:
    """The pasted text or the one file chosen is a log; several files, or one archive, are the
    bundle of one job (diagnosis/bundles.py), diagnosed together for a hang."""
    uploads: list[UploadedFile] = form.cleaned_data["log_file"]
    if len(uploads) > 1 or (uploads and _is_archive(uploads[0])):
        files = [(upload.name or f"file{i}", upload.read()) for i, upload in enumerate(uploads)]
        return services.submit_bundle(actor=actor, files=files, source=Diagnosis.Source.WEB)
    upload = uploads[0] if uploads else None
    chunks = upload.chunks() if upload else [form.cleaned_data["log_text"].encode("utf-8")]
    return services.submit_diagnosis(
        actor=actor,
        chunks=gunzip_if_needed(chunks),
        source=Diagnosis.Source.WEB,
        filename=(upload.name or "") if upload else "",
    )


def _is_archive(upload: UploadedFile) -> bool:
    head = upload.read(HEAD_BYTES)
    upload.seek(0)
    return is_archive(head)


def _relative(link: str | None) -> str | None:
    """A pagination link without scheme and host, as the page's own links are."""
    if link is None:
        return None
    parts = urlsplit(link)
    return f"{parts.path}?{parts.query}" if parts.query else parts.path


@login_required
def history(request: HttpRequest) -> HttpResponse:
    actor = actor_of(request)
    form = HistoryFilterForm(
        request.GET or None, failures=list_entries().values_list("slug", "title")
    )
    filters = form.filters() if form.is_bound and form.is_valid() else HistoryFilters()
    paginator = HistoryPagination()
    queryset = selectors.diagnoses_for(actor, filters)
    page_error = ""
    try:
        # The API's cursor pagination, on a DRF view of this request (it reads the query string).
        page = paginator.paginate_queryset(queryset, Request(request))
    except (NotFound, ValidationError):
        # A cursor or page size that is not one of ours (the API's 400): the newest page, with
        # the filters kept and the error said, rather than a server error.
        page_error = "That link to a page of the history is not valid: here are the newest."
        page = paginator.paginate_queryset(queryset, Request(_without_paging(request)))
    context: dict[str, object] = {
        "diagnoses": page,
        "form": form,
        "page_error": page_error,
        "older": _relative(paginator.get_next_link()),
        "newer": _relative(paginator.get_previous_link()),
        "can_delete": actor.manages_organization,
        "organization": actor.organization,
        "undo": _undo_offer(request),
    }
    return render(request, "diagnosis/history.html", context, status=400 if page_error else 200)


def _without_paging(request: HttpRequest) -> HttpRequest:
    """The same request without its cursor and page size: the first page of its filters."""
    query = request.GET.copy()
    for name in (HistoryPagination.cursor_query_param, "page_size"):
        query.pop(name, None)
    first = copy.copy(request)
    first.GET = query  # type: ignore[assignment]  # a copy is mutable; Django reads it alike
    return first


def _stage_list(status: str, kind: str) -> list[tuple[str, str, str]]:
    """(status, label, "done", "current" or "") for each stage a diagnosis of `kind` goes
    through, for one in `status`."""
    ahead = {stage.status for stage in stages_from(status)}
    return [
        (
            stage.status,
            stage.label,
            "current" if stage.status == status else "" if stage.status in ahead else "done",
        )
        for stage in stages_for(kind)
    ]


def _hang_context(result: DiagnosisResult | None) -> dict[str, object] | None:
    """A bundle's hang for the page: the rank map (each rank culprit, waiting or without a
    dump), its counts, and the grouped stacks with the culprits' groups marked."""
    if result is None or isinstance(result.hang, UnsetType):
        return None
    hang = result.hang
    cells = rank_states(hang)
    culprits = {c.rank for c in hang.culprits}
    return {
        "section": hang,
        "cells": cells,
        "counts": Counter(state for _, state in cells),
        # past a few hundred ranks the cells carry no number (the title still says it)
        "dense": len(cells) > 256,
        "groups": [
            (group, bool(culprits & set(parse_ranks(group.ranks)))) for group in hang.stacks
        ],
    }


def detail(request: HttpRequest, diagnosis_id: str) -> HttpResponse:
    """An organisation's diagnosis for its members; a visitor's for whoever holds its link."""
    key = request.GET.get("key", "")
    if not key and not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    diagnosis = selectors.get_diagnosis_for(actor_of(request), diagnosis_id, key=key)
    result = selectors.diagnosis_result(diagnosis)
    permalink = reverse("diagnosis-detail", args=[diagnosis.id])
    poll_url = reverse("api-diagnosis-detail", args=[diagnosis.id]) + "?wait=2"
    if key:
        permalink += f"?key={key}"
        poll_url += f"&key={key}"
    labels = {"queued": "Waiting for a worker", **{s.status: s.label for s in stages()}}
    return render(
        request,
        "diagnosis/detail.html",
        {
            "diagnosis": diagnosis,
            "result": result,
            "active": is_active(diagnosis.status),
            "anonymous": diagnosis.organization_id is None,
            "stage_label": labels.get(diagnosis.status, ""),
            "stages": _stage_list(diagnosis.status, diagnosis.kind),
            "hang": _hang_context(result),
            # The page's script polls the API and shows these labels (json_script escapes them).
            "progress_config": {"url": poll_url, "labels": labels},
            "permalink": request.build_absolute_uri(permalink),
            # a bundle's ranks are in its rank map instead
            "ranks": sorted(result.ranks, key=lambda r: r.rank)
            if result and diagnosis.kind == Diagnosis.Kind.LOG
            else [],
            # What the rank table says, in words (the same sentence as the CLI's and alerts'); a
            # bundle's rows are its culprits and the ranks that waited on them.
            "rank_sentence": rank_sentence(result.initiating_rank, result.ranks) if result else "",
            # A rank can fail first by saying nothing (it hung): the table still names it.
            "silent_initiator": result is not None
            and result.initiating_rank is not None
            and all(r.rank != result.initiating_rank for r in result.ranks),
        },
    )


# The session's note of the last deletion that can be undone: its id, what it was, until when.
SESSION_UNDO = "diagnosis_undo"


def _described(diagnosis: Diagnosis) -> str:
    when = diagnosis.created_at.strftime("%Y-%m-%d %H:%M")
    return f"{diagnosis.filename or 'the pasted log'} of {when} UTC"


@login_required
@require_http_methods(["GET", "POST"])
def delete(request: HttpRequest, diagnosis_id: str) -> HttpResponse:
    """GET asks to confirm; POST deletes, and the history offers to undo it for a short while."""
    actor = actor_of(request)
    diagnosis = selectors.get_diagnosis_for(actor, diagnosis_id)
    if not actor.manages_organization:
        raise Forbidden("Only an owner or admin of the organisation can delete diagnoses.")
    if request.method == "GET":
        context = {
            "diagnosis": diagnosis,
            "described": _described(diagnosis),
            "undo_minutes": DELETE_UNDO_SECONDS // 60,
        }
        return render(request, "diagnosis/delete.html", context)
    described = _described(diagnosis)
    if delete_with_undo(actor=actor, diagnosis=diagnosis):
        until = timezone.now().timestamp() + DELETE_UNDO_SECONDS
        request.session[SESSION_UNDO] = [str(diagnosis.id), described, until]
    messages.success(request, f"The diagnosis of {described} was deleted.")
    return redirect("diagnosis-history")


@login_required
@require_POST
def undo_delete(request: HttpRequest, diagnosis_id: uuid.UUID) -> HttpResponse:
    try:
        undo_deletion(actor=actor_of(request), diagnosis_id=diagnosis_id)
    except ApplicationError as exc:
        messages.error(request, exc.detail)
        return redirect("diagnosis-history")
    request.session.pop(SESSION_UNDO, None)
    messages.success(request, "The diagnosis is back.")
    return redirect("diagnosis-detail", diagnosis_id=diagnosis_id)


def _undo_offer(request: HttpRequest) -> dict[str, object] | None:
    """The last deletion, while it can be undone."""
    noted = request.session.get(SESSION_UNDO)
    if not noted or noted[2] <= timezone.now().timestamp():
        return None
    return {
        "id": noted[0],
        "described": noted[1],
        "seconds": int(noted[2] - timezone.now().timestamp()),
    }


def extraction_patterns(request: HttpRequest) -> HttpResponse:
    """What the page's evidence selection (static/diagnosis/extract.js) scans a big file for:
    the current catalogue's fingerprints and the engine's markers, as JavaScript patterns."""
    from encyclopedia.selectors import current_engine  # the engine compiles on first use
    from rootcause.extract import browser_patterns

    response = JsonResponse(browser_patterns(current_engine()))
    response["Cache-Control"] = "public, max-age=300"
    return response
