"""Gemini CLI's settings.json and Cline's global-settings.json, parsed back and checked
against the parameters they were written from."""

from __future__ import annotations

import json

from ctxlab.engine.native_config import native_config
from ctxlab.engine.strategies import get_strategy_class


def test_gemini_cli_settings_json_carries_both_settings() -> None:
    native = native_config(
        "gemini_cli", {"compression_threshold": 0.7, "truncate_tool_output_threshold": 12_000}
    )
    assert (native.filename, native.media_type) == ("settings.json", "application/json")
    data = json.loads(native.text)
    assert data == native.content
    # the keys settingsSchema.ts defines: model.compressionThreshold, tools.truncate…
    assert data["model"] == {"compressionThreshold": 0.7}
    assert data["tools"] == {"truncateToolOutputThreshold": 12_000}
    assert native.unexpressed == ()


def test_gemini_cli_file_read_back_gives_the_same_trigger() -> None:
    params = {"compression_threshold": 0.35, "truncate_tool_output_threshold": 5_000}
    data = json.loads(native_config("gemini_cli", params).text)
    cls = get_strategy_class("gemini_cli")
    read_back = {
        "compression_threshold": data["model"]["compressionThreshold"],
        "truncate_tool_output_threshold": data["tools"]["truncateToolOutputThreshold"],
    }
    assert cls(read_back).params == cls(params).params


def test_gemini_cli_constants_are_unexpressed_with_their_values() -> None:
    changed = {
        "token_limit": 200_000,
        "preserve_threshold": 0.4,
        "function_response_token_budget": 10_000,
        "verification": False,
        "project_temp_dir": "/tmp/gem",
    }
    native = native_config("gemini_cli", changed)
    assert dict(native.unexpressed) == changed
    data = json.loads(native.text)  # JSON takes no comment: the list lives beside the file
    assert set(data) == {"model", "tools"}
    assert data["model"]["compressionThreshold"] == 0.5  # the default, still written
    assert any("token_limit=200000" in note for note in native.notes)


def test_cline_global_settings_carry_the_strategy() -> None:
    for strategy in ("agentic", "basic"):
        native = native_config("cline", {"strategy": strategy})
        assert native.filename == "global-settings.json"
        data = json.loads(native.text)
        assert data == {"compactionEnabled": True, "compactionStrategy": strategy}
        assert native.unexpressed == ()


def test_cline_thresholds_and_sdk_options_are_unexpressed() -> None:
    changed = {
        "trigger_ratio": 0.75,
        "target_ratio": 0.6,
        "preserve_recent_tokens": 8_000,
        "summary_max_output_tokens": 2_048,
        "max_input_tokens": 200_000,
        "max_tokens": 8_192,
        "tool_aliases": {},
    }
    native = native_config("cline", {"strategy": "basic", **changed})
    assert dict(native.unexpressed) == changed
    assert json.loads(native.text)["compactionStrategy"] == "basic"
    notes = " ".join(native.notes)
    assert "preserve_recent_tokens=8000" in notes and "trigger_ratio=0.75" in notes
