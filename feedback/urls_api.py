from django.urls import path

from feedback import api

urlpatterns = [
    path(
        "diagnoses/<uuid:diagnosis_id>/feedback",
        api.DiagnosisFeedbackApi.as_view(),
        name="api-diagnosis-feedback",
    ),
]
