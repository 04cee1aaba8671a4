"""Every strategy in the library saves from the web form with its defaults untouched, and
again with one value changed; each saved configuration then runs from the run form."""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any

import pytest
from django.test import Client

from ctxlab.engine.strategies import LIBRARY, get_strategy_class
from replay_app.configs import services as config_services
from replay_app.models import Run, RunStatus, StrategyConfig

pytestmark = pytest.mark.django_db


class _FormFields(HTMLParser):
    """What a browser posts for a form, nothing edited (inputs, checked boxes, the selected
    option, textareas)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.data: dict[str, Any] = {}
        self._select: str | None = None
        self._textarea: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        name = a.get("name", "")
        if tag == "input" and name and a.get("type") not in ("submit", "button"):
            if a.get("type") == "checkbox":
                if "checked" in a:
                    self.data[name] = "on"
            else:
                self.data[name] = a.get("value", "")
        elif tag == "select":
            self._select = name
        elif tag == "option" and self._select and "selected" in a:
            self.data[self._select] = a.get("value", "")
        elif tag == "textarea":
            self._textarea = name
            self.data[name] = ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "select":
            self._select = None
        elif tag == "textarea":
            self._textarea = None

    def handle_data(self, data: str) -> None:
        if self._textarea:
            self.data[self._textarea] += data.removeprefix("\n") if not self.data[
                self._textarea] else data  # fmt: skip


def _form_data(html: str) -> dict[str, Any]:
    form = html[html.index("config-form") :]
    parser = _FormFields()
    parser.feed(form[: form.index("</form>")])
    return {
        k: v
        for k, v in parser.data.items()
        if not k.startswith("stage-") and k != "csrfmiddlewaretoken"
    }


def _changed(strategy: str, data: dict[str, Any]) -> tuple[str, Any]:
    """One changed value: the strategy's window parameter halved."""
    name = get_strategy_class(strategy).WINDOW
    spec = next(p for p in get_strategy_class(strategy).PARAMS if p.name == name)
    return name, max(int(spec.min or 0), int(data[name] or 64_000) // 2, 1024)


@pytest.mark.parametrize("strategy", [*LIBRARY, "custom"])
def test_every_strategy_saves_with_defaults_and_a_change_and_runs(
    strategy: str, auth_client: Client, user: Any, small_transcript: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    page = auth_client.get(f"/strategies/new/?preset={strategy}")
    assert page.status_code == 200
    data = _form_data(page.content.decode())
    assert data["preset"] == strategy
    data["name"] = f"{strategy} defaults"
    response = auth_client.post("/strategies/new/", data)
    assert response.status_code == 302, response.content.decode()[:3000]
    saved = StrategyConfig.objects.get(owner=user, name=f"{strategy} defaults")
    defaults = {p.name: p.default for p in get_strategy_class(strategy).PARAMS}
    assert saved.strategy == strategy
    assert config_services.params_validate(strategy=strategy, params=saved.params) == defaults

    key, value = _changed(strategy, data)
    data.update(name=f"{strategy} changed", **{key: str(value)})
    assert auth_client.post("/strategies/new/", data).status_code == 302
    changed = StrategyConfig.objects.get(owner=user, name=f"{strategy} changed")
    effective = config_services.params_validate(strategy=strategy, params=changed.params)
    assert effective == {**defaults, key: value}

    with django_capture_on_commit_callbacks(execute=True):
        response = auth_client.post(
            "/runs/new/",
            {"transcript": small_transcript.pk, "configs": [saved.pk, changed.pk],
             "summarizer": "offline"},
        )  # fmt: skip
    assert response.status_code == 302
    runs = {r.config_id: r for r in Run.objects.filter(owner=user)}
    assert set(runs) == {saved.pk, changed.pk}
    assert {r.status for r in runs.values()} == {RunStatus.DONE}, [r.error for r in runs.values()]
    assert runs[changed.pk].params[key] == value != runs[saved.pk].params[key]
