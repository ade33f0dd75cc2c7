"""Pages: the form on /, a diagnosis, the organisation's history."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST
from rest_framework.exceptions import NotFound
from rest_framework.request import Request

from accounts.actors import actor_of
from billing_tiers.selectors import quota_status
from config.problems import ApplicationError
from diagnosis import selectors, services
from diagnosis.forms import DiagnoseForm, HistoryFilterForm
from diagnosis.intake import gunzip_if_needed
from diagnosis.models import Diagnosis
from diagnosis.pagination import HistoryPagination
from diagnosis.selectors import HistoryFilters
from encyclopedia.selectors import list_entries


def _result_url(submission: services.Submission) -> str:
    url = reverse("diagnosis-detail", args=[submission.diagnosis.id])
    # A visitor's result is reachable only by this link; query strings are in no log line.
    return f"{url}?key={submission.access_key}" if submission.access_key else url


def home(request: HttpRequest) -> HttpResponse:
    """The form, for everyone: visitors diagnose within the anonymous allowance."""
    actor = actor_of(request)
    form = DiagnoseForm()
    status = 200
    headers: dict[str, str] = {}
    if request.method == "POST":
        form = DiagnoseForm(request.POST, request.FILES)
        if form.is_valid():
            upload = form.cleaned_data["log_file"]
            chunks = upload.chunks() if upload else [form.cleaned_data["log_text"].encode("utf-8")]
            try:
                submission = services.submit_diagnosis(
                    actor=actor,
                    chunks=gunzip_if_needed(chunks),
                    source=Diagnosis.Source.WEB,
                    filename=upload.name if upload else "",
                )
            except ApplicationError as exc:
                # Over quota too: the message says when it resets and which tier raises it.
                form.add_error(None, exc.detail)
                status, headers = exc.status_code, exc.headers
            else:
                return redirect(_result_url(submission))
        else:
            status = 400
    context = {"form": form, "quota": quota_status(actor), "signed_in": not actor.is_anonymous}
    response = render(request, "diagnosis/home.html", context, status=status)
    for header, value in headers.items():  # a 429's Retry-After and RateLimit-*
        response[header] = value
    return response


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
    try:
        # The API's cursor pagination, on a DRF view of this request (it reads the query string).
        page = paginator.paginate_queryset(
            selectors.diagnoses_for(actor, filters), Request(request)
        )
    except NotFound:
        raise Http404("No such page of the history.") from None
    context: dict[str, Any] = {
        "diagnoses": page,
        "form": form,
        "older": _relative(paginator.get_next_link()),
        "newer": _relative(paginator.get_previous_link()),
        "can_delete": actor.manages_organization,
        "organization": actor.organization,
    }
    return render(request, "diagnosis/history.html", context)


def detail(request: HttpRequest, diagnosis_id: str) -> HttpResponse:
    """An organisation's diagnosis for its members; a visitor's for whoever holds its link."""
    key = request.GET.get("key", "")
    if not key and not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    diagnosis = selectors.get_diagnosis_for(actor_of(request), diagnosis_id, key=key)
    return render(
        request,
        "diagnosis/detail.html",
        {
            "diagnosis": diagnosis,
            "result": selectors.diagnosis_result(diagnosis),
            "active": diagnosis.status in Diagnosis.ACTIVE_STATUSES,
            "anonymous": diagnosis.organization_id is None,
        },
    )


@login_required
@require_POST
def delete(request: HttpRequest, diagnosis_id: str) -> HttpResponse:
    actor = actor_of(request)
    diagnosis = selectors.get_diagnosis_for(actor, diagnosis_id)
    services.delete_diagnosis(actor=actor, diagnosis=diagnosis)
    messages.success(request, "The diagnosis was deleted.")
    return redirect("diagnosis-history")
