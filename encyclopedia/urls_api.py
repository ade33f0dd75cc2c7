from django.urls import path

from encyclopedia import api

urlpatterns = [
    path("encyclopedia/", api.EntryListApi.as_view(), name="encyclopedia-list"),
    # Before <slug>/ so that "search" is never taken for a slug.
    path("encyclopedia/search", api.EntrySearchApi.as_view(), name="encyclopedia-search"),
    path("encyclopedia/<slug:slug>/", api.EntryDetailApi.as_view(), name="encyclopedia-detail"),
    path("tools/memory-estimate", api.MemoryEstimateApi.as_view(), name="memory-estimate"),
]
