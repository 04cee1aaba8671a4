"""The Content-Security-Policy holds without inline or eval'd script: every page type sends
script-src 'self' only and renders no executable inline <script>, no on*= handler, no hx-on,
no htmx trigger filter or js: value; chart JSON blocks keep hostile strings inert."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from inspect_helpers import make_run

from ctxlab.web.plots import figure_html
from replay_app.configs import services as config_services
from replay_app.display import charts
from replay_app.runs import services
from replay_app.sweeps import sweep
from sessions_app import charts as usage_charts
from sessions_app import services as session_services
from sessions_app.models import Transcript

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_memo")]

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"
USAGE_FILE = CORPUS / "claude-code" / "sniffly-fed8ce56-bc79-401f-a83e-af084253362f.jsonl"
EVIL = "</script><script>alert(1)</script><!--<script>&amp;\u2028'\""
HX = {"HTTP_HX_REQUEST": "true"}


class _Scan(HTMLParser):
    """Every <script> (attributes + body) and every attribute a page could run."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self.problems: list[str] = []
        self._script: dict[str, str | None] | None = None
        self._body: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            value = value or ""
            bare = name.removeprefix("data-")
            if name.startswith("on"):
                self.problems.append(f"<{tag} {name}=...> inline event handler")
            if bare.startswith("hx-on"):
                self.problems.append(f"<{tag} {name}> needs eval")
            if bare == "hx-trigger" and "[" in value:
                self.problems.append(f"<{tag} hx-trigger={value!r}> filter needs eval")
            if bare in ("hx-vals", "hx-vars", "hx-headers") and value.lstrip().startswith(
                ("js:", "javascript:")
            ):
                self.problems.append(f"<{tag} {name}={value!r}> needs eval")
            if name in ("href", "src", "action", "formaction") and value.strip().lower().startswith(
                "javascript:"
            ):
                self.problems.append(f"<{tag} {name}={value!r}> javascript: URL")
        if tag == "script":
            self._script, self._body = dict(attrs), []

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            self._body.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self._script is not None:
            self.scripts.append((self._script, "".join(self._body)))
            self._script = None


def scan(html: str) -> _Scan:
    parser = _Scan()
    parser.feed(html)
    parser.close()
    return parser


def assert_no_inline_script(html: str, where: str) -> _Scan:
    page = scan(html)
    assert page.problems == [], where
    for attrs, body in page.scripts:
        if attrs.get("type") == "application/json":
            assert not attrs.get("src"), where
            json.loads(body)  # a data block, and a complete one
        else:
            assert attrs.get("src") and body.strip() == "", f"{where}: inline <script> {attrs}"
            assert attrs.get("type") in (None, "", "text/javascript", "module"), where
    return page


def script_src(response: Any) -> list[str]:
    csp = response["Content-Security-Policy"]
    directives = dict(d.strip().split(" ", 1) for d in csp.split(";"))
    return directives["script-src"].split()


def chart_figures(page: _Scan) -> dict[str, dict[str, Any]]:
    return {
        str(attrs["id"]): json.loads(body)
        for attrs, body in page.scripts
        if attrs.get("type") == "application/json"
    }


# --- JSON data blocks ------------------------------------------------------------------


def test_figure_json_block_keeps_a_hostile_string_inert() -> None:
    spec = {"data": [{"type": "scatter", "name": EVIL, "x": [1], "y": [2]}], "layout": {}}
    html = figure_html(spec, div_id="p", config={"displaylogo": False})
    page = assert_no_inline_script(html, "figure_html")
    # one element and one data block: nothing broke out of the block
    assert [a.get("id") for a, _ in page.scripts] == ["p-figure"]
    assert html.count("<") == 4  # <div>, </div>, <script>, </script>
    figure = chart_figures(page)["p-figure"]
    assert figure["data"][0]["name"] == EVIL  # escaped, not altered
    assert figure["config"] == {"displaylogo": False, "responsive": True}
    assert '<div id="p" class="plotly-graph-div" data-plotly="p-figure"></div>' in html


def test_usage_chart_with_hostile_compaction_kind() -> None:
    rows = [(1, 100, 0, 0, 0, 10), (3, 200, 50, 0, 0, 20)]
    html = usage_charts.usage_chart_html(rows, compactions=[{"kind": EVIL, "before_index": 2}])
    figure = chart_figures(assert_no_inline_script(html, "usage chart"))["usage-chart-figure"]
    assert figure["layout"]["annotations"][0]["text"] == EVIL
    assert [t["name"] for t in figure["data"]] == ["cache read", "uncached input", "output"]


