"""``stages/own_counts``: the agents' own counts, one rule each, read by the replay
strategy and by the session views alike, so the two cannot count differently.

- Claude Code's ``roughTokenCountEstimationForBlock``: the ``claude_code`` strategy and
  ``ctxlab statusline`` hold the same function (it was written twice); a raw block of
  Claude Code's JSON (``RawBlock``) reads as the importer's block, kind by kind.
- Codex's reasoning tally: the ``codex`` strategy's state and *Your session, now* keep
  one ``ReasoningTally`` each (the strategy had six counters, session-now two of its
  own); on real rollouts the reasoning session-now adds to a reply's usage is the
  strategy's settled reasoning after that reply.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ctxlab.engine import statusline
from ctxlab.engine.core.model import Conversation
from ctxlab.engine.evaluate import session_now as sn
from ctxlab.engine.importers import _anthropic_blocks as ab
from ctxlab.engine.importers import parse
from ctxlab.engine.replay import run
from ctxlab.engine.stages import own_counts
from ctxlab.engine.stages.own_counts import RawBlock, ReasoningTally, block_tokens
from ctxlab.engine.strategies import claude_code
from ctxlab.engine.strategies._codex_versions import BY_NAME, LEGACY
from ctxlab.engine.strategies.codex import CodexStrategy
from ctxlab.engine.summarize.recorded import RecordedSummarizer

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"
CLAUDE_SESSIONS = sorted((DATA / "corpus" / "claude-code").glob("*.jsonl")) + sorted(
    (DATA / "claude-code-2.1.49").glob("*.jsonl")
)
# Real Codex rollouts of 0.118+ (the tally is in the count) and the corpus's 0.40 ones
# (legacy: the count subtracts the reasoning, the tally is still kept by both)
ROLLOUTS = sorted((DATA / "codex-rollouts").glob("*.jsonl"))
CORPUS_ROLLOUTS = sorted((DATA / "corpus" / "codex-rollout").glob("*.jsonl"))


def test_the_claude_code_rule_is_written_once() -> None:
    assert claude_code.block_tokens is own_counts.block_tokens
    assert vars(statusline)["block_tokens"] is own_counts.block_tokens
    assert claude_code.block_tokens.__module__ == "ctxlab.engine.stages.own_counts"


def test_the_codex_tally_is_kept_once() -> None:
    state = CodexStrategy.State()
    assert type(state.reasoning) is ReasoningTally
    for old in ("reasoning_settled", "reasoning_open", "guessed_settled", "guessed_open"):
        assert not hasattr(state, old)
    now = sn.session_now(_main(ROLLOUTS[0])[0], "codex")
    assert type(sn._Counts(now).reasoning) is ReasoningTally


def test_the_module_is_light() -> None:
    """The status line imports it at each call: neither the engine's values nor
    ``dataclasses`` nor the strategy registry come with it."""
    code = (
        "import sys, ctxlab.engine.stages.own_counts as m; "
        "print(sorted(n for n in ('dataclasses', 'ctxlab.engine.core.model', "
        "'ctxlab.engine.strategies', 'inspect') if n in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _main(path: Path) -> tuple[Conversation, str]:
    parsed = parse(path.read_bytes(), name=path.name)
    return next(c for c in parsed.conversations if c.parent_id is None), parsed.format


# Blocks of every kind the importer reads, most of them in no vendored session
ODD_BLOCKS: list[Any] = [
    "a bare string block 😀",
    {"type": "text", "text": "naïve café 😀" * 7},
    {"type": "text", "text": None},
    {"type": "thinking", "thinking": "hmm " * 33, "signature": "c2lnbmF0dXJl"},
    {"type": "redacted_thinking", "data": "RVJFREFDVEVE" * 40},
    {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls ü", "n": 1.5}},
    {"type": "tool_use", "id": "toolu_2", "name": "Edit", "input": '{"already": "a string"}'},
    {"type": "tool_use", "id": "toolu_3", "name": "Noop"},
    {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"q": "x"}},
    {"type": "mcp_tool_use", "id": "mcptoolu_1", "name": "fetch", "input": {"url": "u"}},
    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "out\n" * 50},
    {"type": "tool_result", "tool_use_id": "toolu_1", "content": []},
    {"type": "tool_result", "tool_use_id": "toolu_1"},
    {"type": "tool_result", "tool_use_id": "toolu_1", "content": {"type": "text", "text": "x"}},
    {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": [
            {"type": "text", "text": "a" * 99},
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": "AA"},
            },
        ],
    },
    {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [{"x": 1}]},
    {"type": "image", "source": {"type": "url", "url": "https://example.invalid/a.png"}},
    {"type": "document", "source": {"type": "text", "data": "plain"}},
    {"type": "compaction", "content": "the server's summary " * 9},
    {"type": "compaction", "content": None},
    {"type": "future_block", "payload": {"deep": [1, 2, "ü"]}},
    {"no_type": True},
    42,
    None,
    ["a", "list"],
]


@pytest.mark.parametrize("value", ODD_BLOCKS, ids=lambda v: str(v)[:40])
def test_a_raw_block_counts_as_the_importer_s_block(value: Any) -> None:
    assert block_tokens(RawBlock(value)) == block_tokens(ab.block(value))
    assert statusline.block_estimate(value) == claude_code.block_tokens(ab.block(value))


@pytest.mark.parametrize("path", CLAUDE_SESSIONS, ids=lambda p: p.name)
def test_the_status_line_counts_each_response_as_the_strategy(path: Path) -> None:
    """On real sessions: each response line's estimate as the status line keeps it (its
    blocks, its first block) is the strategy's estimate of the importer's message for
    that line (``count_message`` and its first block)."""
    seen = 0
    for raw in path.read_bytes().splitlines():
        response = statusline._response(raw)
        if response is None:
            continue
        content = json.loads(raw)["message"]["content"]
        blocks = ab.blocks(content)
        assert response[3] == sum(claude_code.block_tokens(b) for b in blocks), raw[:80]
        assert response[4] == (claude_code.block_tokens(blocks[0]) if blocks else 0)
        seen += 1
    assert seen


def _strategy_tallies(conversation: Conversation) -> dict[int, tuple[int, int]]:
    """(settled, open) of the codex strategy's tally after each message it appended, but
    while it holds an original compaction pending (the replacement history and what
    follows until it decides: counted then, the tally cleared)."""
    seen: dict[int, tuple[int, int]] = {}

    class Watching(CodexStrategy):
        def after_append(self, ctx: Any, index: int) -> None:
            super().after_append(ctx, index)
            if ctx.state.pending is None:
                tally = ctx.state.reasoning
                seen[index] = (tally.settled, tally.open)

    run(conversation, Watching(), summarizer=RecordedSummarizer())
    return seen


def _session_tallies(
    conversation: Conversation, fmt: str, monkeypatch: pytest.MonkeyPatch
) -> dict[int, tuple[int, int]]:
    """(settled, open) of session-now's tally after each message it read."""
    seen: dict[int, tuple[int, int]] = {}
    tallies: list[ReasoningTally] = []

    class Recording(ReasoningTally):
        __slots__ = ()

        def __init__(self) -> None:
            super().__init__()
            tallies.append(self)

    where = {id(m): i for i, m in enumerate(conversation.messages)}
    after, user = sn._Counts.after, sn._Counts.user

    def watch_after(self: sn._Counts, message: Any, own: int, version: str) -> int | None:
        count = after(self, message, own, version)
        seen[where[id(message)]] = (self.reasoning.settled, self.reasoning.open)
        return count

    def watch_user(self: sn._Counts, message: Any) -> None:
        user(self, message)
        seen[where[id(message)]] = (self.reasoning.settled, self.reasoning.open)

    monkeypatch.setattr(sn, "ReasoningTally", Recording)
    monkeypatch.setattr(sn._Counts, "after", watch_after)
    monkeypatch.setattr(sn._Counts, "user", watch_user)
    sn.session_now(conversation, fmt)
    assert tallies, "session-now keeps no ReasoningTally"
    return seen


