from django.urls import path

from questions import views

urlpatterns = [
    path(
        "diagnoses/<uuid:diagnosis_id>/questions/",
        views.ask_question,
        name="diagnosis-ask",
    ),
]
