from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from accounts.services import create_personal_organization
from config.problems import ApplicationError
from diagnosis import selectors, services
from diagnosis.forms import DiagnoseForm
from diagnosis.intake import gunzip_if_needed
from diagnosis.models import Diagnosis


def home(request: HttpRequest) -> HttpResponse:
    form = DiagnoseForm()
    if request.method == "POST":
        if not request.user.is_authenticated:
            return redirect(f"/admin/login/?next={request.path}")
        form = DiagnoseForm(request.POST, request.FILES)
        organization = selectors.organization_for(request.user) or create_personal_organization(
            user=request.user
        )
        if form.is_valid():
            upload = form.cleaned_data["log_file"]
            chunks = upload.chunks() if upload else [form.cleaned_data["log_text"].encode("utf-8")]
            try:
                diagnosis, _ = services.submit_diagnosis(
                    organization=organization,
                    chunks=gunzip_if_needed(chunks),
                    source=Diagnosis.Source.WEB,
                    created_by=request.user,
                    filename=upload.name if upload else "",
                )
            except ApplicationError as exc:
                form.add_error(None, exc.detail)
            else:
                return redirect("diagnosis-detail", diagnosis_id=diagnosis.id)
    return render(request, "diagnosis/home.html", {"form": form})


@login_required
def history(request: HttpRequest) -> HttpResponse:
    diagnoses = selectors.diagnoses_for(request.user)[:100]
    return render(request, "diagnosis/history.html", {"diagnoses": diagnoses})


@login_required
def detail(request: HttpRequest, diagnosis_id: str) -> HttpResponse:
    diagnosis = selectors.get_diagnosis_for(request.user, diagnosis_id)
    return render(
        request,
        "diagnosis/detail.html",
        {
            "diagnosis": diagnosis,
            "result": selectors.diagnosis_result(diagnosis),
            "active": diagnosis.status in Diagnosis.ACTIVE_STATUSES,
        },
    )
