"""Admin registrations: every model of this app is registered here."""

from __future__ import annotations
