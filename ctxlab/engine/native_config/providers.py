"""Coding agents' and providers' shapes: Anthropic, Codex, OpenCode, Claude Code, Gemini CLI, Cline,
pi."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from .base import NativeConfig, json_text, param_default


def _anthropic_edits(p: Mapping[str, Any]) -> NativeConfig:
    tool_edit: dict[str, Any] = {
        "type": "clear_tool_uses_20250919",
        "trigger": {"type": p["trigger_type"], "value": p["trigger"]},
        "keep": {"type": "tool_uses", "value": p["keep"]},
    }
    if p["clear_at_least"]:
        tool_edit["clear_at_least"] = {"type": "input_tokens", "value": p["clear_at_least"]}
    if p["exclude_tools"]:
        tool_edit["exclude_tools"] = list(p["exclude_tools"])
    if p["clear_tool_inputs"]:
        inputs = p["clear_tool_inputs"]
        tool_edit["clear_tool_inputs"] = list(inputs) if isinstance(inputs, list) else True
    edits: list[dict[str, Any]] = []
    if p["clear_thinking"]:
        keep: Any = (
            "all"
            if p["thinking_keep_all"]
            else {"type": "thinking_turns", "value": p["thinking_keep"]}
        )
        edits.append({"type": "clear_thinking_20251015", "keep": keep})
    edits.append(tool_edit)
    content = {"edits": edits}
    notes = (
        "Send with the beta header anthropic-beta: context-management-2025-06-27; "
        "clear_thinking_20251015 needs extended thinking enabled.",
        f"max_tokens={p['max_tokens']}: the request's own max_tokens (top level).",
        f"placeholder {p['placeholder']!r}, keep_counts_excluded={p['keep_counts_excluded']}, "
        f"strip_prior_thinking={p['strip_prior_thinking']}: replay readings of undocumented "
        "server behaviour, not request fields.",
        f"token_ratio={p['token_ratio']}, context_window={p['context_window']}: replay "
        "estimator and model window, not request fields.",
    )
    return NativeConfig(
        "anthropic_edits", "context_management.json", content, json_text(content), notes
    )


def _codex(p: Mapping[str, Any]) -> NativeConfig:
    content: dict[str, Any] = {"model_context_window": p["model_context_window"]}
    if p["model_auto_compact_token_limit"]:
        content["model_auto_compact_token_limit"] = p["model_auto_compact_token_limit"]
    if p["tool_output_token_limit"]:
        content["tool_output_token_limit"] = p["tool_output_token_limit"]
    if p["compact_prompt"]:
        content["compact_prompt"] = p["compact_prompt"]
    text = "".join(f"{key} = {toml_value(value)}\n" for key, value in content.items())
    notes = (
        "model_auto_compact_token_limit omitted = 90% of model_context_window."
        if not p["model_auto_compact_token_limit"]
        else "model_auto_compact_token_limit set explicitly.",
        f"auto_compact_default={p['auto_compact_default']!r}, prompt_version="
        f"{p['prompt_version']!r}, truncation_policy={p['truncation_policy']!r}: Codex version "
        "and model family, not config keys.",
        f"compact_user_message_max_tokens={p['compact_user_message_max_tokens']}: "
        "COMPACT_USER_MESSAGE_MAX_TOKENS in codex-rs/core/src/compact.rs.",
        "compact_prompt replaces the whole compaction prompt; experimental_compact_prompt_file "
        "(an absolute path) reads it from a file instead: set one of the two.",
    )
    return NativeConfig("codex", "config.toml", content, text, notes)


def toml_value(value: Any) -> str:
    """A TOML value: integers as they are, strings as basic strings (JSON's escapes are
    TOML's, plus DEL, which TOML does not allow unescaped)."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    return str(value)


def _opencode(p: Mapping[str, Any]) -> NativeConfig:
    compaction: dict[str, Any] = {"auto": p["compaction_auto"], "prune": p["compaction_prune"]}
    if p["compaction_reserved"] >= 0:
        compaction["reserved"] = p["compaction_reserved"]
    content = {"compaction": compaction}
    limit = {"context": p["context"], "output": p["output"]}
    if p["input"]:
        limit["input"] = p["input"]
    notes = (
        f"model limits {json.dumps(limit)}: the model's models.dev entry, or for a custom "
        "model provider.<id>.models.<id>.limit in opencode.json.",
        "compaction.reserved omitted = min(20000, the model's max output tokens)."
        if p["compaction_reserved"] < 0
        else "compaction.reserved set explicitly.",
        f"output_token_max={p['output_token_max']}: environment "
        "OPENCODE_EXPERIMENTAL_OUTPUT_TOKEN_MAX.",
        f"compaction_buffer={p['compaction_buffer']}, prune_protect={p['prune_protect']}, "
        f"prune_minimum={p['prune_minimum']}, prune_protect_turns={p['prune_protect_turns']}, "
        f"protected_tools={p['protected_tools']!r}: constants in session/overflow.ts and "
        "session/compaction.ts.",
        f"usable_rule={p['usable_rule']!r}, overflow_compare={p['overflow_compare']!r}, "
        f"usage_count={p['usage_count']!r}, prompt_version={p['prompt_version']!r}, "
        f"system_prompt={p['system_prompt']!r}: OpenCode version, not configuration; "
        f"usage_source={p['usage_source']!r} is a replay switch.",
    )
    return NativeConfig("opencode", "opencode.json", content, json_text(content), notes)


def _claude_code(p: Mapping[str, Any]) -> NativeConfig:
    env: dict[str, str] = {}
    if 0 < p["autocompact_pct_override"] <= 100:
        env["CLAUDE_AUTOCOMPACT_PCT_OVERRIDE"] = f"{p['autocompact_pct_override']:g}"
    if p["disable_auto_compact"]:
        env["DISABLE_AUTO_COMPACT"] = "1"
    cap = claude_code_window_cap(p)
    if cap:
        env["CLAUDE_CODE_AUTO_COMPACT_WINDOW"] = str(cap)
    content: dict[str, Any] = {"autoCompactEnabled": p["auto_compact_enabled"]}
    if env:
        content["env"] = env
    notes = (
        "autoCompactEnabled is also toggled by /config (2.1.88 reads it from the global "
        "config, ~/.claude.json); the env block can equally be exported in the shell.",
        f"context_window={p['context_window']}, output_reserve={p['output_reserve']}, "
        f"autocompact_buffer_tokens={p['autocompact_buffer_tokens']}: the model's window and "
        "constants in services/compact/autoCompact.ts, not settings.",
        f"prompt_version={p['prompt_version']!r}: Claude Code version; custom_instructions: "
        "/compact <instructions> or a PreCompact hook; transcript_path: replay knob.",
    )
    return NativeConfig("claude_code", "settings.json", content, json_text(content), notes)


def claude_code_window_cap(p: Mapping[str, Any]) -> int:
    """``CLAUDE_CODE_AUTO_COMPACT_WINDOW`` for these params: the explicit cap, or a
    ``context_window`` below the default (the cap takes the smaller window, ``Math.min``)."""
    default = param_default("claude_code", "context_window")
    caps = [int(p["auto_compact_window"])] if p["auto_compact_window"] else []
    if int(p["context_window"]) < default:
        caps.append(int(p["context_window"]))
    return min(caps) if caps else 0


def _anthropic_server_compaction(p: Mapping[str, Any]) -> NativeConfig:
    edit: dict[str, Any] = {
        "type": "compact_20260112",
        "trigger": {"type": "input_tokens", "value": p["trigger"]},
    }
    if str(p["instructions"]).strip():
        edit["instructions"] = p["instructions"]
    if p["pause_after_compaction"]:
        edit["pause_after_compaction"] = True
    content = {"edits": [edit]}
    notes = (
        "Send with the beta header anthropic-beta: compact-2026-01-12; append the whole "
        "response.content (the compaction block first) to the conversation.",
        f"summary_source={p['summary_source']!r}, context_window={p['context_window']}: "
        "replay choices and the model window, not request fields.",
    )
    return NativeConfig(
        "anthropic_server_compaction",
        "context_management.json",
        content,
        json_text(content),
        notes,
    )


def _gemini_cli(p: Mapping[str, Any]) -> NativeConfig:
    content = {
        "model": {"compressionThreshold": p["compression_threshold"]},
        "tools": {"truncateToolOutputThreshold": p["truncate_tool_output_threshold"]},
    }
    notes = (
        "~/.gemini/settings.json (user) or .gemini/settings.json (workspace); both keys need "
        "a restart. A set compressionThreshold also overrides the remote experiment flag "
        "(Config.getCompressionThreshold reads it first).",
        "truncateToolOutputThreshold is capped at 4 x (token limit - last prompt tokens) "
        "by Config.getTruncateToolOutputThreshold.",
        f"token_limit={p['token_limit']}: tokenLimit(model) in core/tokenLimits.ts, chosen "
        "by model.name, not a setting.",
        f"preserve_threshold={p['preserve_threshold']:g}, function_response_token_budget="
        f"{p['function_response_token_budget']}: constants in chatCompressionService.ts.",
        f"verification={p['verification']}: Gemini CLI version (the single call of earlier "
        f"releases); project_temp_dir {p['project_temp_dir']!r}: Storage.getProjectTempDir(), "
        "not a setting.",
    )
    return NativeConfig("gemini_cli", "settings.json", content, json_text(content), notes)


def _cline(p: Mapping[str, Any]) -> NativeConfig:
    content = {"compactionEnabled": True, "compactionStrategy": p["strategy"]}
    notes = (
        "~/.cline/data/settings/global-settings.json (CLINE_GLOBAL_SETTINGS_PATH or "
        "CLINE_DATA_DIR move it); the CLI's /settings panel writes it and "
        "`cline --compaction agentic|basic` overrides it for one run.",
        f"preserve_recent_tokens={p['preserve_recent_tokens']}, summary_max_output_tokens="
        f"{p['summary_max_output_tokens']}: an SDK embedder's CoreSessionConfig "
        "compaction.{preserveRecentTokens, summarizer.maxOutputTokens}, not a settings file.",
        f"max_input_tokens={p['max_input_tokens']}, max_tokens={p['max_tokens']}: the "
        "model's info (maxInputTokens, maxTokens) from the provider's model catalogue.",
        f"trigger_ratio={p['trigger_ratio']:g}, target_ratio={p['target_ratio']:g}: constants "
        "in the SDK's compaction code (0.75 was the VS Code extension's older "
        "autoCondenseThreshold state key); tool_aliases: a replay reading.",
    )
    return NativeConfig("cline", "global-settings.json", content, json_text(content), notes)


def _pi(p: Mapping[str, Any]) -> NativeConfig:
    """pi-mono settings-manager.ts: ``compaction.{enabled, reserveTokens, keepRecentTokens}``
    in ``~/.pi/agent/settings.json`` (global) or ``<cwd>/.pi/settings.json`` (project)."""
    content = {
        "compaction": {
            "enabled": p["enabled"],
            "reserveTokens": p["reserveTokens"],
            "keepRecentTokens": p["keepRecentTokens"],
        }
    }
    notes = (
        "Global ~/.pi/agent/settings.json or per project <cwd>/.pi/settings.json; "
        "/autocompact toggles compaction.enabled.",
        f"contextWindow={p['contextWindow']}: the model's contextWindow (pi's model registry, "
        "or a custom model in ~/.pi/agent/models.json), not a setting.",
        f"rules={p['rules']!r}: the pi version replayed (install that release); "
        f"follow_originals={p['follow_originals']!r}: a replay option of ctxlab.",
    )
    return NativeConfig("pi", "settings.json", content, json_text(content), notes)


def _goose(p: Mapping[str, Any]) -> NativeConfig:
    """Goose reads ``GOOSE_AUTO_COMPACT_THRESHOLD`` through ``Config::global().get_param``:
    ``~/.config/goose/config.yaml`` (or the environment variable of the same name)."""
    content = {"GOOSE_AUTO_COMPACT_THRESHOLD": p["GOOSE_AUTO_COMPACT_THRESHOLD"]}
    text = "".join(f"{key}: {value}\n" for key, value in content.items())
    notes = (
        "~/.config/goose/config.yaml, or the environment variable of the same name; a "
        "threshold <= 0 or >= 1 turns auto-compaction off.",
        f"context_limit={p['context_limit']}: the model's context limit, or the environment "
        "variable GOOSE_CONTEXT_LIMIT (model.rs reads it with std::env::var).",
        f"removal_percentages={p['removal_percentages']!r}: the constant in "
        "context_mgmt/mod.rs do_compact, not configuration.",
    )
    return NativeConfig("goose", "config.yaml", content, text, notes)


def _roo_code(p: Mapping[str, Any]) -> NativeConfig:
    """Roo Code's settings export (``src/core/config/importExport.ts``): ``{providerProfiles,
    globalSettings}``; import requires ``providerProfiles`` and merges its ``apiConfigs``
    into the existing ones, so an empty map keeps every provider profile."""
    settings: dict[str, Any] = {
        "autoCondenseContext": p["autoCondenseContext"],
        "autoCondenseContextPercent": p["autoCondenseContextPercent"],
    }
    prompt = str(p["customCondensingPrompt"]).strip()
    if prompt:
        settings["customSupportPrompts"] = {"CONDENSE": prompt}
    content = {
        "providerProfiles": {"currentApiConfigName": "default", "apiConfigs": {}},
        "globalSettings": settings,
    }
    notes = (
        "roo-code-settings.json: Settings -> About -> Import (or the roo-cline."
        "autoImportSettingsPath setting); currentApiConfigName names the profile made "
        "current ('default' is Roo Code's first profile: rename it to yours).",
        f"contextWindow={p['contextWindow']}, maxTokens={p['maxTokens']}: the model's info "
        "(contextWindow, maxTokens), not settings.",
    )
    return NativeConfig("roo_code", "roo-code-settings.json", content, json_text(content), notes)


def _crush(p: Mapping[str, Any]) -> NativeConfig:
    """Crush's ``crushrc`` (Bash, ``docs/config/README.md``): ``option auto-summarize``;
    the deprecated ``crush.json`` holds ``options.disable_auto_summarize`` instead."""
    enabled = not p["disable_auto_summarize"]
    content = {"option": {"auto-summarize": enabled}}
    text = f"option auto-summarize {'true' if enabled else 'false'}\n"
    notes = (
        "~/.config/crush/crushrc (global) or ./.crushrc / ./crushrc (project); the legacy "
        'crush.json writes it as {"options": {"disable_auto_summarize": '
        f"{'false' if enabled else 'true'}" + "}}.",
        f"context_window={p['context_window']}: the model's catwalk entry, or "
        "`model add <provider>/<model> --context-window N` for a model you register.",
    )
    return NativeConfig("crush", "crushrc", content, text, notes)


def _kimi_cli(p: Mapping[str, Any]) -> NativeConfig:
    """Kimi CLI's ``~/.kimi/config.toml`` (``src/kimi_cli/config.py``): the
    ``[loop_control]`` table's ``reserved_context_size`` and ``compaction_trigger_ratio``."""
    content = {
        "loop_control": {
            "reserved_context_size": p["reserved_context_size"],
            "compaction_trigger_ratio": p["compaction_trigger_ratio"],
        }
    }
    text = "[loop_control]\n" + "".join(
        f"{key} = {toml_value(value)}\n" for key, value in content["loop_control"].items()
    )
    notes = (
        "~/.kimi/config.toml (or the file given to --config-file): merge the [loop_control] "
        "table into yours.",
        f"max_context_size={p['max_context_size']}: the model's, in its [models.<name>] "
        "table (set from the platform's context_length when the model is added).",
    )
    return NativeConfig("kimi_cli", "config.toml", content, text, notes)


SHAPES: dict[str, Callable[[Mapping[str, Any]], NativeConfig]] = {
    "anthropic_edits": _anthropic_edits,
    "codex": _codex,
    "opencode": _opencode,
    "claude_code": _claude_code,
    "anthropic_server_compaction": _anthropic_server_compaction,
    "gemini_cli": _gemini_cli,
    "cline": _cline,
    "pi": _pi,
    "goose": _goose,
    "roo_code": _roo_code,
    "crush": _crush,
    "kimi_cli": _kimi_cli,
}
