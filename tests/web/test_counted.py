"""Issue 31, item 15: "1 parts". One pluralisation rule for the whole site
(``ctxlab.web.display.counted``, the ``counted`` template filter): the count as every page
writes numbers, the word in the number's form. Every template counts through it: no
``|pluralize`` of a noun and no hard plural after a count is left."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from django.template import Context, Template
from django.test import Client

from ctxlab.web.display import counted, plural_of

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("count", "word", "expected"),
    [
        (1, "part", "1 part"),
        (0, "part", "0 parts"),
        (2, "part", "2 parts"),
        (1204, "message", "1,204 messages"),
        ("1", "run", "1 run"),
        ([1], "summary", "1 summary"),
        ([1, 2], "summary", "2 summaries"),
        (3, "match", "3 matches"),
        (2, "day", "2 days"),
        (1, "API call", "1 API call"),
        (2, "tool result", "2 tool results"),
        (2, "child,children", "2 children"),
        (1, "child,children", "1 child"),
        (None, "part", "— parts"),
    ],
)
def test_counted(count: Any, word: str, expected: str) -> None:
    assert counted(count, word) == expected


def test_plural_of() -> None:
    assert [plural_of(w) for w in ("apology", "key", "box", "char")] == [
        "apologies",
        "keys",
        "boxes",
        "chars",
    ]


def test_counted_filter_is_a_builtin() -> None:
    text = Template('{{ one|counted:"part" }} · {{ many|counted:"part" }}').render(
        Context({"one": [object()], "many": 3})
    )
    assert text == "1 part · 3 parts"


def _templates() -> list[Path]:
    return [
        p
        for app in ("templates", "replay_app", "sessions_app", "judge_app", "suites_app", "ctxlab")
        for p in (ROOT / app).rglob("*.html")
    ]


NOUNS = (
    "parts|conversations|messages|runs|facts|chars|characters|calls|requests|tokens|files"
    "|summaries|compactions|results"
)


def test_every_template_counts_through_the_one_rule() -> None:
    plural_after_count = re.compile(r"\{\{ [\w.]+(?:\|length)?(?:\|num)? \}\} (?:" + NOUNS + r")\b")
    noun_pluralize = re.compile(
        r"\}\} [A-Za-z ]*[a-z]\{\{ [\w.|]+\|pluralize(?::\"[a-z]*,?[a-z]*\")? \}\}"
    )
    found = []
    for path in _templates():
        text = path.read_text(encoding="utf-8")
        for pattern in (plural_after_count, noun_pluralize):
            found += [f"{path.relative_to(ROOT)}: {m.group(0)}" for m in pattern.finditer(text)]
    assert found == []


@pytest.mark.django_db
def test_a_one_part_tool_result_says_1_part(user: Any, client: Client) -> None:
    from sessions_app import services

    messages = [
        {"role": "user", "content": "list the files"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "bash", "input": {"cmd": "ls"}}],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": [{"type": "text", "text": "a.py"}],
                }
            ],
        },
        {"role": "assistant", "content": "There is a.py."},
    ]
    chat = {"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": messages}
    outcome = services.upload_import(owner=user, name="chat.json", data=json.dumps(chat).encode())
    assert outcome.upload is not None
    transcript = outcome.upload.transcripts.get()
    client.force_login(user)
    page = client.get(f"/transcripts/{transcript.pk}/").content.decode()
    assert re.search(r"· 1 part\b", page) and "1 parts" not in page
    assert "(1 tool call, 1 tool result)" in page
