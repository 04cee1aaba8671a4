from __future__ import annotations

from django.apps import AppConfig


class PromptsAppConfig(AppConfig):
    name = "prompts_app"
    verbose_name = "Prompt editor"
