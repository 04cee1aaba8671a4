"""Create the local login if no user exists yet, and print how to log in."""

from __future__ import annotations

import os
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

DEFAULT_USERNAME = "ctxlab"
DEFAULT_PASSWORD = "ctxlab"  # local development only; set CTXLAB_PASSWORD anywhere else


class Command(BaseCommand):
    help = (
        "Create a local superuser (CTXLAB_USER / CTXLAB_PASSWORD, default ctxlab / ctxlab) "
        "if the database has no users, then print the login details."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        User = get_user_model()
        username = os.environ.get("CTXLAB_USER", DEFAULT_USERNAME)
        password = os.environ.get("CTXLAB_PASSWORD", DEFAULT_PASSWORD)
        if User.objects.exists():
            existing = User.objects.filter(username=username).first()
            if existing is None:
                self.stdout.write("Users exist already; log in with one of them.")
            elif "CTXLAB_PASSWORD" not in os.environ and existing.check_password(password):
                self.stdout.write(
                    f"Local account exists. Log in as {username} / {password} (the default)."
                )
            else:
                self.stdout.write(f"Local account exists. Log in as {username!r}.")
            return
        User.objects.create_superuser(username=username, email="", password=password)
        shown = password if "CTXLAB_PASSWORD" not in os.environ else "(from CTXLAB_PASSWORD)"
        self.stdout.write(
            self.style.SUCCESS(
                f"Created local account.\n  username: {username}\n  password: {shown}\n"
                "  Change it at /accounts/password_change/ if this machine is shared."
            )
        )
