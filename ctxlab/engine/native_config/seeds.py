"""The five seed agents' shapes: QwenPaw, CoPaw, CowAgent, PicoClaw, BaseAgent."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .base import NativeConfig, json_text


def _qwenpaw(p: Mapping[str, Any]) -> NativeConfig:
    content = {
        "language": p["language"],
        "running": {
            "max_input_length": p["max_input_length"],
            "context_manager_backend": "light",
            "light_context_config": {
                "dialog_path": p["dialog_path"],
                "token_count_estimate_divisor": p["token_count_estimate_divisor"],
                "context_compact_config": {
                    "enabled": p["context_compact_enabled"],
                    "compact_threshold_ratio": p["compact_threshold_ratio"],
                    "reserve_threshold_ratio": p["reserve_threshold_ratio"],
                    "compact_with_thinking_block": p["compact_with_thinking_block"],
                },
                "tool_result_pruning_config": {
                    "enabled": p["tool_result_pruning_enabled"],
                    "pruning_recent_n": p["pruning_recent_n"],
                    "pruning_old_msg_max_bytes": p["pruning_old_msg_max_bytes"],
                    "pruning_recent_msg_max_bytes": p["pruning_recent_msg_max_bytes"],
                    "offload_retention_days": p["offload_retention_days"],
                    "tool_results_cache": p["tool_results_cache"],
                    "exempt_file_extensions": list(p["exempt_file_extensions"]),
                    "exempt_tool_names": list(p["exempt_tool_names"]),
                },
            },
        },
    }
    notes = (
        "max_input_length: QwenPaw reads it from the active model's info when the model is "
        "known; running.max_input_length applies otherwise.",
        f"working_dir {p['working_dir']!r}: the agent's working directory (QWENPAW_WORKING_DIR).",
    )
    return NativeConfig("qwenpaw", "agent.json", content, json_text(content), notes)


def _copaw(p: Mapping[str, Any]) -> NativeConfig:
    content = {
        "agents": {
            "language": p["language"],
            "running": {
                "max_input_length": p["max_input_length"],
                "memory_compact_ratio": p["memory_compact_ratio"],
                "memory_reserve_ratio": p["memory_reserve_ratio"],
                "enable_tool_result_compact": p["enable_tool_result_compact"],
                "tool_result_compact_keep_n": p["tool_result_compact_keep_n"],
            },
        }
    }
    notes = (
        f"memory_compact_keep_recent: environment COPAW_MEMORY_COMPACT_KEEP_RECENT="
        f"{p['memory_compact_keep_recent']}",
        f"tool_result_threshold={p['tool_result_threshold']}, retention_days="
        f"{p['retention_days']}: ReMeLight constructor arguments (not in config.json).",
        f"token_counter {p['token_counter']!r}: CoPaw uses the Qwen2.5 tokenizer "
        "(bytes//4 is its fallback).",
        f"working_dir {p['working_dir']!r}: environment COPAW_WORKING_DIR.",
    )
    return NativeConfig("copaw", "config.json", content, json_text(content), notes)


def _cowagent(p: Mapping[str, Any]) -> NativeConfig:
    content = {
        "agent_max_context_tokens": p["agent_max_context_tokens"],
        "agent_max_context_turns": p["agent_max_context_turns"],
    }
    notes = (
        f"model_context_window={p['model_context_window']}: derived from the model name by "
        "Agent._get_model_context_window (0 = derive).",
        f"current_turn_result_max_chars={p['current_turn_result_max_chars']}, "
        f"history_result_max_chars={p['history_result_max_chars']}: constants in "
        "agent_stream.py.",
        f"memory_enabled={p['memory_enabled']}, summary_injection={p['summary_injection']!r}, "
        f"simulate_overflow={p['simulate_overflow']}: replay switches, not CowAgent settings.",
    )
    return NativeConfig("cowagent", "config.json", content, json_text(content), notes)


def _picoclaw(p: Mapping[str, Any]) -> NativeConfig:
    defaults: dict[str, Any] = {"max_tokens": p["max_tokens"]}
    if p["context_window"]:
        defaults["context_window"] = p["context_window"]
    defaults["summarize_message_threshold"] = p["summarize_message_threshold"]
    defaults["summarize_token_percent"] = p["summarize_token_percent"]
    if p["max_llm_retries"] != 2:  # 0 or unset: CallLLM falls back to 2
        defaults["max_llm_retries"] = p["max_llm_retries"]
    content = {"agents": {"defaults": defaults}}
    notes = (
        "context_window omitted = max_tokens x 4 (instance.go)."
        if not p["context_window"]
        else "context_window set explicitly.",
        f"enable_summary={p['enable_summary']}, token_estimator={p['token_estimator']!r}: "
        "code paths in pkg/agent and pkg/tokenizer, not configuration.",
        f"simulate_overflow={p['simulate_overflow']}: a replay switch (the provider's "
        "context-length error), not a PicoClaw setting.",
    )
    return NativeConfig("picoclaw", "config.json", content, json_text(content), notes)


_BASEAGENT_CONSTANTS = (
    ("model_context_limit", "MODEL_CONTEXT_LIMIT"),
    ("output_token_max", "OUTPUT_TOKEN_MAX"),
    ("auto_compact_threshold", "AUTO_COMPACT_THRESHOLD"),
    ("prune_protect", "PRUNE_PROTECT"),
    ("prune_minimum", "PRUNE_MINIMUM"),
)


def _py_literal(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int):
        return repr(value)
    return f"{value:_}" if abs(value) >= 10_000 else str(value)


def _baseagent(p: Mapping[str, Any]) -> NativeConfig:
    constants = {const: p[name] for name, const in _BASEAGENT_CONSTANTS}
    content = {
        "src/core/compaction.py": constants,
        "prune_old_tool_outputs": {"protect_last_turns": p["protect_last_turns"]},
        "run_compaction": {"max_tokens": p["compaction_max_tokens"]},
        "src/config/defaults.py": {"max_output_tokens": p["max_output_tokens"]},
    }
    lines = ["# src/core/compaction.py (module constants; compaction.py reads only these)"]
    lines += [f"{const} = {_py_literal(value)}" for const, value in constants.items()]
    lines += [
        "",
        f"# prune_old_tool_outputs(messages, protect_last_turns={p['protect_last_turns']})",
        f"# run_compaction: llm.chat(..., max_tokens={p['compaction_max_tokens']})",
        f"# defaults.py: max_output_tokens = {p['max_output_tokens']}  (tool output truncation)",
    ]
    notes = ("BaseAgent hard-codes these; edit the constants in the source.",)
    return NativeConfig("baseagent", "compaction.py", content, "\n".join(lines) + "\n", notes)


SHAPES: dict[str, Callable[[Mapping[str, Any]], NativeConfig]] = {
    "qwenpaw": _qwenpaw,
    "copaw": _copaw,
    "cowagent": _cowagent,
    "picoclaw": _picoclaw,
    "baseagent": _baseagent,
}
