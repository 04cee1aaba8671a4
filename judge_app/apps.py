from __future__ import annotations

from django.apps import AppConfig


class JudgeAppConfig(AppConfig):
    """Probes of what a compaction removed, scored offline and by Claude, and the
    after-effects of the original agent's own compactions."""

    name = "judge_app"
    verbose_name = "Probes"
