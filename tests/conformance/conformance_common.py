"""Conformance: each original runs on the same messages as our strategy, at several steps,
and both must keep the same messages.

``make conformance`` runs this folder in .venv-conformance (the originals pinned in
requirements.txt, ctxlab installed from the tree). In the main suite the tests are
collected too and skip, with the reason, when an original is not installed.

Shared here: the corpus transcripts, and our replay's kept set at each step (the source
indexes of the request, less the system prompt).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ctxlab.engine import cli
from ctxlab.engine.core.model import Conversation
from ctxlab.engine.core.records import ReplayResult

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"
SKIP = {"MANIFEST.tsv", "NOTICE.md", "README.md"}
CORPUS_FILES = sorted(
    str(p.relative_to(CORPUS)) for p in CORPUS.rglob("*") if p.is_file() and p.name not in SKIP
)


def load(name: str) -> Conversation:
    return cli.load_file(CORPUS / name)


def kept_by_step(
    result: ReplayResult, conversation: Conversation
) -> Iterator[tuple[int, set[int]]]:
    """(source index of the call, the source indexes its request holds) for each step."""
    system = 0 if conversation.messages and conversation.messages[0].role.value == "system" else -1
    for step in result.steps:
        yield step.source_index, {i for i in step.context_indexes if i != system}


def sample(steps: list[int], most: int) -> set[int]:
    """At most ``most`` of ``steps``, evenly spread, the first and last included."""
    if len(steps) <= most:
        return set(steps)
    return {steps[round(k * (len(steps) - 1) / (most - 1))] for k in range(most)}
