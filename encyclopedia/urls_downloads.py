from django.urls import path

from encyclopedia import views

urlpatterns = [
    path("", views.downloads_page, name="downloads"),
    path("index.json", views.downloads_index, name="downloads-index"),
    path("<str:name>", views.download_file, name="download"),
]
