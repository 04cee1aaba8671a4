from __future__ import annotations

from django.urls import path

from sessions_app import views

urlpatterns = [
    path("transcripts/", views.transcript_list, name="transcript-list"),
    path("transcripts/upload/", views.upload_create, name="upload-create"),
    path("transcripts/<int:pk>/", views.transcript_detail, name="transcript-detail"),
    path("transcripts/<int:pk>/now/", views.transcript_now, name="transcript-now"),
    path(
        "transcripts/<int:pk>/messages/<int:index>/blocks/<int:block>/text/",
        views.message_block_text,
        name="message-block-text",
    ),
    path("transcripts/files/<int:pk>/", views.upload_detail, name="upload-detail"),
    path("transcripts/files/<int:pk>/download/", views.upload_download, name="upload-download"),
    path("transcripts/files/<int:pk>/reparse/", views.upload_reparse, name="upload-reparse"),
    path("transcripts/files/<int:pk>/delete/", views.upload_delete, name="upload-delete"),
]
