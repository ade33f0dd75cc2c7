from django.contrib import admin

from diagnosis.models import Diagnosis


@admin.register(Diagnosis)
class DiagnosisAdmin(admin.ModelAdmin):
    list_display = ("id", "organization", "status", "failure_slug", "size_bytes", "created_at")
    list_filter = ("status", "outcome")
    search_fields = ("id", "failure_slug")
    readonly_fields = [f.name for f in Diagnosis._meta.fields]
