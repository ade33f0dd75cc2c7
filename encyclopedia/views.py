"""Encyclopedia pages: the index, one entry, search by pasted error text, the memory estimator;
and /downloads/, the client and the editor extension served by the service itself."""

from __future__ import annotations

from django.conf import settings
from django.http import FileResponse, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import NoReverseMatch, reverse
from django.utils.http import urlencode

from accounts.actors import actor_of
from billing_tiers.entitlements import entitlements_for, upgrade_from
from billing_tiers.selectors import evaluation_offer, quota_status
from encyclopedia import downloads, memory, selectors
from encyclopedia.serializers import MemoryEstimateInputSerializer
from plumbing.links import site_url
from plumbing.problems import ApplicationError


def _signup_url(next_path: str) -> str:
    # Sign-up belongs to accounts; until it has a page the call to action leads to sign-in.
    for name in ("accounts:signup", "signup"):
        try:
            return f"{reverse(name)}?{urlencode({'next': next_path})}"
        except NoReverseMatch:
            continue
    return f"{settings.LOGIN_URL}?{urlencode({'next': next_path})}"


def index(request: HttpRequest) -> HttpResponse:
    entries = selectors.list_entries().only("slug", "title", "category", "severity", "tags")
    return render(
        request,
        "encyclopedia/index.html",
        {"groups": selectors.entries_by_category(entries), "count": len(entries)},
    )


def _paste_box(request: HttpRequest) -> dict[str, object]:
    """What the page's paste box shows beside it (the same as the home page's)."""
    actor = actor_of(request)
    entitlements = entitlements_for(actor)
    return {
        "quota": quota_status(actor, entitlements=entitlements),
        "upgrade": upgrade_from(entitlements),
        "signed_in": not actor.is_anonymous,
        "anonymous_hours": settings.ANONYMOUS_RESULT_HOURS,
        "history_days": entitlements.history_days,
        "max_log_bytes": settings.ROOTCAUSE_MAX_LOG_BYTES,
        "evaluation": evaluation_offer(),
        "install": downloads.install(),
    }


def entry(request: HttpRequest, slug: str) -> HttpResponse:
    row = selectors.get_entry(slug)
    allowed = selectors.can_see_fix(actor_of(request))
    related = selectors.related_entries(row)
    # With their category and severity, in one query.
    details = {
        e.slug: e
        for e in selectors.list_entries()
        .filter(slug__in=[r.slug for r in related])
        .only("slug", "title", "category", "severity")
    }
    return render(
        request,
        "encyclopedia/entry.html",
        {
            "entry": row,
            "data": selectors.visible_fields(row.data, can_see_fix=allowed),
            "locked": selectors.locked_fields(row.data, can_see_fix=allowed),
            "related": [details.get(r.slug, r) for r in related],
            "signup_url": _signup_url(request.path),
            "login_url": f"{settings.LOGIN_URL}?{urlencode({'next': request.path})}",
            **_paste_box(request),
        },
    )


def search(request: HttpRequest) -> HttpResponse:
    context: dict[str, object] = {"text": "", "results": None, "error": ""}
    status = 200
    if request.method == "POST":
        text = request.POST.get("text", "")
        context["text"] = text
        try:
            results = selectors.search_entries(text)
        except ApplicationError as exc:
            context["error"] = exc.detail
            status = exc.status_code
            # Do not echo a megabyte of text back into the form.
            context["text"] = ""
        else:
            context["results"] = results
    return render(request, "encyclopedia/search.html", context, status=status)


def memory_estimate(request: HttpRequest) -> HttpResponse:
    values = {"optimizer": "adamw", "precision": "mixed", "zero_stage": "0", "dp_size": "1"}
    context: dict[str, object] = {
        "optimizers": [(name, memory.OPTIMIZER_LABELS[name]) for name in memory.OPTIMIZERS],
        "precisions": list(memory.PRECISION_LABELS.items()),
        "stages": range(4),
        "values": values,
        "result": None,
        "errors": {},
    }
    status = 200
    if "params" in request.GET:
        given = {**values, **request.GET.dict()}
        context["values"] = given
        # The page forgives the spaces a typed or pasted count brings; the API takes the pattern.
        data = request.GET.copy()
        data["params"] = request.GET["params"].strip()
        form = MemoryEstimateInputSerializer(data=data)
        if form.is_valid():
            args = dict(form.validated_data)
            gib = args.pop("gpu_memory_gib", None)
            result = memory.estimate(
                **args, gpu_memory_bytes=None if gib is None else round(gib * 2**30)
            )
            # The estimate with what the page shows beside it.
            shown: dict[str, object] = {**result}
            shown["rows"] = [
                (
                    name.replace("_", " "),
                    result["bytes_per_param"][name],
                    name in result["sharded"],
                    memory.human_bytes(result["bytes"][name]),
                )
                for name in memory.COMPONENTS
            ]
            shown["total_human"] = memory.human_bytes(result["total_bytes"])
            if result["gpu_memory_bytes"]:
                shown["gpu_human"] = memory.human_bytes(result["gpu_memory_bytes"])
            context["result"] = shown
            # the form shows the canonical choices ("bf16-mixed" arrives, "mixed" is selected)
            given.update(optimizer=result["optimizer"], precision=result["precision"])
        else:
            context["errors"] = {k: " ".join(str(m) for m in v) for k, v in form.errors.items()}
            status = 400
    return render(request, "encyclopedia/memory_estimate.html", context, status=status)


# --- /downloads/ ------------------------------------------------------------------------------


def downloads_page(request: HttpRequest) -> HttpResponse:
    files = downloads.downloads()
    return render(
        request,
        "encyclopedia/downloads.html",
        {"files": files, "install": downloads.install(), "site_url": site_url()},
    )


def downloads_index(request: HttpRequest) -> JsonResponse:
    """The same as JSON, for scripts (the GitHub Action finds the wheel here)."""
    current = downloads.install()

    def described(file: downloads.Download | None) -> dict[str, object] | None:
        if file is None:
            return None
        return {
            "name": file.name,
            "version": file.version,
            "url": file.url,
            "size": file.size,
            "sha256": file.sha256,
        }

    return JsonResponse(
        {
            "wheel": described(current.wheel),
            "vsix": described(current.vsix),
            "files": [described(f) for f in downloads.downloads()],
        }
    )


def download_file(request: HttpRequest, name: str) -> FileResponse:
    path = downloads.download_path(name)
    response = FileResponse(path.open("rb"), as_attachment=True, filename=name)
    response["Content-Type"] = "application/octet-stream"
    return response
