from django.urls import path

from diagnosis import views

urlpatterns = [
    path("", views.home, name="home"),
    path("extraction.json", views.extraction_patterns, name="extraction-patterns"),
    path("diagnoses/", views.history, name="diagnosis-history"),
    path("diagnoses/<uuid:diagnosis_id>/", views.detail, name="diagnosis-detail"),
    path("diagnoses/<uuid:diagnosis_id>/delete/", views.delete, name="diagnosis-delete"),
    path("diagnoses/<uuid:diagnosis_id>/undo/", views.undo_delete, name="diagnosis-undo"),
]
