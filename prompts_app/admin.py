from __future__ import annotations

from django.contrib import admin

from prompts_app.models import PromptVersion


@admin.register(PromptVersion)
class PromptVersionAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # not generic at run time
    list_display = ("strategy", "number", "name", "owner", "created_at")
    list_filter = ("strategy",)
    raw_id_fields = ("owner", "parent")
