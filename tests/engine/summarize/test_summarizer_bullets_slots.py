"""The offline summariser's bullet style reads only the slots it shows (goal, decisions,
done, in progress): its text equals the one made from every slot, and a later request in
another style on the same material still gets every slot (facts, constraints, next)."""

from __future__ import annotations

from ctxlab.engine.core.summary_request import MaterialItem, PromptMessage, Section, SummaryRequest
from ctxlab.engine.summarize.offline import OfflineSummarizer

MATERIAL = (
    MaterialItem("user", "Fix the crash in /src/app/main.py; you must keep the API stable.", 1),
    MaterialItem("assistant", "I decided to use a lock because the cache is shared.", 2),
    MaterialItem("user", "[tool_result]\nTraceback: ValueError at /src/app/cache.py line 9", 3),
    MaterialItem("assistant", "Patched cache_lookup in /src/app/cache.py.", 4),
    MaterialItem("user", "Now please run the tests at https://ci.example.org/job/7", 5),
    MaterialItem("assistant", "Tests pass; next I will update the changelog.", 6),
)


def _request(style: str) -> SummaryRequest:
    return SummaryRequest(
        strategy="t",
        system="s",
        messages=(PromptMessage("user", "summarise"),),
        style=style,  # type: ignore[arg-type]
        sections=(
            Section("## Goal", "goal"),
            Section("## Constraints", "constraints"),
            Section("## Critical", "critical"),
            Section("## Next", "next"),
        ),
        material=MATERIAL,
    )


def test_bullets_equal_the_bullets_made_from_every_slot() -> None:
    bullets = _request("bullets")
    lean = OfflineSummarizer().summarize(bullets).text
    full = OfflineSummarizer()
    full._slots(bullets, "en")  # every slot read first: the bullets reuse that reading
    assert full.summarize(bullets).text == lean
    assert "decided to use a lock" in lean and "Tests pass" in lean


def test_sections_after_bullets_on_the_same_material_read_every_slot() -> None:
    summarizer = OfflineSummarizer()
    summarizer.summarize(_request("bullets"))
    after = summarizer.summarize(_request("sections")).text
    assert after == OfflineSummarizer().summarize(_request("sections")).text
    assert "/src/app/cache.py" in after  # a fact: read only for the full slots
    assert "must keep the API stable" in after  # a constraint
