"""The prompt editor's engine side: each strategy's real prompt, a version resolved into
native parameters or the lab's request edit, and the offline extraction of must-keep rules."""

from __future__ import annotations

import tomllib

import pytest
from builders import EchoSummarizer, call, conv, cycle, system, tool_result, user

from ctxlab.engine.native_config.prompts import prompt_export
from ctxlab.engine.replay import run
from ctxlab.engine.strategies import _claude_code_rules, _codex_rules
from ctxlab.engine.summarize import prompt_edit
from ctxlab.engine.summarize.offline import OfflineSummarizer

# openai/codex codex-rs/core/config.schema.json @ b8a1c8f8c4671c9a534eede7f32f11f5c9a5f938
# (Apache-2.0): the top-level ConfigToml properties the export writes, with their types. The
# schema says additionalProperties: false, so a key not listed there is rejected.
CODEX_SCHEMA_KEYS = {
    "compact_prompt": str,
    "experimental_compact_prompt_file": str,
    "model_auto_compact_token_limit": int,
    "model_context_window": int,
    "tool_output_token_limit": int,
}


def _session() -> list:  # type: ignore[type-arg]
    return [system(), *cycle(40, 600)]


@pytest.mark.parametrize("strategy", sorted(prompt_edit.TARGETS))
def test_default_text_is_what_the_replay_sends(strategy: str) -> None:
    """The editor starts from the prompt text the strategy really sends."""
    from builders import SMALL_WINDOWS

    from ctxlab.engine.strategies import get_strategy_class

    cls = get_strategy_class(strategy)
    params = dict(SMALL_WINDOWS.get(strategy, {})) or cls.window_params(3000)
    echo = EchoSummarizer("## Goal\nfix")
    run(conv(*_session()), strategy, params=params, summarizer=echo)
    assert echo.requests
    sent = [echo.requests[0].system, *(m.text for m in echo.requests[0].messages)]
    variants = prompt_edit.target(strategy).variants(params)
    assert any(v in text for v in variants for text in sent)


def test_original_prompt_resolves_to_no_change() -> None:
    for strategy, tgt in prompt_edit.TARGETS.items():
        resolved = prompt_edit.resolve(strategy, tgt.default_text())
        assert resolved.params == {} and resolved.edit is None and resolved.expressible


def test_codex_compact_prompt_replaces_the_prompt() -> None:
    echo = EchoSummarizer()
    params = {"model_context_window": 3000, "compact_prompt": "MY PROMPT <keep>"}
    run(conv(*_session()), "codex", params=params, summarizer=echo)
    assert echo.requests[0].messages[-1].text == "MY PROMPT <keep>"
    default = EchoSummarizer()
    run(conv(*_session()), "codex", params={"model_context_window": 3000}, summarizer=default)
    assert default.requests[0].messages[-1].text == _codex_rules.PROMPT_GOAL


def test_codex_version_is_its_native_parameter_and_exports_to_config_toml() -> None:
    text = 'Summarise. Keep "quoted" and back\\slash\nsecond line \x7f'
    resolved = prompt_edit.resolve("codex", text, ["src/a.py"])
    assert resolved.params == {"compact_prompt": prompt_edit.compose(text, ["src/a.py"])}
    native = prompt_export("codex", text, ["src/a.py"], params={"model_context_window": 3000})
    data = tomllib.loads(native.text)
    assert data["compact_prompt"] == prompt_edit.compose(text, ["src/a.py"])
    for key, value in data.items():
        assert isinstance(value, CODEX_SCHEMA_KEYS[key]), key
    assert native.unexpressed == ()


def test_claude_code_full_edit_is_a_lab_edit_and_instructions_are_native() -> None:
    base = _claude_code_rules.BASE_COMPACT_PROMPT
    edited = base.replace("Your task is", "YOUR JOB is") + "\nEXTRA"
    assert edited != base + "\nEXTRA"
    resolved = prompt_edit.resolve("claude_code", edited, ["keep errors"], "focus")
    assert resolved.params["custom_instructions"].startswith(
        "focus\n\n" + prompt_edit.RULES_HEADING
    )
    assert resolved.edit is not None and resolved.edit.text == edited
    assert not resolved.expressible
    echo = EchoSummarizer()
    editing = prompt_edit.EditingSummarizer(echo, resolved.edit)
    run(conv(*_session()), "claude_code", params={"context_window": 6000, **resolved.params},
        summarizer=editing)  # fmt: skip
    last = echo.requests[0].messages[-1].text
    assert base not in last and edited in last and "focus" in last
    assert editing.applied == len(echo.requests) and editing.missed == 0
    native = prompt_export("claude_code", edited, ["keep errors"], "focus")
    assert native.filename == "CLAUDE.md"
    assert native.text.startswith("# Compact Instructions\n\nfocus\n")
    assert native.unexpressed[0][0] == "compaction prompt"


@pytest.mark.parametrize("strategy", ["opencode", "gemini_cli", "pi"])
def test_agents_without_a_prompt_setting_say_so(strategy: str) -> None:
    text = prompt_edit.target(strategy).default_text() + "\nKeep every path."
    native = prompt_export(strategy, text)
    assert native.unexpressed[-1] == ("compaction prompt", text)
    assert "prompt" in native.notes[-1]


def test_offline_keeps_must_keep_lines_by_extraction() -> None:
    msgs = [system(), *cycle(3, 600), user("go on"), call("k", "bash", cmd="env"),
            tool_result("k", "A=1\nTOKEN_NAME=PELICAN-42 configured\nB=2"),
            *cycle(40, 600, start=3)]  # fmt: skip
    plain = prompt_edit.EditingSummarizer(OfflineSummarizer(), prompt_edit.PromptEdit())
    params = {"model_context_window": 3000}
    edit = prompt_edit.PromptEdit(rules=("PELICAN-42",))
    offline = prompt_edit.EditingSummarizer(OfflineSummarizer(), edit)
    result = run(conv(*msgs), "codex", params=params, summarizer=offline)
    without = run(conv(*msgs), "codex", params=params, summarizer=plain)
    first = result.summaries[0].output
    assert "PELICAN-42" not in without.summaries[0].output
    assert prompt_edit.OFFLINE_RULES_HEADING in first
    assert "PELICAN-42" in first.split(prompt_edit.OFFLINE_RULES_HEADING)[1]


def test_wrap_leaves_a_summarizer_alone_without_an_edit() -> None:
    echo = EchoSummarizer()
    assert prompt_edit.wrap(echo, None) is echo
    assert prompt_edit.wrap(echo, {"original": [], "text": "", "rules": []}) is echo
    wrapped = prompt_edit.wrap(echo, prompt_edit.PromptEdit(("a",), "b", ()).as_json())
    assert isinstance(wrapped, prompt_edit.EditingSummarizer) and wrapped.name == "echo"


def test_unknown_strategy_is_refused() -> None:
    with pytest.raises(ValueError, match="no prompt editor"):
        prompt_edit.target("aider")
