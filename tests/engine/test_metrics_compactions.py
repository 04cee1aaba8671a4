from __future__ import annotations

import pytest

from ctxlab.engine.metrics import is_compaction


@pytest.mark.parametrize(
    ("kind", "changed", "expected"),
    [
        pytest.param("summary_failed", False, False, id="no-change-event"),
        pytest.param("sanitize", True, False, id="repair-is-not-compaction"),
        pytest.param("restore_request", True, False, id="restore-is-not-compaction"),
        pytest.param("summarise", False, True, id="listed-kind"),
        pytest.param("drop_turns", True, True, id="cowagent-drop-turns"),
        pytest.param("compress_text_only", True, True, id="cowagent-compress"),
        pytest.param("summarize", True, True, id="picoclaw-spelling"),
    ],
)
def test_is_compaction(kind: str, changed: bool, expected: bool) -> None:
    assert is_compaction(kind, changed) is expected
