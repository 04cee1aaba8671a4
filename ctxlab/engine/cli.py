"""The replay CLI's logic (the Django command is a thin shell around it).

``load_file`` imports a transcript file without any database; ``result_to_json`` writes the
public JSON shape (docs/architecture.md); ``format_table`` renders the readable summary;
``strategy_library`` / ``format_library`` answer ``--list-strategies``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .strategies import LIBRARY, STRATEGIES

# The importers, the budget and the replay load inside the functions that use them: the
# parser (``add_replay_arguments``) needs only the strategies' names, and ``replay --help``
# should not pay for the rest (tests/engine/test_engine_main.py pins what it loads).
if TYPE_CHECKING:
    from .budget import SentSize
    from .core.model import Conversation
    from .core.records import Change, ReplayResult
    from .core.summary_request import Summarizer


def load_file(
    path: str | Path, *, format: str | None = None, conversation: int = 0
) -> Conversation:
    """The ``conversation``-th conversation of a transcript file (TranscriptError if bad)."""
    from . import importers

    p = Path(path)
    parsed = importers.parse(p.read_bytes(), name=p.name, format=format)
    if not parsed.conversations:
        raise ValueError(f"{p.name}: no conversation found")
    if not 0 <= conversation < len(parsed.conversations):
        raise ValueError(
            f"{p.name}: conversation {conversation} out of range "
            f"(0..{len(parsed.conversations) - 1})"
        )
    return parsed.conversations[conversation]


def replay_conversation(
    conversation: Conversation,
    *,
    strategy: str,
    assignments: Sequence[str] = (),
    params: Mapping[str, Any] | None = None,
    summarizer: str | Summarizer = "offline",
    window: int | None = None,
) -> ReplayResult:
    """``summarizer``: a registered name, or a ready instance (e.g. the web app's Claude
    summariser with its database cache). ``window``: one model context window set through
    the strategy's own window parameter(s); ``params`` / ``assignments`` still win."""
    from .budget import window_params
    from .core.params import parse_assignments
    from .replay import run
    from .summarize.summarizers import get_summarizer

    overrides = {**dict(params or {}), **parse_assignments(assignments)}
    merged = window_params(strategy, window, overrides)
    summ = get_summarizer(summarizer) if isinstance(summarizer, str) else summarizer
    return run(conversation, strategy, params=merged, summarizer=summ)


def window_warning(conversation: Conversation | SentSize, window: int | None) -> str:
    """``--window``'s warning when it is not above the fixed part of every request (system
    prompt + tool definitions), with the windows that would make compaction fire instead
    (``budget.window_advice``, as the run form); "" when the window is fine or not given."""
    if window is None:
        return ""
    from .budget import SentSize, sent_size, window_advice

    size = conversation if isinstance(conversation, SentSize) else sent_size(conversation)
    advice = window_advice(size, window=window)
    if not advice.below_fixed:
        return ""
    suggested = " · ".join(f"{w:,}" for w in advice.windows)
    return f"warning: {advice.warning}; windows that make compaction fire here: {suggested}"


def _change_json(change: Change, event_id: int, *, with_text: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "index": change.index,
        "fate": change.fate.value,
        "reason": change.reason,
        "event": event_id,
    }
    if change.offload_path:
        out["offload_path"] = change.offload_path
    if with_text and change.message is not None:
        out["text"] = change.message.text
    return out


