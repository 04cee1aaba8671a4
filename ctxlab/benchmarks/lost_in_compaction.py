"""The grep table of "Lost in Compaction" (github.com/profff/lost-in-compaction, May 2026)
reproduced from the study's published compacted contexts: per compaction level, the share
of the compacted zone's planted facts whose keywords all appear in the context, over every
distinct context of the Claude Haiku 4.5 runs (the spread the paper reports as a min-max),
beside the published grep range and the published LLM recall; and how many of those facts
the summary alone holds (``ctxlab.engine.evaluate.lost_in_compaction``).

The study's files are not vendored: point ``CTXLAB_LOST_IN_COMPACTION`` at a clone (or a
bare mirror) of the repository. Without it the section says so and measures nothing.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, TextIO

from ctxlab.engine.evaluate import lost_in_compaction as lic

ENV = "CTXLAB_LOST_IN_COMPACTION"


def study_path() -> Path | None:
    value = os.environ.get(ENV, "").strip()
    return Path(value) if value else None


def run(out: TextIO) -> list[dict[str, Any]]:
    path = study_path()
    if path is None or not path.exists():
        out.write(
            f"skipped: set {ENV} to a clone of github.com/{lic.STUDY} (its compacted "
            "contexts are read, not vendored)\n"
        )
        return [{"section": "lost_in_compaction", "skipped": "no study data"}]
    return run_on(path, out)


def run_on(path: Path, out: TextIO) -> list[dict[str, Any]]:
    results = lic.grep_all(lic.open_study(path))
    rows = lic.table(results)
    out.write(
        f"-- {lic.STUDY}: grep survival of the compacted zone's facts, {lic.COMPACTION_MODEL} "
        "runs, every density (the published ranges span them); published numbers: "
        f"LOST_IN_COMPACTION.md @ {lic.STUDY_COMMIT} §5.1-5.2\n"
    )
    out.write(lic.format_table(rows) + "\n")
    out.write(
        f"-- the same at δ={lic.DENSITY[80]} (d80) alone, the density the paper's table names\n"
    )
    out.write(lic.format_table(lic.table(results, densities=[80])) + "\n")
    within = sum(r.within for r in rows)
    result: list[dict[str, Any]] = [
        {
            "section": "lost_in_compaction",
            "contexts": len(results),
            "levels_within_published": f"{within}/{len(rows)}",
        }
    ]
    for r in rows:
        if r.grep is not None:
            result.append({"line": f"lic_grep_{r.level}_compacted={r.grep.mean:.3f}"})
        if r.summary is not None:
            result.append({"line": f"lic_summary_{r.level}_compacted={r.summary.mean:.3f}"})
    result.append({"line": f"lic_levels_within_published={within}/{len(rows)}"})
    return result
