"""The compactor requests of qwenpaw and copaw (ReMe), and CowAgent's memory summariser
prompt, byte for byte against a fixture generated from the originals' own files
(tests/data/prompts/generate_compactor_requests.py says how; the wheels are not stored)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from builders import EchoSummarizer, assistant, call, conv, cycle, system, tool_result, user

from ctxlab.engine.replay import run
from ctxlab.engine.stages import prompts
from ctxlab.engine.strategies import _cowagent_rules as cow

FIXTURE = json.loads(
    (
        Path(__file__).resolve().parents[2] / "data" / "prompts" / "compactor_requests.json"
    ).read_text("utf-8")
)
INPUTS = FIXTURE["inputs"]


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("kind", ["initial", "update"])
def test_qwenpaw_request_is_byte_exact(lang: str, kind: str) -> None:
    want = FIXTURE["qwenpaw"][lang]
    previous = INPUTS["previous"] if kind == "update" else ""
    assert prompts.QWENPAW_SYSTEM[lang].encode() == want["system"].encode()
    assert prompts.qwenpaw_user(INPUTS["history"], previous, lang).encode() == want[kind].encode()


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("kind", ["initial", "update"])
def test_reme_request_is_byte_exact(lang: str, kind: str) -> None:
    want = FIXTURE["reme"][lang]
    previous = INPUTS["previous"] if kind == "update" else ""
    assert prompts.REME_SYSTEM[lang].encode() == want["system"].encode()
    assert prompts.reme_user(INPUTS["history"], previous, lang).encode() == want[kind].encode()


def test_qwenpaw_summary_template_is_byte_exact() -> None:
    assert FIXTURE["qwenpaw"]["summary_template"]["en"] == prompts.QWENPAW_SUMMARY_TEMPLATE


def test_cowagent_summariser_prompts_are_byte_exact() -> None:
    want = FIXTURE["cowagent"]
    assert cow.SUMMARY_SYSTEM_PROMPT.encode() == want["system"].encode()
    assert cow.summary_user_prompt(INPUTS["conversation"]).encode() == want["user"].encode()


def test_shipped_prompt_files_are_the_pinned_ones() -> None:
    for path, pinned in (
        (prompts.QWENPAW_FILE, prompts.QWENPAW_SHA256),
        (prompts.REME_FILE, prompts.REME_SHA256),
    ):
        assert hashlib.sha256(path.read_bytes()).hexdigest() == pinned
        assert path.name.split("-")[0] in {"qwenpaw", "reme"}
        assert (
            FIXTURE["sources_sha256"][
                "compactor_prompts.py" if path.name.startswith("qwenpaw") else "compactor.yaml"
            ]
            == pinned
        )


@pytest.mark.parametrize(("strategy", "source"), [("qwenpaw", "qwenpaw"), ("copaw", "reme")])
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_replayed_requests_carry_the_original_prompts(
    strategy: str, source: str, lang: str
) -> None:
    """A replay's first and second compactor requests: the original system prompt, and the
    user message ends with the original initial / update text."""
    params = {"max_input_length": 4096, "language": lang}
    if strategy == "copaw":
        params["token_counter"] = "bytes4"
    echo = EchoSummarizer("## Goal\nfix it")
    msgs = [system("S"), user("go"), call("t0"), tool_result("t0", "ok"), assistant("x")]
    run(conv(*msgs, *cycle(60, 400)), strategy, params=params, summarizer=echo)  # type: ignore[arg-type]
    assert len(echo.requests) >= 2
    first, second = echo.requests[0], echo.requests[1]
    want = FIXTURE[source][lang]
    tail_initial = want["initial"].split(INPUTS["history"], 1)[1]
    assert first.system == want["system"]
    assert first.messages[0].text.endswith(tail_initial)
    update_tail = (prompts.QWENPAW_UPDATE if source == "qwenpaw" else prompts.REME_UPDATE_SUFFIX)[
        lang
    ]
    assert second.messages[0].text.endswith(update_tail)
    assert update_tail in want["update"]


def test_roo_code_condense_prompt_is_byte_exact() -> None:
    """Roo Code's CONDENSE support prompt (RooCodeInc/Roo-Code @ d1e74cb3,
    src/shared/support-prompt.ts), the summary call's system prompt, and its last message."""
    from ctxlab.engine.strategies import roo_code

    data = roo_code.SUMMARY_PROMPT.encode("utf-8")
    assert hashlib.sha256(data).hexdigest() == (
        "ee9b4cf88a3424cd145743d6f097a3ba405647c29492f6ca84e56f1c6c5277da"
    )
    echo = EchoSummarizer()
    run(conv(system(), *cycle(6, size=900)), "roo_code",
        params={"contextWindow": 2000, "maxTokens": 200, "autoCondenseContextPercent": 50},
        summarizer=echo)  # fmt: skip
    request = echo.requests[0]
    assert request.system.encode() == data
    assert request.messages[-1].text == (
        "Summarize the conversation so far, as described in the prompt instructions."
    )
