"""Every strategy in the library replayed over real corpus sessions with windows small
enough that each acts, with a working and a failing summariser: the kinds they emit."""

from __future__ import annotations

import functools
from collections import Counter
from pathlib import Path
from typing import Any

from builders import SMALL_WINDOWS

from ctxlab.engine import cli, synth
from ctxlab.engine.core.records import ReplayResult
from ctxlab.engine.core.summary_request import Summarizer
from ctxlab.engine.replay import run
from ctxlab.engine.strategies import LIBRARY
from ctxlab.engine.summarize.offline import FailingSummarizer, OfflineSummarizer

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"
FILES = (
    "claude-code/agentcmd-full-session.jsonl",
    "swe-agent-traj/marshmallow-1867-fc.traj",
    "openai-chat/taubench-gpt-4o-airline-task2-messages.json",
    "claude-code/ccviewer-5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl",
    "codex-rollout/agentcmd-rollout-2025-09-25T15-12-14-019982b8-3422-79e0-8b3b-05abaf4f3c3e.jsonl",
)
SMALL: dict[str, dict[str, Any]] = {
    **SMALL_WINDOWS,
    "anthropic_edits": {"trigger": 3000, "keep": 1},
    "codex": {"model_context_window": 8000},
    "opencode": {"context": 12000, "output": 2000, "output_token_max": 2000,
                 "prune_protect": 2000, "prune_minimum": 500, "compaction_buffer": 1000,
                 "usage_source": "estimate"},
    "claude_code": {"context_window": 12000, "output_reserve": 2000,
                    "autocompact_buffer_tokens": 1000},
    "langchain_summarization": {"trigger": ["tokens", 3000], "keep": ["messages", 4]},
    "langchain_trim": {"max_tokens": 1500},
    "observation_masking": {"n": 2},
    "complexity_trap_summary": {"mode": "hybrid", "n": 3, "keep_last_m_turns": 2,
                                "masking_n": 1},
    "aider": {"max_chat_history_tokens": 1024},
    "pi": {"contextWindow": 12000, "reserveTokens": 2000, "keepRecentTokens": 1500},
    "roo_code": {"contextWindow": 12000, "maxTokens": 2000, "autoCondenseContextPercent": 60},
    "goose": {"context_limit": 6000},
    "strands_sliding_window": {"window_size": 6, "context_window_limit": 3000},
    "strands_summarizing": {"context_window_limit": 3000, "preserve_recent_messages": 4},
    "autogen_buffered": {"buffer_size": 3},
    "autogen_head_and_tail": {"head_size": 2, "tail_size": 3},
    "autogen_token_limited": {"token_limit": 3000},
    "crush": {"context_window": 8000},
    "deepagents_summarization": {"max_input_tokens": 8000},
}  # fmt: skip
# BaseAgent's request-view prune (and its lifting) needs a longer session: 250 messages
# mixed from the corpus (synth.bench_conversation) with a prune-happy setting.
BENCH_MESSAGES = 250
BENCH_SPECS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("baseagent", {"model_context_limit": 40000, "protect_last_turns": 0,
                   "prune_protect": 5000, "prune_minimum": 1000}),
    ("baseagent", {"model_context_limit": 40000, "protect_last_turns": 1,
                   "prune_protect": 3000, "prune_minimum": 0}),
)  # fmt: skip
# The custom strategy twice: its tool-result stages, then its before-call stages alone
# (the tool-result stages shrink these sessions below any before-call trigger).
CUSTOM_SPECS: tuple[dict[str, Any], ...] = (
    {"window": 6000, "stages": [
        {"stage": "truncate_tool_results", "max_bytes": 500, "keep_recent": 1},
        {"stage": "offload_tool_results", "max_bytes": 300, "keep_recent": 1}]},
    {"window": 4000, "stages": [
        {"stage": "prune_tool_outputs", "protect_tokens": 300, "minimum_tokens": 50},
        {"stage": "clear_tool_results", "keep": 2},
        {"stage": "drop_oldest_turns", "keep_turns": 3},
        {"stage": "summarise", "keep_tokens": 1000}]},
)  # fmt: skip


def summarizers() -> dict[str, Summarizer]:
    return {"offline": OfflineSummarizer(), "failing": FailingSummarizer("raise")}


def specs() -> list[tuple[str, str | dict[str, Any], dict[str, Any]]]:
    out: list[tuple[str, str | dict[str, Any], dict[str, Any]]] = [
        (name, name, SMALL.get(name, {})) for name in LIBRARY
    ]
    out += [
        (f"custom#{i}", {"strategy": "custom", "params": p}, {}) for i, p in enumerate(CUSTOM_SPECS)
    ]
    return out


@functools.cache
def library_results() -> tuple[tuple[str, str, str, ReplayResult], ...]:
    """(file, strategy label, summariser, result) for every combination."""
    out = []
    for name in FILES:
        conversation = cli.load_file(CORPUS / name)
        for label, spec, params in specs():
            for sname, summarizer in summarizers().items():
                result = run(conversation, spec, params=params, summarizer=summarizer)
                out.append((name, label, sname, result))
    bench = synth.bench_conversation(CORPUS, messages=BENCH_MESSAGES, seed=3)
    for name, params in BENCH_SPECS:
        for sname, summarizer in summarizers().items():
            result = run(bench, name, params=params, summarizer=summarizer)
            out.append(("bench", name, sname, result))
    return tuple(out)


def emitted_kinds() -> Counter[str]:
    return Counter(e.kind for *_, result in library_results() for e in result.events)
