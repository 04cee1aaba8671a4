"""Admin registrations: every model of this app is registered here."""

from __future__ import annotations

from django.contrib import admin

from ctxlab.admin_scaling import LargeTableAdmin

from .models import Message, MessageFacts, Transcript, Upload


@admin.register(Upload)
class UploadAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # not generic at run time
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
class TranscriptAdmin(LargeTableAdmin):
    list_display = [
        "__str__",
        "owner",
        "format",
        "message_count",
        "tool_call_count",
        "secret_count",
    ]
    list_select_related = ["owner"]
    list_filter = ["format"]
    search_fields = ["title", "conversation_id"]
    raw_id_fields = ["owner", "upload", "parent"]
    list_deferred = ("tools", "compactions", "metadata", "secrets")


@admin.register(Message)
class MessageAdmin(LargeTableAdmin):
    list_display = ["transcript_id", "index", "role", "reference_tokens", "preview"]
    list_filter = ["role"]
    raw_id_fields = ["transcript"]
    list_deferred = ("blocks", "flags", "secrets")


@admin.register(MessageFacts)
class MessageFactsAdmin(LargeTableAdmin):
    """Facts extracted at import, a batch of messages per row (compressed bytes)."""

    list_display = ["transcript_id", "start", "count", "extractor"]
    raw_id_fields = ["transcript"]
    list_deferred = ("data",)
