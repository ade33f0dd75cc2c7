from django.urls import path

from encyclopedia import views

app_name = "encyclopedia"

urlpatterns = [
    path("", views.index, name="index"),
    # Fixed paths before <slug>/ so that they are never taken for a slug.
    path("search/", views.search, name="search"),
    path("tools/memory-estimate/", views.memory_estimate, name="memory-estimate"),
    path("<slug:slug>/", views.entry, name="entry"),
]
