"""The "recorded" summariser: the original agent's own compaction summaries at its real
boundary (synthetic Claude Code and Codex transcripts: the corpus holds no compaction;
tests/data/recorded/make_synthetic.py writes them), and the trigger agreement rows."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from ctxlab.engine import cli, importers
from ctxlab.engine.core import catalogue
from ctxlab.engine.core.model import Conversation, OriginalCompaction
from ctxlab.engine.replay import run
from ctxlab.engine.summarize.offline import OfflineSummarizer
from ctxlab.engine.summarize.recorded import (
    RecordedSummarizer,
    ReplayCompaction,
    summary_text,
    trigger_agreement,
)
from ctxlab.engine.summarize.summarizers import SUMMARIZERS, get_summarizer

DATA = Path(__file__).resolve().parents[2] / "data"
RECORDED = DATA / "recorded"
_spec = importlib.util.spec_from_file_location("make_synthetic", RECORDED / "make_synthetic.py")
assert _spec and _spec.loader
SYNTH = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(SYNTH)

CLAUDE = {"context_window": 60_000}
SHOWN = (
    "original_kind", "kind_key", "kind_label", "trigger", "original_step", "original_tokens",
    "replay_step", "replay_tokens", "replay_kind", "step_difference", "agree", "relation_key",
    "relation",
)  # fmt: skip
CODEX = {"model_context_window": 6000, "model_auto_compact_token_limit": 3000}


def _load(name: str) -> Conversation:
    return importers.parse((RECORDED / name).read_bytes(), name=name).conversations[0]


def test_synthetic_files_are_what_the_script_writes() -> None:
    import json

    for name, records in (
        ("claude-code-compacted.jsonl", SYNTH.claude_code()),
        ("codex-compacted.jsonl", SYNTH.codex()),
    ):
        lines = (RECORDED / name).read_text("utf-8").splitlines()
        assert [json.loads(line) for line in lines] == records


def test_summary_text_unwraps_the_originals_messages() -> None:
    claude = _load("claude-code-compacted.jsonl")
    (comp,) = claude.compactions
    assert comp.kind == "compact_boundary" and comp.pre_tokens == 28_180
    assert summary_text(claude, comp) == SYNTH.CC_SUMMARY  # preamble, path and tail gone
    codex = _load("codex-compacted.jsonl")
    assert summary_text(codex, codex.compactions[0]) == SYNTH.CODEX_SUMMARY
    assert summary_text(codex, OriginalCompaction(before_index=0, kind="x")) == ""


def test_claude_code_replay_reuses_the_real_summary_at_the_real_boundary() -> None:
    conv = _load("claude-code-compacted.jsonl")
    res = run(conv, "claude_code", params=CLAUDE, summarizer=RecordedSummarizer())
    (compact,) = [e for e in res.events if e.kind == "compact"]
    assert res.summaries[compact.summary_id].output == SYNTH.CC_SUMMARY  # type: ignore[index]
    assert res.summaries[0].summarizer == "recorded"
    (row,) = res.metrics["original_compactions"]
    assert {k: row[k] for k in SHOWN} == {
        "original_kind": "compact_boundary",
        "kind_key": "auto",
        "kind_label": "auto-compaction",
        "trigger": "auto",
        "original_step": 6,
        "original_tokens": 28_180,
        "replay_step": 6,
        "replay_tokens": compact.tokens_before,
        "replay_kind": "compact",
        "step_difference": 0,
        "agree": True,
        "relation_key": "same_step",
        "relation": "same step",
    }
    assert row["agent_version"] == dict(conv.metadata).get("version", "")
    assert abs(compact.tokens_before - 28_180) < 100  # the estimate lands near preTokens


def test_codex_replay_reuses_the_compacted_summary_and_says_it_fired_earlier() -> None:
    conv = _load("codex-compacted.jsonl")
    res = run(conv, "codex", params=CODEX, summarizer=get_summarizer("recorded"))
    compact = next(e for e in res.events if e.kind == "compact")
    assert res.summaries[compact.summary_id].output == SYNTH.CODEX_SUMMARY  # type: ignore[index]
    (row,) = res.metrics["original_compactions"]
    assert (row["original_step"], row["replay_step"], row["agree"]) == (4, 3, False)
    assert (row["relation_key"], row["relation"]) == ("earlier", "1 step earlier")
    # the rollout's compacted item carries a readable summary: not the encrypted kind
    assert (row["kind_key"], row["kind_label"]) == ("compacted", "Codex compaction")


def test_without_original_compactions_recorded_is_the_offline_summariser() -> None:
    conv = cli.load_file(DATA / "corpus" / "claude-code" / "agentcmd-full-session.jsonl")
    assert not conv.compactions
    params = {"max_input_length": 4096}
    recorded = run(conv, "qwenpaw", params=params, summarizer=RecordedSummarizer())
    offline = run(conv, "qwenpaw", params=params, summarizer=OfflineSummarizer())
    assert recorded.summaries and "original_compactions" not in recorded.metrics
    assert [s.output for s in recorded.summaries] == [s.output for s in offline.summaries]


def test_each_original_summary_is_used_once_then_offline() -> None:
    conv = _load("codex-compacted.jsonl")
    tight = {"model_context_window": 2000, "model_auto_compact_token_limit": 1000}
    summ = RecordedSummarizer()
    res = run(conv, "codex", params=tight, summarizer=summ)
    assert len(res.summaries) >= 2
    recorded = [a for a in summ.answers if a["recorded"] is not None]
    assert len(recorded) == 1  # the one original summary, at the nearest request
    outputs = [s.output for s in res.summaries]
    assert outputs.count(SYNTH.CODEX_SUMMARY) == 1
    # a second replay with the same summariser starts afresh
    again = run(conv, "codex", params=tight, summarizer=summ)
    assert [s.output for s in again.summaries] == outputs


def test_trigger_agreement_pairs_each_original_with_the_nearest_replay_compaction() -> None:
    originals = [
        OriginalCompaction(before_index=5, kind="compacted", pre_tokens=900),
        OriginalCompaction(before_index=40, kind="compacted"),
    ]
    rows = trigger_agreement(originals, [1, 3, 6, 8, 10], [(2, 950), (4, 700)])
    assert [(r.original_step, r.replay_step, r.agree) for r in rows] == [
        (2, 2, True),
        (None, None, False),  # boundary after the last step: no step, no pairing
    ]
    # the replay did compact (twice): the row says why there is nothing to compare instead
    assert rows[1].relation() == "after the last replayed request"
    (alone,) = trigger_agreement(originals[:1], [1, 3, 6, 8, 10], [])
    assert (alone.original_step, alone.replay_step) == (2, None)
    assert alone.relation() == "not reproduced"


def test_recorded_is_offered_by_the_engine_cli() -> None:
    assert "recorded" in SUMMARIZERS
    conv = cli.load_file(RECORDED / "codex-compacted.jsonl")
    res = cli.replay_conversation(conv, strategy="codex", params=CODEX, summarizer="recorded")
    assert SYNTH.CODEX_SUMMARY in [s.output for s in res.summaries]


def test_trigger_agreement_pairs_within_a_family_and_reads_the_originals_facts() -> None:
    originals = [
        OriginalCompaction(
            before_index=3, kind="microcompact_boundary", pre_tokens=60_000,
            cleared_tool_ids=("t1", "t2", "t3"), tokens_saved=21_000, agent_version="2.1.14",
        ),
        OriginalCompaction(
            before_index=7, kind="compact_boundary", trigger="manual", pre_tokens=90_000,
            instructions="keep the API notes",
        ),
        OriginalCompaction(before_index=9, kind="compacted"),
    ]  # fmt: skip
    replay = [
        ReplayCompaction(2, 61_000, "clear_tool_uses"),
        ReplayCompaction(4, 95_000, "compact", (("rules_version", "2.1.14"),)),
        ReplayCompaction(4, 1, "summarise"),  # a second event of that step: not paired
        ReplayCompaction(5, 1, "truncate"),  # one result cut as it came: no family
    ]
    micro, manual, codex = trigger_agreement(
        originals, [1, 3, 5, 7, 9, 11], replay, readable=[False, True, False], version="2.1.9"
    )
    assert (micro.kind_key, micro.cleared, micro.tokens_saved) == ("microcompact", 3, 21_000)
    assert (micro.original_step, micro.replay_step, micro.relation()) == (1, 2, "1 step later")
    assert micro.agent_version == "2.1.14"  # its own, not the conversation's
    assert (manual.kind_key, manual.instructions, manual.agent_version) == (
        "manual", "keep the API notes", "2.1.9",
    )  # fmt: skip
    assert (manual.replay_step, manual.rules_version, manual.relation()) == (
        4, "2.1.14", "1 step later",
    )  # fmt: skip
    assert manual.in_file and manual.step_difference == 1
    assert (codex.kind_key, codex.replay_step, codex.relation_key) == (
        "compacted_encrypted", None, "not_reproduced",
    )  # fmt: skip
    assert catalogue.original_kind_label(codex.kind_key).endswith("no readable summary)")


def test_trigger_agreement_first_step_is_not_in_file() -> None:
    (row,) = trigger_agreement([OriginalCompaction(before_index=0, kind="compacted")], [2], [])
    assert row.original_step == 0 and not row.in_file