def result_to_json(result: ReplayResult, *, detail: bool = False) -> dict[str, Any]:
    """The issue's JSON: strategy, params, estimator, steps (context expanded), events,
    summaries, findings, metrics. ``detail`` adds ``fates`` (one per context index, in
    order), each event's ``changes`` with modified texts, and the offloaded files."""
    from .core.records import Fate, apply_change, event_json, expand

    steps: list[dict[str, Any]] = []
    fates: dict[int, tuple[Fate, int]] = {}
    events = result.events
    ei = 0
    for step in result.steps:
        context = expand(step.context)
        row: dict[str, Any] = {
            "index": step.index,
            "source_index": step.source_index,
            "tokens": {
                "strategy": step.tokens.strategy,
                "reference": step.tokens.reference,
                "reported": step.tokens.reported,
            },
            "zones": step.zones.as_dict(),
            "context": context,
            "summary": step.summary_id,
        }
        if step.pending:
            row["pending"] = list(step.pending)
        if detail:
            while ei < len(events) and events[ei].step <= step.index:
                for change in events[ei].changes:
                    apply_change(fates, change.index, change.fate, (change.fate, events[ei].id))
                ei += 1
            row["fates"] = [fates.get(i, (Fate.KEPT, None))[0].value for i in context]
        steps.append(row)
    out: dict[str, Any] = {
        "strategy": result.strategy,
        "params": result.params,
        "estimator": result.estimator,
        "summarizer": result.summarizer,
        "steps": steps,
        "events": [
            {
                **event_json(e),
                **(
                    {"changes": [_change_json(c, e.id, with_text=True) for c in e.changes]}
                    if detail
                    else {}
                ),
            }
            for e in events
        ],
        "summaries": [
            {
                "id": s.id,
                "step": s.step,
                "input": s.input,
                "output": s.output,
                "input_tokens": s.input_tokens,
                "output_tokens": s.output_tokens,
                "usage_estimated": s.usage_estimated,
                "error": s.error,
                "messages": list(s.messages),
            }
            for s in result.summaries
        ],
        "findings": [
            {"step": f.step, "kind": f.kind, "messages": list(f.messages), "detail": dict(f.detail)}
            for f in result.findings
        ],
        "metrics": result.metrics,
    }
    if detail:
        out["offloads"] = dict(result.offloads)
    return out


def format_table(result: ReplayResult) -> str:
    """A readable summary: steps, events by kind, peak tokens, findings."""
    from .core.catalogue import event_category

    m = result.metrics
    lines = [
        f"strategy   {result.strategy}  (estimator: {result.estimator}; "
        f"summarizer: {result.summarizer})",
        f"messages   {result.message_count}    steps {m.get('steps', len(result.steps))}",
        f"peak       strategy {m.get('peak_strategy', 0):,}  reference "
        f"{m.get('peak_reference', 0):,}  reported {m.get('peak_reported', 0):,}  "
        f"threshold {m.get('threshold')}",
        f"input Σ    {m.get('input_tokens_total', 0):,} reference tokens over all steps",
        f"removed    {m.get('messages_removed', 0)} messages "
        f"({m.get('tokens_removed') or 0:,} reference tokens); "
        f"modified {m.get('messages_modified', 0)}",
        f"summaries  {m.get('summaries', 0)} ({m.get('summary_failures', 0)} failed), "
        f"in {m.get('summary_input_tokens', 0):,} / out {m.get('summary_output_tokens', 0):,} tokens",
        f"firing     {m.get('firing_per_100_steps', 0)} per 100 steps; thrash {m.get('thrash', 0)}",
        "",
        "events by kind:",
    ]
    by_kind = Counter(e.kind for e in result.events)
    lines += [
        f"  {kind:<22} {n:>6}  {event_category(kind) or 'uncatalogued'}"  # catalogue.EVENTS
        for kind, n in sorted(by_kind.items())
    ] or ["  (none)"]
    lines += ["", "findings by kind:"]
    found = Counter(f.kind for f in result.findings)
    lines += [f"  {kind:<22} {n:>6} steps" for kind, n in sorted(found.items())] or ["  (none)"]
    lines += [
        "",
        f"{'step':>6} {'msg':>6} {'strategy':>10} {'reference':>10} {'reported':>9}  events",
    ]
    shown = [s for s in result.steps if s.events] or result.steps[-1:]
    for s in shown[:40]:
        kinds = ", ".join(e.kind for e in s.events)
        lines.append(
            f"{s.index:>6} {s.source_index:>6} {s.tokens.strategy:>10,} {s.tokens.reference:>10,} "
            f"{s.tokens.reported if s.tokens.reported is not None else '-':>9}  {kinds}"
        )
    if len(shown) > 40:
        lines.append(f"  ... {len(shown) - 40} more steps with events")
    return "\n".join(lines)


