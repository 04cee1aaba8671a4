from __future__ import annotations

import pytest

from ctxlab.engine.core.catalogue import is_compaction


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        pytest.param("summary_failed", False, id="failure-is-not-compaction"),
        pytest.param("sanitize", False, id="repair-is-not-compaction"),
        pytest.param("restore_request", False, id="restore-is-not-compaction"),
        pytest.param("prune_lifted", False, id="baseagent-lift-is-a-restore"),
        pytest.param("compact_skipped", False, id="skip-is-not-compaction"),
        pytest.param("summarise", True, id="listed-kind"),
        pytest.param("drop_turns", True, id="cowagent-old-spelling"),
        pytest.param("compress_text_only", True, id="cowagent-compress"),
        pytest.param("summarize", True, id="picoclaw-old-spelling"),
        pytest.param("invented", False, id="uncatalogued-is-not-guessed"),
    ],
)
def test_is_compaction(kind: str, expected: bool) -> None:
    assert is_compaction(kind) is expected
