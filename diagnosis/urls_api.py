from django.urls import path

from diagnosis import api, api_failures

urlpatterns = [
    path("diagnoses", api.DiagnosisListApi.as_view(), name="api-diagnoses"),
    path(
        "diagnoses/<uuid:diagnosis_id>",
        api.DiagnosisDetailApi.as_view(),
        name="api-diagnosis-detail",
    ),
    path("failures", api_failures.FailureListApi.as_view(), name="api-failures"),
]
