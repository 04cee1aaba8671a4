"""``{% step_context run view %}``, ``{% message_list run view %}`` and ``{% zone_bar zone %}``:
a step's context, message list and zone bar (its one ``ZoneModel``), written in Python
(``replay_app.steps.step_html``, ``replay_app.steps.message_rows``)."""

from __future__ import annotations

from django import template
from django.utils.safestring import SafeString

from replay_app.models import Run
from replay_app.steps.at_step import StepView
from replay_app.steps.message_rows import message_list as render_message_list
from replay_app.steps.message_rows import zone_bar as render_zone_bar
from replay_app.steps.step_html import step_context as render_step_context
from replay_app.steps.zone_bar import ZoneModel

register = template.Library()


@register.simple_tag
def message_list(run: Run, view: StepView) -> SafeString:
    return render_message_list(run.pk, view.messages)


@register.simple_tag
def zone_bar(zone: ZoneModel) -> SafeString:
    return render_zone_bar(zone)


@register.simple_tag
def step_context(run: Run, view: StepView) -> SafeString:
    return render_step_context(run, view)
