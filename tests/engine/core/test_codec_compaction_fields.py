"""An original compaction's every field survives the codec (stored rows read back equal)."""

from __future__ import annotations

from ctxlab.engine.core.codec import compaction_from_dict, compaction_to_dict
from ctxlab.engine.core.model import OriginalCompaction, SourcePos


def test_compaction_fields_round_trip() -> None:
    full = OriginalCompaction(
        before_index=7,
        kind="microcompact",
        trigger="auto",
        pre_tokens=61_000,
        summary_index=None,
        source=SourcePos(file="s.jsonl", line=12),
        instructions="focus on the parser",
        cleared_tool_ids=("toolu_1", "toolu_2"),
        tokens_saved=20_950,
        agent_version="2.1.39",
        detail=(("window_id", "w2"), ("previous_window_id", "w1")),
    )
    assert compaction_from_dict(compaction_to_dict(full)) == full
    bare = OriginalCompaction(before_index=0, kind="compacted")
    assert compaction_to_dict(bare) == {"before_index": 0, "kind": "compacted"}
    assert compaction_from_dict(compaction_to_dict(bare)) == bare
