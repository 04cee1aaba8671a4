"""Rows the project package itself keeps (not any one app's data)."""

from __future__ import annotations

from django.db import models


class LoginFailure(models.Model):
    """Failed logins for one account or one client address within one window.

    In the database, not in Django's cache: the default cache is per process, so with
    several server processes (or a restart) each would count on its own.
    """

    # "account:<sha256>" or "address:<sha256>"
    key: models.CharField[str, str] = models.CharField(max_length=80, unique=True)
    count: models.PositiveIntegerField[int, int] = models.PositiveIntegerField(default=0)
    # Unix time; rows whose window ended are swept on the next failure
    window_ends: models.FloatField[float, float] = models.FloatField(db_index=True)

    def __str__(self) -> str:
        return f"{self.key}: {self.count}"
