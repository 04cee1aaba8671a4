"""A suite to share: a 2×2 grid over two transcripts, one of them titled with markup, a
link and an API key (the report must show it masked and inert). Used by the suite report
tests, unit and browser."""

from __future__ import annotations

import json
from typing import Any

from suite_testdata import coding_chat, import_chat

from sessions_app import services as session_services

# An Anthropic key in the first request (the title): masked at import, must stay masked.
RAW_KEY = (
    "sk-ant-api03-Z1y2X3w4V5u6T7s8R9q0P1o2N3m4L5k6J7i8H9g0F1e2D3c4B5a6Z7y8X9w0V1u2T3s4R5q6P"
    "7o8N9m0L-QrStUvAA"
)
MASKED_PREFIX = "sk-ant…[masked"
HOSTILE = '<script>alert("suite")</script><img src=x onerror=alert(2)>'
LINK_TEXT = "https://evil.example/steal.js"
GRID = {"max_input_length": "6000,20000", "compact_threshold_ratio": "0.5,0.8"}


def hostile_chat() -> bytes:
    messages = json.loads(coding_chat(turns=10, size=3000, seed=9))
    messages[1]["content"] = f"Fix {HOSTILE} see {LINK_TEXT} with key {RAW_KEY}"
    return json.dumps(messages).encode()


def make_suite(owner: Any) -> Any:
    """Two transcripts × the 2×2 grid of qwenpaw, every run done (eager Celery)."""
    from suites_app import configs, services
    from suites_app.configs import Base

    outcome = session_services.upload_import(owner=owner, name="hostile.json", data=hostile_chat())
    assert outcome.error is None and outcome.upload is not None, outcome.error
    transcripts = [
        outcome.upload.transcripts.get(),
        import_chat(owner, seed=2, turns=10, size=3000),
    ]
    suite = services.suite_create(
        owner=owner, name=f"grid <b>bold</b> {RAW_KEY}", transcripts=transcripts,
        configs=configs.grid_configs(Base("qwenpaw"), GRID), grid_keys=list(GRID), enqueue=False,
    )  # fmt: skip
    services.suite_enqueue(suite)  # eager Celery: runs here
    suite.refresh_from_db()
    assert suite.items.filter(status="done").count() == 8, list(suite.items.values("status"))
    return suite
