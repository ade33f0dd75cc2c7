from django.urls import path

from diagnosis import metrics

urlpatterns = [path("metrics", metrics.metrics, name="metrics")]