@pytest.mark.parametrize("path", ROLLOUTS + CORPUS_ROLLOUTS, ids=lambda p: p.stem[:48])
def test_codex_session_now_tallies_the_reasoning_as_the_strategy(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both tallies read the same after every reply and every user message (but where
    the strategy holds an original compaction pending); on the 0.118+ rollouts each
    step's count is its usage plus the strategy's settled reasoning."""
    conversation, fmt = _main(path)
    ours = _strategy_tallies(conversation)
    theirs = _session_tallies(conversation, fmt, monkeypatch)
    compared = [i for i in sorted(theirs) if i in ours]
    assert len(compared) >= 0.8 * len(conversation.messages)
    assert [theirs[i] for i in compared] == [ours[i] for i in compared]
    monkeypatch.undo()
    now = sn.session_now(conversation, fmt)
    if BY_NAME[now.rules.rules] is LEGACY:
        return
    assert any(any(ours[i]) for i in compared)  # reasoning tallied at some point
    steps = 0
    for step in now.steps:
        usage = conversation.messages[step.message].usage
        if step.message in ours and usage is not None and step.count is not None:
            assert step.count == usage.context_tokens + ours[step.message][0]
            steps += 1
    assert steps >= 0.8 * len(now.steps)


def test_the_tally_settles_at_a_user_message_and_clears_at_a_compaction() -> None:
    tally = ReasoningTally()
    tally.reply(100, 80)
    tally.reply(20)
    assert (tally.settled, tally.previous, tally.open) == (0, 0, 120)
    tally.user()
    assert (tally.settled, tally.previous, tally.open) == (120, 0, 0)
    assert (tally.guessed_settled, tally.guessed_open) == (80, 0)
    tally.reply(5)
    tally.user()
    assert (tally.settled, tally.previous, tally.guessed_previous) == (125, 120, 80)
    tally.reset()
    assert (tally.settled, tally.previous, tally.open, tally.guessed_settled) == (0, 0, 0, 0)
