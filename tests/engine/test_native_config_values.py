"""Native exports carry every changed value, or name what the target format cannot hold."""

from __future__ import annotations

import json

import pytest

from ctxlab.engine.native_config import NATIVE_SHAPES, media_type, native_config
from ctxlab.engine.strategies import get_strategy_class


@pytest.mark.parametrize("strategy", sorted(NATIVE_SHAPES))
def test_defaults_lose_nothing(strategy: str) -> None:
    assert native_config(strategy).unexpressed == ()


def test_claude_code_window_is_exported_as_the_auto_compact_window_cap() -> None:
    native = native_config("claude_code", {"context_window": 60_000})
    assert json.loads(native.text)["env"]["CLAUDE_CODE_AUTO_COMPACT_WINDOW"] == "60000"
    assert native.unexpressed == ()
    # an explicit smaller cap wins (Math.min), a larger window cannot be set from settings
    both = native_config("claude_code", {"context_window": 60_000, "auto_compact_window": 50_000})
    assert both.content["env"]["CLAUDE_CODE_AUTO_COMPACT_WINDOW"] == "50000"
    wide = native_config("claude_code", {"context_window": 1_000_000})
    assert "env" not in wide.content and wide.unexpressed == (("context_window", 1_000_000),)


def test_constants_changed_are_listed_by_name_with_their_values() -> None:
    native = native_config(
        "claude_code", {"context_window": 60_000, "output_reserve": 6_000, "prompt_version": "2.0"}
    )
    assert native.unexpressed == (("output_reserve", 6_000), ("prompt_version", "2.0"))
    data = native.as_dict()
    assert data["unexpressed"] == [
        {"param": "output_reserve", "value": 6_000},
        {"param": "prompt_version", "value": "2.0"},
    ]
    json.loads(native.text)  # JSON takes no comments: the list lives beside the file


def test_toml_names_what_it_cannot_hold_in_a_comment() -> None:
    native = native_config("codex", {"compact_user_message_max_tokens": 100})
    assert native.media_type == "application/toml"
    assert native.text.splitlines()[0] == (
        "# Not expressible in config.toml: compact_user_message_max_tokens=100"
    )


@pytest.mark.parametrize("strategy", sorted(NATIVE_SHAPES))
def test_every_changed_value_is_in_the_file_or_listed(strategy: str) -> None:
    """Change each numeric parameter by one step and check it lands somewhere."""
    cls = get_strategy_class(strategy)
    for spec in cls.PARAMS:
        if spec.type != "int" or isinstance(spec.default, bool) or spec.choices:
            continue
        value = spec.default + 1
        if spec.max is not None and value > spec.max:
            value = spec.default - 1
        try:
            native = native_config(strategy, {spec.name: value})
        except ValueError:
            continue  # a value another parameter constrains
        listed = dict(native.unexpressed)
        carried = str(value) in native.text or str(value) in json.dumps(native.content)
        assert spec.name in listed or carried, (spec.name, native.text)


def test_media_types() -> None:
    assert media_type("config.toml") == "application/toml"
    assert media_type("settings.json") == "application/json"
    assert media_type("agent.py") == "text/x-python"
