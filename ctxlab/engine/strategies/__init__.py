"""Compaction strategies, one module each, discovered and registered by name.

How to add a strategy
=====================

1. Create ``ctxlab/engine/strategies/<name>.py`` with a subclass of
   ``ctxlab.engine.core.strategy.Strategy`` and expose it as ``STRATEGY = MyStrategy``
   (modules without ``STRATEGY``, or starting with ``_``, are skipped). Set::

       name = "mystrategy"            # registry key, the --strategy value
       label = "My system (version)"  # shown in the UI
       description = "..."            # one paragraph: what it does, where it comes from
       estimator = "bytes/4 half-up per block"   # what drives its decisions
       PARAMS = (Param("max_input_length", 131072, "help ...", "int", min=1024, origin="..."),)

   Every parameter under the original's own name, with default, range/choices, help text
   and ``origin`` (config key or constant it mirrors). ``self.params`` is the validated
   dict; unknown or out-of-range values raise ``ValueError`` naming the parameter.

   The instance holds settings only (``__init__`` may derive more from the params). What a
   replay accumulates goes in a dataclass declared as ``State = MyState``: the replay
   makes a fresh one and the hooks reach it as ``st: MyState = ctx.state``, so one
   instance can replay twice or in two threads at once
   (tests/engine/strategies/test_strategy_run_state.py checks every library strategy)::

       @dataclass(slots=True)
       class MyState:
           tool_names: dict[str, str] = field(default_factory=dict)
           skipping: bool = False

2. Implement the estimator: ``count_text(text)`` and ``count_message(message)`` with the
   original's exact rounding (per block where the original rounds per block); optionally
   ``count_system`` and ``count_tools``. The context calls ``count_message`` once per
   message version and keeps totals incrementally: never sum the whole history yourself
   on every step (use ``ctx.history_tokens`` / ``ctx.request_tokens()``). An estimator
   that needs the replay (its reference table, its state) overrides
   ``message_counter(reference, state)``, which the context counts every message with.

3. Geometry: ``window(ctx)``, ``threshold(ctx)``, ``output_reserve(ctx)``; override
   ``reserved_recent(ctx)`` or ``zones(ctx)`` if the default (current turn) is wrong.

4. Hooks, called by ``replay.replay`` in this order for each source message ``i``::

       if i starts an inference call (assistant message not continuing the same call):
           ctx.step: pending async work due now runs (ctx.run_pending)
           strategy.before_call(ctx)            # pre-request check + compact
           -> StepRecord yielded (tokens, zones, context ranges, new events/findings)
       ctx.append(i)                            # message joins the history
       strategy.after_append(ctx, i)            # post tool result / user request / reply

   The system prompt (message 0 when its role is system) is never appended; it is
   ``ctx.system_text`` / ``ctx.system_tokens``. Messages after the last inference call
   are not processed (no request reflects them).

5. Hooks get a read-only ``ContextView`` (assigning to it raises
   ``ReadOnlyContextError``). Change the context only inside an action; each action
   becomes one Event::

       with ctx.action("truncate", reason="tool result over 3000 bytes",
                       threshold=3000, estimate=n) as act:
           act.replace(i, new_message, Fate.TRUNCATED)           # in place, persists
           act.replace(i, new_msg, Fate.OFFLOADED, offload_path=p, offload_text=full)
           act.remove(indexes, Fate.SUMMARISED)                    # or Fate.DROPPED
           act.mark(i, Fate.PRUNED, message=placeholder_version)   # request view only
           act.offload(path, full_text)                            # another saved file
           act.summary_id = record.id

   ``ctx.emit(kind, **detail)`` records an event without changes (``summary_failed``,
   ``compact_skipped``); ``ctx.set_system_tokens(n)`` sets the system prompt's tokens when
   the original counts more than ``count_system`` sees. Detail values must be JSON-serialisable. Every kind must be in
   ``ctxlab/engine/core/catalogue.py`` (``EVENTS``: its category decides whether metrics count
   it as a compaction, restore, repair, failure or skip); reuse an existing kind where the
   meaning is the same, and add a row (then regenerate ``docs/vocabulary.md``) where it is
   not. ``tests/engine/core/test_catalogue.py`` replays the library and fails on an unlisted kind.

6. Summaries: build a ``core.summary_request.SummaryRequest`` exactly as the original builds its
   call (system prompt, messages, max_output_tokens; ``sections``/``style``/``material``
   tell the offline summariser what structure to fill), then
   ``record = ctx.summarize(request, messages=indexes)``; ``record.error`` set means the
   call failed -> take the original's failure path. Install the result with
   ``ctx.set_summary(raw, tokens=..., rendered=<text as re-injected>, summary_id=record.id)``
   and call ``findings.check_summary_size(...)``.

7. Asynchronous behaviour (lands after the current request):
   ``ctx.defer(kind, description, fn, skip_next=...)``; ``fn(ctx)`` runs before the next
   request is built (``skip_next=True``: the request being prepared does not wait for it,
   so it lands one request later). Until then ``StepRecord.pending`` lists it.

8. Reusable stages live in ``ctxlab/engine/stages/`` (markers, truncation, splits, drops,
   summarise); use them where the behaviour matches, and keep quirks in your module.

9. Tests: ``tests/engine/strategies/test_<name>.py``, table-driven from the spec's edge
   cases, built with ``tests/engine/builders.py``.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from typing import Any

from ..core.strategy import Strategy

_SKIP = {"base"}


def _discover() -> dict[str, type[Strategy]]:
    found: dict[str, type[Strategy]] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_") or info.name in _SKIP:
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        cls = getattr(module, "STRATEGY", None)
        if cls is not None:
            found[cls.name] = cls
    return dict(sorted(found.items()))


STRATEGIES: dict[str, type[Strategy]] = _discover()
PRESETS: tuple[str, ...] = ("qwenpaw", "copaw", "cowagent", "picoclaw", "baseagent")
# Every strategy a user can pick: the seed presets (what the benchmark and the default
# comparison replay) plus the provider strategies.
LIBRARY: tuple[str, ...] = PRESETS + (
    "anthropic_edits",
    "codex",
    "opencode",
    "claude_code",
    "langchain_summarization",
    "langchain_trim",
    "observation_masking",
    "complexity_trap_summary",
    "aider",
    "gemini_cli",
    "cline",
    "openhands_condenser",
    "anthropic_server_compaction",
    "pi",
    "roo_code",
    "goose",
    "strands_sliding_window",
    "strands_summarizing",
    "autogen_buffered",
    "autogen_head_and_tail",
    "autogen_token_limited",
    "semantic_kernel_truncation",
    "semantic_kernel_summarization",
    "ag2_history_limiter",
    "ag2_token_limiter",
    "vercel_prune_messages",
    "crush",
    "deepagents_summarization",
    "kimi_cli",
)


def get_strategy_class(name: str) -> type[Strategy]:
    cls = STRATEGIES.get(name)
    if cls is None:
        raise ValueError(f"unknown strategy {name!r} (known: {', '.join(STRATEGIES) or 'none'})")
    return cls


def make_strategy(
    spec: str | Mapping[str, Any] | Strategy, params: Mapping[str, Any] | None = None
) -> Strategy:
    """A configured strategy from a name, a spec dict ``{"strategy": name, "params": {..}}``
    or an instance. ``params`` overlay the spec's params. Raises ValueError on bad input."""
    if isinstance(spec, Strategy):
        if params:
            return type(spec)({**spec.params, **params})
        return spec
    if isinstance(spec, str):
        return get_strategy_class(spec)(params)
    name = spec.get("strategy")
    if not isinstance(name, str):
        raise ValueError('a strategy spec needs "strategy": <name>')
    merged = {**dict(spec.get("params") or {}), **dict(params or {})}
    return get_strategy_class(name)(merged)


__all__ = ["LIBRARY", "PRESETS", "STRATEGIES", "Strategy", "get_strategy_class", "make_strategy"]
