"""Frameworks' and papers' shapes: LangChain, observation masking, the Complexity Trap summary, Aider, OpenHands, AutoGen."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from .base import NativeConfig, json_text, param_default


def _py_arg(value: Any) -> str:
    """A keyword value as Python source (lists of pairs become tuples, null -> None)."""
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, list | tuple) and value and isinstance(value[0], list | tuple):
        return "[" + ", ".join(_py_arg(v) for v in value) + "]"
    if isinstance(value, list | tuple):
        inner = ", ".join(json.dumps(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    return json.dumps(value)


def _langchain_summarization(p: Mapping[str, Any]) -> NativeConfig:
    content: dict[str, Any] = {}
    if p["trigger"] is not None:
        content["trigger"] = p["trigger"]
    content["keep"] = p["keep"]
    content["trim_tokens_to_summarize"] = p["trim_tokens_to_summarize"] or None
    lines = ["from langchain.agents.middleware import SummarizationMiddleware", "",
             "SummarizationMiddleware(", '    model="<summary model>",']  # fmt: skip
    lines += [f"    {key}={_py_arg(value)}," for key, value in content.items()]
    lines.append(")")
    notes = (
        "trigger omitted = None: the middleware never summarises."
        if p["trigger"] is None
        else "trigger: any listed condition fires.",
        f"summary_prompt={p['summary_prompt']!r}: DEFAULT_SUMMARY_PROMPT of the pinned "
        "version ('original' = the earlier text, pass it as summary_prompt=).",
        f"max_input_tokens={p['max_input_tokens']}: the chat model's profile "
        f"(ChatModel(profile={{'max_input_tokens': ...}})); chars_per_token="
        f"{p['chars_per_token']:g}: 3.3 when the summary model is ChatAnthropic.",
        f"usage_metadata_scaling={p['usage_metadata_scaling']}, reported_usage_trigger="
        f"{p['reported_usage_trigger']}, cutoff_rule={p['cutoff_rule']!r}: langchain version "
        f"behaviour; message_format={p['message_format']!r}: replay mapping.",
    )
    return NativeConfig("langchain_summarization", "agent.py", content,
                        "\n".join(lines) + "\n", notes)  # fmt: skip


def _langchain_trim(p: Mapping[str, Any]) -> NativeConfig:
    content: dict[str, Any] = {
        "strategy": p["strategy"],
        "max_tokens": p["max_tokens"],
        "start_on": p["start_on"] or None,
        "end_on": p["end_on"] or None,
        "include_system": p["include_system"],
        "allow_partial": p["allow_partial"],
    }
    lines = ["from langchain_core.messages.utils import count_tokens_approximately, trim_messages",
             "", "", "def pre_model_hook(state):", "    trimmed = trim_messages(",
             '        state["messages"],', f'        strategy="{p["strategy"]}",',
             "        token_counter=count_tokens_approximately,"]  # fmt: skip
    lines += [f"        {key}={_py_arg(content[key])},"
              for key in ("max_tokens", "start_on", "end_on", "include_system", "allow_partial")]  # fmt: skip
    lines += ["    )", '    return {"llm_input_messages": trimmed}']
    notes = (
        "Pass as create_react_agent(..., pre_model_hook=pre_model_hook): the state keeps the "
        "full history, only the request is trimmed.",
        f"chars_per_token={p['chars_per_token']:g}: functools.partial(count_tokens_approximately, "
        "chars_per_token=...) when not 4.",
        f"system_prompt_in_state={p['system_prompt_in_state']}, message_format="
        f"{p['message_format']!r}, context_window={p['context_window']}: replay mapping.",
    )
    return NativeConfig("langchain_trim", "agent.py", content, "\n".join(lines) + "\n", notes)


def _observation_masking(p: Mapping[str, Any]) -> NativeConfig:
    processors: list[dict[str, Any]] = []
    lines = ["agent:", "  history_processors:"]
    if p["keep_output_tools"]:
        names = list(p["keep_output_tools"])
        processors.append(
            {"type": "tag_tool_call_observations", "tags": ["keep_output"], "function_names": names}
        )
        lines += ["    - type: tag_tool_call_observations", "      tags: [keep_output]",
                  f"      function_names: {json.dumps(names, ensure_ascii=False)}"]  # fmt: skip
    processors.append({"type": "last_n_observations", "n": p["n"], "polling": p["polling"]})
    lines += ["    - type: last_n_observations", f"      n: {p['n']}",
              f"      polling: {p['polling']}"]  # fmt: skip
    notes = (
        f"placeholder={p['placeholder']!r}: the f-string in LastNObservations.__call__.",
        f"context_window={p['context_window']}: the model's window, not SWE-agent config.",
    )
    content = {"agent": {"history_processors": processors}}
    return NativeConfig(
        "observation_masking", "config.yaml", content, "\n".join(lines) + "\n", notes
    )


def _complexity_trap_summary(p: Mapping[str, Any]) -> NativeConfig:
    keys = ("n", "keep_last_m_turns", "enable_static_checkpointing", "extract_action_from_turns",
            "max_kept_action_length", "max_kept_reasoning_length", "omit_turns")  # fmt: skip
    summary = {"type": "summarize_every_n_turns", **{k: p[k] for k in keys}}
    processors: list[dict[str, Any]] = [summary]
    lines = ["agent:", "  templates:", "    summary_system_template: |-"]
    lines += [f"      {line}" if line else "" for line in p["summary_system_template"].split("\n")]
    lines += ["  history_processors:", "    - type: summarize_every_n_turns"]
    lines += [f"      {k}: {json.dumps(p[k])}" for k in keys]
    if p["mode"] == "hybrid":
        processors.append({"type": "last_n_observations", "n": p["masking_n"]})
        lines += ["    - type: last_n_observations", f"      n: {p['masking_n']}"]
    notes = (
        f"mode={p['mode']}: the history_processors list (hybrid adds last_n_observations).",
        f"context_window={p['context_window']}: the model's window, not SWE-agent config.",
    )
    content = {
        "agent": {
            "templates": {"summary_system_template": p["summary_system_template"]},
            "history_processors": processors,
        }
    }
    return NativeConfig(
        "complexity_trap_summary", "config.yaml", content, "\n".join(lines) + "\n", notes
    )


def _aider(p: Mapping[str, Any]) -> NativeConfig:
    content: dict[str, Any] = {}
    if p["max_chat_history_tokens"]:
        content["max-chat-history-tokens"] = p["max_chat_history_tokens"]
    text = "".join(f"{key}: {value}\n" for key, value in content.items()) or (
        "# max-chat-history-tokens unset: the model's max_input_tokens / 16 within [1024, 8192]\n"
    )
    notes = (
        "max-chat-history-tokens omitted = the model's max_input_tokens / 16 within [1024, 8192]."
        if not p["max_chat_history_tokens"]
        else "max-chat-history-tokens set explicitly.",
        f"max_input_tokens={p['max_input_tokens']}, weak_max_input_tokens="
        f"{p['weak_max_input_tokens']}: the models' metadata (litellm, or "
        ".aider.model.metadata.json).",
        f"failure_drops_history={p['failure_drops_history']}: Aider's code path, not config.",
    )
    return NativeConfig("aider", ".aider.conf.yml", content, text, notes)


# The [condenser] keys each OpenHands condenser type reads (condenser_config.py).
_OPENHANDS_KEYS = {
    "llm": ("keep_first", "max_size", "max_event_length"),
    "amortized": ("keep_first", "max_size"),
    "recent": ("keep_first", "max_events"),
    "observation_masking": ("attention_window",),
}


def _openhands_condenser(p: Mapping[str, Any]) -> NativeConfig:
    kind = p["condenser"]
    content: dict[str, Any] = {"type": kind}
    if kind == "llm":
        content["llm_config"] = "condenser"
    for key in _OPENHANDS_KEYS[kind]:
        content[key] = p[key]
    lines = ["[condenser]"]
    for key, value in content.items():
        lines.append(f"{key} = {json.dumps(value)}")
    # Keys the chosen type does not read: changed ones are unexpressed, never dropped.
    unused = tuple(
        (k, p[k])
        for k in ("keep_first", "max_size", "max_event_length", "attention_window", "max_events")
        if k not in _OPENHANDS_KEYS[kind] and p[k] != param_default("openhands_condenser", k)
    )
    notes = [
        f"context_window={p['context_window']}: the model's window, not a condenser key.",
        "In the app (enable_default_condenser) OpenHands builds this condenser itself: "
        "keep_first=4, max_size=condenser_max_size or 120.",
    ]
    if kind == "llm":
        notes.append('Define the summarising model as [llm.condenser] (llm_config = "condenser").')
    text = "\n".join(lines) + "\n"  # native_config() comments on what is unexpressed
    return NativeConfig(
        "openhands_condenser", "config.toml", content, text, tuple(notes), unexpressed=unused
    )


# AutoGen's declarative components (ComponentModel, what dump_component() writes and
# ChatCompletionContext.load_component() reads; AutoGen Studio's JSON).
_AUTOGEN_CONTEXT = "autogen_core.model_context.{}ChatCompletionContext"
_AUTOGEN_CLIENT = "autogen_ext.models.openai.OpenAIChatCompletionClient"


def _autogen_context(
    strategy: str, kind: str, config: dict[str, Any], p: Mapping[str, Any]
) -> NativeConfig:
    content = {"provider": _AUTOGEN_CONTEXT.format(kind),
               "component_type": "chat_completion_context", "config": config}  # fmt: skip
    notes = (
        f"model_token_limit={p['model_token_limit']}: the model's (autogen-ext _model_info), "
        "not a context key.",
        "Load it with ChatCompletionContext.load_component(...) and pass it as "
        "AssistantAgent(model_context=...).",
    )
    return NativeConfig(strategy, "model_context.json", content, json_text(content), notes)


def _autogen_buffered(p: Mapping[str, Any]) -> NativeConfig:
    return _autogen_context("autogen_buffered", "Buffered", {"buffer_size": p["buffer_size"]}, p)


def _autogen_head_and_tail(p: Mapping[str, Any]) -> NativeConfig:
    config = {"head_size": p["head_size"], "tail_size": p["tail_size"]}
    return _autogen_context("autogen_head_and_tail", "HeadAndTail", config, p)


def _autogen_token_limited(p: Mapping[str, Any]) -> NativeConfig:
    config = {"model_client": {"provider": _AUTOGEN_CLIENT, "component_type": "model",
                               "config": {"model": "gpt-4-turbo"}},
              "token_limit": p["token_limit"] or None}  # fmt: skip
    return _autogen_context("autogen_token_limited", "TokenLimited", config, p)


SHAPES: dict[str, Callable[[Mapping[str, Any]], NativeConfig]] = {
    "autogen_buffered": _autogen_buffered,
    "autogen_head_and_tail": _autogen_head_and_tail,
    "autogen_token_limited": _autogen_token_limited,
    "langchain_summarization": _langchain_summarization,
    "langchain_trim": _langchain_trim,
    "observation_masking": _observation_masking,
    "complexity_trap_summary": _complexity_trap_summary,
    "aider": _aider,
    "openhands_condenser": _openhands_condenser,
}
