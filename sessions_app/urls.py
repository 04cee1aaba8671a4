from __future__ import annotations

from django.urls import path

from sessions_app import views

urlpatterns = [
    path("transcripts/", views.transcript_list, name="transcript-list"),
]
