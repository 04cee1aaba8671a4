"""Which account a command imports for: --user, else the local account."""

from __future__ import annotations

import os
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

DEFAULT_USERNAME = "ctxlab"


def resolve_owner(username: str | None) -> Any:
    User = get_user_model()
    if username:
        try:
            return User.objects.get(username=username)
        except User.DoesNotExist:
            raise CommandError(f"no user named {username!r} (create it or omit --user)") from None
    local = os.environ.get("CTXLAB_USER", DEFAULT_USERNAME)
    user = User.objects.filter(username=local).first()
    if user is not None:
        return user
    if not User.objects.exists():
        # A fresh database: create the local account the way `make run` does.
        call_command("ensure_local_user", stdout=open(os.devnull, "w"))  # noqa: SIM115
        user = User.objects.filter(username=local).first()
        if user is not None:
            return user
    user = User.objects.filter(is_superuser=True).order_by("pk").first()
    if user is None:
        raise CommandError(f"no local account {local!r} and no superuser: pass --user USERNAME")
    return user
