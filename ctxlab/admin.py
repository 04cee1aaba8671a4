"""Admin for the project's own rows: login failure counts (delete one to lift a lock)."""

from __future__ import annotations

from django.contrib import admin

from .models import LoginFailure


@admin.register(LoginFailure)
class LoginFailureAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # not generic at run time
    list_display = ("key", "count", "window_ends")
    search_fields = ("key",)
    readonly_fields = ("key", "count", "window_ends")
