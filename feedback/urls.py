from django.urls import path

from feedback import views

urlpatterns = [
    path(
        "diagnoses/<uuid:diagnosis_id>/feedback/",
        views.give_feedback,
        name="diagnosis-feedback",
    ),
]