def test_run_chart_keeps_png_button_config() -> None:
    series = charts.Series(steps=[0, 1], strategy=[10, 20], reference=[11, 21])
    html = charts.chart_html(
        charts.token_curve(series, (), window=None, threshold=None), div_id="c", filename="f"
    )
    config = chart_figures(scan(html))["c-figure"]["config"]
    assert config["toImageButtonOptions"] == {"format": "png", "scale": 2, "filename": "f"}
    assert config["displayModeBar"] is True and config["responsive"] is True


# --- every page type -------------------------------------------------------------------


@pytest.fixture
def pages(
    client: Client,
    user: Any,
    transcript: Transcript,
    django_capture_on_commit_callbacks: Any,
    staff_user: Any,
) -> dict[str, Any]:
    """One response per page type, charts included, with hostile strings where users or
    transcripts put them."""
    client.force_login(user)
    usage = session_services.upload_import(
        owner=user, name=USAGE_FILE.name, data=USAGE_FILE.read_bytes()
    ).upload
    assert usage is not None
    detail = usage.transcripts.get()
    detail.compactions = [{"kind": EVIL, "before_index": 5}]
    detail.save(update_fields=["compactions"])

    cow = make_run(user, transcript, "cowagent")
    cow.label = EVIL
    cow.ground_truth = {"exact": [s * 2 for s in range(cow.steps_total)], "exact_model": EVIL}
    cow.save(update_fields=["label", "ground_truth"])
    pico = make_run(user, transcript, "picoclaw")
    with django_capture_on_commit_callbacks(execute=True):
        group = services.group_create(
            owner=user,
            transcript=transcript,
            specs=sweep.specs(sweep.Base(strategy="qwenpaw"), "max_input_length", [20000, 60000]),
            name=EVIL,
        )
    config = config_services.config_create(
        owner=user, name=EVIL, strategy="qwenpaw", params={"max_input_length": 9000}
    )
    urls = {
        "home": "/",
        "transcripts": "/transcripts/",
        "transcript with usage chart": detail.get_absolute_url(),
        "transcript messages page (htmx)": detail.get_absolute_url() + "?page=2",
        "upload": f"/transcripts/files/{usage.pk}/",
        "strategies": "/strategies/",
        "strategy new": "/strategies/new/?preset=qwenpaw",
        "strategy edit": f"/strategies/{config.pk}/",
        "runs": "/runs/",
        "run new": f"/runs/new/?transcript={transcript.pk}",
        "sweep new": f"/runs/sweep/new/?transcript={transcript.pk}",
        "run with curve and ground truth": f"/runs/{cow.pk}/",
        "run step": f"/runs/{cow.pk}/steps/3/",
        "run lost": f"/runs/{cow.pk}/lost/",
        "group with sweep": f"/runs/groups/{group.pk}/",
        "sweep fragment": f"/runs/groups/{group.pk}/sweep/",
        "compare picker": "/compare/",
        "compare": f"/compare/?runs={cow.pk},{pico.pk}",
        "password change": "/accounts/password_change/",
    }
    out = {name: client.get(url) for name, url in urls.items()}
    out["run step (htmx)"] = client.get(f"/runs/{cow.pk}/steps/3/", **HX)
    out["login"] = Client().get("/accounts/login/")
    admin = Client()
    admin.force_login(staff_user)
    out["admin"] = admin.get("/admin/")
    return out


def test_every_page_type_runs_under_script_src_self(pages: dict[str, Any]) -> None:
    charts_seen: dict[str, dict[str, Any]] = {}
    for name, response in pages.items():
        assert response.status_code == 200, name
        assert script_src(response) == ["'self'"], name
        page = assert_no_inline_script(response.content.decode(), name)
        charts_seen.update(chart_figures(page))
    # the pages above drew every kind of chart, each a JSON block next to its element
    assert {
        "usage-chart-figure",
        "token-curve-plot-figure",
        "truth-plot-figure",
        "sweep-plot-figure",
        "compare-plot-figure",
    } <= set(charts_seen)
    # hostile strings made it into the figures intact (escaped in the block, not mangled)
    assert charts_seen["usage-chart-figure"]["layout"]["annotations"][0]["text"] == EVIL
    names = [t["name"] for t in charts_seen["truth-plot-figure"]["data"]]
    assert f"exact count_tokens ({EVIL})" in names
    compared = [t["name"] for t in charts_seen["compare-plot-figure"]["data"]]
    assert any(name.endswith(f" {EVIL}") for name in compared), compared  # "<run id> <label>"
    for name in ("transcript with usage chart", "compare", "group with sweep"):
        assert "<script>alert" not in pages[name].content.decode(), name


def test_htmx_never_evaluates(pages: dict[str, Any]) -> None:
    html = pages["home"].content.decode()
    assert (
        """<meta name="htmx-config" content='{"includeIndicatorStyles": false, "allowEval": false}'>"""
        in html
    )
