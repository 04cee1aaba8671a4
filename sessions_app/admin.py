"""Admin registrations: every model of this app is registered here."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.db import models
from django.http import HttpRequest

from ctxlab.web.admin_scaling import LargeTableAdmin

from .json_text import JSONTextField
from .models import Message, MessageFacts, Transcript, Upload


class JSONValueField(forms.JSONField):
    """A JSON form field for which ``[]`` and ``{}`` are values: Django's counts them as
    blank (the form's *required* and the model's *blank* checks alike) and refused to save
    a Message with no flags or secrets. Only an empty box (no JSON at all) is missing.

    Not ``required`` to Django, so a ModelForm leaves an empty list out of the model's
    blank check; the required check is this field's own."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**{**kwargs, "required": False})

    def validate(self, value: Any) -> None:
        if value is None:
            raise ValidationError(self.error_messages["required"], code="required")


class JSONValuesAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # not generic at run time
    """Every JSON column that may not be blank gets a ``JSONValueField`` (a nullable one
    keeps Django's: there an empty box means null)."""

    def formfield_for_dbfield(
        self, db_field: models.Field[Any, Any], request: HttpRequest, **kwargs: Any
    ) -> Any:
        if isinstance(db_field, models.JSONField | JSONTextField) and not db_field.blank:
            kwargs["form_class"] = JSONValueField
        return super().formfield_for_dbfield(db_field, request, **kwargs)


@admin.register(Upload)
class UploadAdmin(JSONValuesAdmin):
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
class TranscriptAdmin(JSONValuesAdmin, LargeTableAdmin):
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
class MessageAdmin(JSONValuesAdmin, LargeTableAdmin):
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
