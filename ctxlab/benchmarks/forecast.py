"""``bench --only forecast``: the turns-to-auto-compact forecast against the agents' own
compactions.

For every automatic compaction of a Claude Code or Codex session with at least
``HORIZON + 1`` model calls since the previous one, the forecast rule
(``ctxlab.engine.evaluate.forecast.turns_to_trigger``) is read ``HORIZON`` calls before it
and compared with the ``HORIZON`` calls that really came (``session_now.forecast_hits``).
Default set: the vendored agreement sessions (``tests/data/agreement``, see its README);
``CTXLAB_AGREEMENT_DIR`` (paths separated by ``os.pathsep``) measures others, e.g. the
whole entireio/cli checkpoints branch at development time. A session found twice (the
vendored files are cut from the full branch) is counted once, by session and place.

Lines: ``forecast_within_2_turns_share`` (the share of compactions predicted within
``TOLERANCE`` turns), ``forecast_in_range_share`` (the share whose real turns lay in the
forecast's range), ``forecast_oracle_within_2_turns_share`` (the same rule at each span's own
mean growth, the turns still to come included: the ceiling of any forecast from a growth rate,
``forecast.oracle_turns``), ``forecast_compactions``, ``forecast_median_abs_error``.
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path
from typing import Any, TextIO

from ctxlab.benchmarks.agreement import DEFAULT_DIR, sessions
from ctxlab.engine import importers
from ctxlab.engine.core.model import TranscriptError
from ctxlab.engine.evaluate.forecast import (
    HORIZON,
    TOLERANCE,
    Hit,
    share_in_range,
    share_oracle_within,
    share_within,
)
from ctxlab.engine.evaluate.session_now import AGENT_OF_FORMAT, forecast_hits


def measure(roots: list[Path], out: TextIO) -> list[Hit]:
    hits: dict[tuple[str, int], Hit] = {}
    for root in roots:
        for session in sessions(root):
            data = session.read()
            try:
                fmt = session.format or importers.detect(data, session.name)
            except TranscriptError:
                continue
            if fmt not in AGENT_OF_FORMAT:
                continue
            try:
                parsed = importers.parse(data, name=session.name, format=fmt)
            except Exception as exc:  # noqa: BLE001 - one refused real file must not end the run
                out.write(f"  refused: {session.name}: {exc!r}\n")
                continue
            for conversation in parsed.conversations:
                if conversation.parent_id is not None:
                    continue
                key_of = conversation.id or session.name
                for hit in forecast_hits(conversation, fmt, session.name):
                    hits.setdefault((key_of, hit.at_message), hit)
    return list(hits.values())


def run(out: TextIO) -> list[dict[str, Any]]:
    given = os.environ.get("CTXLAB_AGREEMENT_DIR")
    roots = [Path(p) for p in given.split(os.pathsep) if p] if given else [DEFAULT_DIR]
    start = time.perf_counter()
    hits = measure(roots, out)
    seconds = time.perf_counter() - start
    errors = [abs(h.predicted - h.actual) for h in hits if h.predicted is not None]
    out.write(
        f"forecast {HORIZON} turns ahead over {', '.join(map(str, roots))}: "
        f"{len(hits)} compactions, {sum(h.within for h in hits)} within ±{TOLERANCE}, "
        f"{seconds:.1f} s\n"
    )
    for hit in hits:
        out.write(
            f"  {hit.session} @ message {hit.at_message}: predicted {hit.predicted} "
            f"({hit.low}-{'' if hit.high is None else hit.high}), oracle {hit.oracle}, "
            f"actual {hit.actual}\n"
        )
    share = share_within(hits)
    in_range = share_in_range(hits)
    oracle = share_oracle_within(hits)
    median = statistics.median(errors) if errors else None
    return [
        {"line": f"forecast_within_{TOLERANCE}_turns_share={'-' if share is None else share}"},
        {"line": f"forecast_in_range_share={'-' if in_range is None else in_range}"},
        {
            "line": f"forecast_oracle_within_{TOLERANCE}_turns_share={'-' if oracle is None else oracle}"
        },
        {"line": f"forecast_compactions={len(hits)}"},
        {"line": f"forecast_median_abs_error={'-' if median is None else median}"},
    ]
