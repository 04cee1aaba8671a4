"""Admin registrations: every model of this app is registered here."""

from __future__ import annotations

from django.contrib import admin

from .models import Message, Transcript, Upload


@admin.register(Upload)
class UploadAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "owner",
        "format",
        "size",
        "conversation_count",
        "message_count",
        "created_at",
    ]
    list_filter = ["format"]
    search_fields = ["name", "sha256"]
    exclude = ["data"]
    readonly_fields = ["sha256", "size", "importer_version", "warnings"]


@admin.register(Transcript)
class TranscriptAdmin(admin.ModelAdmin):
    list_display = [
        "__str__",
        "owner",
        "format",
        "message_count",
        "tool_call_count",
        "secret_count",
    ]
    list_filter = ["format"]
    search_fields = ["title", "conversation_id"]
    raw_id_fields = ["upload", "parent"]


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin):
    list_display = ["transcript", "index", "role", "reference_tokens", "preview"]
    list_filter = ["role"]
    raw_id_fields = ["transcript"]
