"""The grep side of "Lost in Compaction" (``evaluate/lost_in_compaction.py``).

On the study's own published contexts (a clone or mirror of profff/lost-in-compaction named
by ``CTXLAB_LOST_IN_COMPACTION``, else the mirror this lab fetched; not vendored: "Research
use" grants no redistribution): every fact's verdict equals the study's own grep files, and
the table is within the paper's reported spread. On a small study-shaped tree of our own
(always): the rule, the zones, the summary alone and the within check.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from ctxlab.benchmarks import lost_in_compaction as bench
from ctxlab.engine.evaluate import lost_in_compaction as lic

MIRROR = Path("/work/.mirror/profff+lost-in-compaction/repo")


def _study() -> Path:
    path = Path(os.environ.get(bench.ENV, "") or MIRROR)
    if not path.exists():
        pytest.skip(f"no copy of {lic.STUDY}: set {bench.ENV}")
    return path


@pytest.fixture(scope="module")
def study() -> tuple[lic.Tree, list[lic.ConditionResult]]:
    tree = lic.open_study(_study())
    return tree, lic.grep_all(tree)


def test_every_verdict_equals_the_study_grep_files(
    study: tuple[lic.Tree, list[lic.ConditionResult]],
) -> None:
    tree, results = study
    paths = set(tree.paths())
    compared = 0
    for result in results:
        c = result.condition
        published = f"{c.run}/grep/d{c.density}_{c.level}.json"
        if published not in paths:
            continue
        theirs = {g["fact_id"]: g["all_present"] for g in json.loads(tree.read(published))}
        assert {f.fact_id: f.found for f in result.facts} == theirs, published
        compared += 1
    assert compared >= 20  # the Haiku runs' and the Sonnet run's contexts


def test_grep_table_within_the_papers_reported_spread(
    study: tuple[lic.Tree, list[lic.ConditionResult]],
) -> None:
    _, results = study
    rows = lic.table(results)
    assert [r.level for r in rows] == list(lic.LEVELS)
    assert all(r.contexts == 6 for r in rows)  # 3 densities + 3 more d80 replicates
    assert [r.within for r in rows] == [True] * 4, lic.format_table(rows)
    by = {r.level: r for r in rows}
    assert by["C1"].grep is not None and by["C1"].grep.mean == 0.5
    # The summary alone holds a small part of what grep finds in the compacted zone.
    for r in rows[1:]:
        assert r.summary is not None and r.grep is not None
        assert r.summary.high < 0.2 < 0.5 < r.grep.low


def test_the_bench_section_prints_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(bench.ENV, str(_study()))
    out = io.StringIO()
    rows = bench.run(out)
    assert "lic_levels_within_published=4/4" in [r.get("line") for r in rows]
    assert "82%-91%" in out.getvalue() and "summary alone" in out.getvalue()


def test_the_bench_section_without_the_study(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(bench.ENV, raising=False)
    out = io.StringIO()
    assert bench.run(out) == [{"section": "lost_in_compaction", "skipped": "no study data"}]
    assert bench.ENV in out.getvalue()


def _write_study(root: Path, summary: str, model: str = lic.COMPACTION_MODEL) -> None:
    run = root / "compaction_v5_R4_test"
    (run / "contexts").mkdir(parents=True)
    (run / "config.json").write_text(json.dumps({"compact_model": model}))
    context = [
        {"role": "user", "content": f"[Summary of 40 earlier messages]\n\n{summary}"},
        {"role": "assistant", "content": "Understood. I have the context."},
        {"role": "user", "content": "My new flat is in the SUBURBS of Lyon, near Paris road."},
        {"role": "assistant", "content": "Noted."},
    ]
    facts = [
        {"fact_id": "F1", "keywords": ["25", "minutes"]},  # compacted, in the summary
        {"fact_id": "F2", "keywords": ["suburbs"]},  # compacted, only in the padding
        {"fact_id": "F3", "keywords": ["Berlin"]},  # compacted, gone
        {"fact_id": "F4", "keywords": ["Paris", "road"]},  # remaining
        {"fact_id": "F5", "keywords": []},  # no keyword: never found
    ]
    meta = {"facts": facts, "compaction": {"facts_compacted": ["F1", "F2", "F3", "F5"]}}
    (run / "contexts" / "d80_C4.json").write_text(json.dumps(context))
    (run / "contexts" / "d80_C4_meta.json").write_text(json.dumps(meta))


def test_the_rule_on_a_study_shaped_folder(tmp_path: Path) -> None:
    _write_study(tmp_path, "The user ran 5K in 25 Minutes and 50 seconds.")
    tree = lic.open_study(tmp_path)
    (result,) = lic.grep_all(tree)
    found = {f.fact_id: (f.compacted, f.found, f.in_summary) for f in result.facts}
    assert found == {
        "F1": (True, True, True),  # case-insensitive: "Minutes"
        "F2": (True, True, False),  # grep finds it in the padding, the summary lost it
        "F3": (True, False, False),
        "F4": (False, True, False),
        "F5": (True, False, False),
    }
    assert result.model == lic.COMPACTION_MODEL and result.messages == 4
    assert (result.grep_compacted, result.summary_compacted) == (0.5, 0.25)
    (c4,) = [r for r in lic.table([result]) if r.level == "C4"]
    assert c4.grep is not None and c4.grep.mean == 0.5
    assert not c4.within  # 50% is outside the published 59-62%
    # another model's runs are not the table's
    assert all(r.contexts == 0 for r in lic.table([result], model="other"))
