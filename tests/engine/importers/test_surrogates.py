from __future__ import annotations

import json

from ctxlab.engine import importers
from ctxlab.engine.tokens.cl100k import reference_counter


def test_parse_lone_surrogate_replaced_and_warned() -> None:
    data = json.dumps([{"role": "user", "content": "bad \ud800 char"}]).encode()
    assert b"\\ud800" in data
    parsed = importers.parse(data, name="s.json", format="openai-chat")
    text = parsed.conversations[0].messages[0].text
    assert text == "bad \ufffd char"
    text.encode("utf-8")  # must not raise
    reference_counter().count(text)
    assert any("surrogate" in w.message for w in parsed.warnings)


def test_parse_surrogate_pair_untouched() -> None:
    data = json.dumps([{"role": "user", "content": "smile \U0001f600"}]).encode()
    assert b"\\ud83d\\ude00" in data
    parsed = importers.parse(data, name="p.json", format="openai-chat")
    assert parsed.conversations[0].messages[0].text == "smile \U0001f600"
    assert not any("surrogate" in w.message for w in parsed.warnings)
