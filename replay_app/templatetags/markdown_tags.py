"""``{{ text|safe_markdown }}``: a summary as safe HTML (display/markdown_safe.py escapes
everything first, then adds only its own tags), so summaries read as markdown wherever
they are shown. Secrets are masked again first (``secrets.mask``, as the report does): a
summariser may repeat one it was sent."""

from __future__ import annotations

from django import template
from django.utils.safestring import SafeString, mark_safe

from ctxlab.engine.privacy.secrets import mask
from replay_app.display.markdown_safe import render

register = template.Library()


@register.filter
def safe_markdown(text: str | None) -> SafeString:
    return mark_safe(render(mask(str(text or ""))))  # noqa: S308 - render() escapes before markup