def strategy_library() -> list[dict[str, Any]]:
    """Every strategy ``--strategy`` accepts (the library's order, then the rest, such as
    ``custom``) with its window parameter, that parameter's default and range, and the
    parameters that follow it with their share of the window, and those it pins: what
    ``--window`` sets."""
    names = [n for n in LIBRARY if n in STRATEGIES] + sorted(set(STRATEGIES) - set(LIBRARY))
    rows = []
    for name in names:
        cls = STRATEGIES[name]
        specs = {p.name: p for p in cls.PARAMS}
        own = specs.get(cls.WINDOW)
        rows.append(
            {
                "name": name,
                "label": cls.label,
                "in_library": name in LIBRARY,
                "window": cls.WINDOW or None,
                # 0 is how some strategies say "unset: no window-based trigger".
                "window_default": None if own is None else own.default,
                "window_range": None if own is None else own.describe_range(),
                "window_help": None if own is None else own.help,
                "follows": [
                    {"param": param, "share": share, "default": specs[param].default}
                    for param, share in cls.WINDOW_FOLLOWS.items()
                ],
                # set to a fixed value, so that the window holds (``Strategy.WINDOW_PINS``)
                "pins": [
                    {"param": param, "value": value, "default": specs[param].default}
                    for param, value in cls.WINDOW_PINS.items()
                ],
            }
        )
    return rows


def format_library(rows: Sequence[Mapping[str, Any]]) -> str:
    """``strategy_library`` as a fixed-width table (labels last: they are long)."""
    header = ("strategy", "window parameter", "default", "followers (share of window)", "label")
    table = [header]
    for row in rows:
        follows = [f"{f['param']} {f['share']:g}" for f in row["follows"]]
        follows += [f"{p['param']}={p['value']}" for p in row["pins"]]
        default = row["window_default"]
        table.append(
            (
                row["name"],
                row["window"] or "-",
                "-" if default is None else f"{default:,}",
                ", ".join(follows) or "-",
                row["label"],
            )
        )
    widths = [max(len(str(r[i])) for r in table) for i in range(len(header) - 1)]
    return "\n".join(
        "  ".join(str(c).ljust(w) for c, w in zip(r[:-1], widths, strict=True)) + "  " + r[-1]
        for r in table
    ).rstrip()


def library_listing(*, as_json: bool) -> str:
    """What ``replay --list-strategies`` prints (both CLIs): the library as JSON or a table."""
    rows = strategy_library()
    return json.dumps(rows, ensure_ascii=False) if as_json else format_library(rows)


def add_replay_arguments(parser: Any, *, window_help: str = "") -> None:
    """The options both ``replay`` commands share (``python -m ctxlab.engine replay`` and
    ``manage.py replay``); each adds its own source (--file, --transcript) and summarisers."""
    parser.add_argument(
        "--list-strategies", action="store_true",
        help="print every strategy with its window parameter (what --window sets) and the "
        "parameters that follow it, then exit (with --json: as JSON)",
    )  # fmt: skip
    parser.add_argument("--format", default=None, help="force the file format")
    parser.add_argument(
        "--conversation", type=int, default=0, help="which conversation of the file (0-based)"
    )
    parser.add_argument("--strategy", choices=sorted(STRATEGIES))
    parser.add_argument(
        "--window", type=int, metavar="TOKENS",
        help="one model context window: sets the strategy's own window parameter and those "
        "that follow it (--set still wins)" + window_help,
    )  # fmt: skip
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", dest="assignments",
        help="override a strategy parameter (repeatable)",
    )  # fmt: skip
    parser.add_argument(
        "--json", metavar="OUT", nargs="?", const="-",
        help="write the JSON record here ('-' or no value = stdout)",
    )  # fmt: skip
    parser.add_argument("--detail", action="store_true", help="add a fate per context index")
    parser.add_argument(
        "--model", default=None,
        help="the model of a model summariser: with --summarizer openai any name the endpoint "
        "serves (required); with anthropic a Claude model (default CTXLAB_DEFAULT_SUMMARY_MODEL)",
    )  # fmt: skip
    parser.add_argument(
        "--openai-api", choices=("chat", "responses"), default="chat",
        help="--summarizer openai: /v1/chat/completions (default) or /v1/responses",
    )  # fmt: skip
    parser.add_argument(
        "--stream", action="store_true", help="--summarizer openai: stream the answers"
    )


def llm_line(label: str, totals: Mapping[str, Any], *, local: bool = False) -> str:
    """The one line both CLIs print after a replay with a model summariser."""
    price = "$0 (local endpoint)" if local else f"${totals['cost_usd']:.6f}"
    return (
        f"summariser {label}: {totals['calls']} calls, {totals['paid_calls']} paid, "
        f"{totals['cache_hits']} cache hits, {totals['errors']} failed · {price}"
    )
