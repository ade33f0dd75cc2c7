from django.urls import path

from questions import api

urlpatterns = [
    path(
        "diagnoses/<uuid:diagnosis_id>/questions",
        api.DiagnosisQuestionsApi.as_view(),
        name="api-diagnosis-questions",
    ),
]
