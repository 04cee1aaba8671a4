"""The offline summariser reads a material once: a second request on the same material
(Gemini CLI's verification turn) answers as a fresh summariser would, and a request on
another material is read anew."""

from __future__ import annotations

from dataclasses import replace

from ctxlab.engine.core.summary_request import MaterialItem, PromptMessage, SummaryRequest
from ctxlab.engine.strategies.complexity_trap_summary import SECTIONS
from ctxlab.engine.summarize.offline import OfflineSummarizer


def _request(material: tuple[MaterialItem, ...], style: str = "sections") -> SummaryRequest:
    return SummaryRequest(
        strategy="t",
        system="s",
        messages=(PromptMessage("user", "x"),),
        style=style,  # type: ignore[arg-type]
        sections=SECTIONS,
        material=material,
    )


FIRST = (
    MaterialItem("user", "Please never touch migrations/0001.py; we must keep src/app.py", 0),
    MaterialItem("assistant", "I decided to use uv because pip is slow. Edited src/app.py", 1),
)
SECOND = (
    MaterialItem("user", "Fix KeyError: 'name' in lib/parse.py, avoid new deps", 2),
    MaterialItem("assistant", "Going to add parse_name() instead", 3),
)


def test_same_material_answers_as_a_fresh_summariser() -> None:
    summarizer = OfflineSummarizer()
    first = summarizer.summarize(_request(FIRST))
    again = summarizer.summarize(replace(_request(FIRST), messages=()))
    assert first.text == again.text == OfflineSummarizer().summarize(_request(FIRST)).text
    for style in ("bullets", "plain"):
        request = _request(FIRST, style)
        assert summarizer.summarize(request).text == OfflineSummarizer().summarize(request).text


def test_another_material_is_read_anew() -> None:
    summarizer = OfflineSummarizer()
    first = summarizer.summarize(_request(FIRST)).text
    second = summarizer.summarize(_request(SECOND)).text
    assert second == OfflineSummarizer().summarize(_request(SECOND)).text
    assert "lib/parse.py" in second and "lib/parse.py" not in first


def test_changing_an_answer_leaves_the_memo_alone() -> None:
    summarizer = OfflineSummarizer()
    slots = summarizer._slots(_request(FIRST), "en")
    expected = {k: list(v) for k, v in slots.items()}
    assert expected["goal"] and expected["constraints"]
    for lines in slots.values():
        lines.append("changed")
    assert summarizer._slots(_request(FIRST), "en") == expected
