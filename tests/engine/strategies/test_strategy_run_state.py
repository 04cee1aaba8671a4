"""A strategy instance holds settings only: replaying with it leaves it unchanged, so it can
replay twice, or in two threads at once, with the single-run results; the context it sees
is read-only."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest
from builders import assistant, conv, plain, system, user
from catalogue_runs import BENCH_MESSAGES, SMALL

from ctxlab.engine import cli, synth
from ctxlab.engine.core.context_view import ContextView, ReadOnlyContextError
from ctxlab.engine.core.model import Conversation, Message
from ctxlab.engine.core.records import ReplayResult
from ctxlab.engine.replay import run
from ctxlab.engine.strategies import LIBRARY, Strategy, make_strategy
from ctxlab.engine.summarize.offline import OfflineSummarizer

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
SESSION = CORPUS / "claude-code" / "agentcmd-full-session.jsonl"
TRAJ = CORPUS / "swe-agent-traj" / "marshmallow-1867-fc.traj"


def _dump(result: ReplayResult) -> str:
    """Everything a replay produced, as one comparable string."""
    return json.dumps(plain(result), sort_keys=True, ensure_ascii=False, default=str)


def _conversations() -> list[Conversation]:
    return [
        cli.load_file(SESSION),
        cli.load_file(TRAJ),
        synth.bench_conversation(CORPUS, messages=BENCH_MESSAGES, seed=5),
    ]


CONVERSATIONS = _conversations()
NAMES = [*LIBRARY, "custom"]
CUSTOM = {
    "window": 4000,
    "stages": [
        {"stage": "truncate_tool_results", "max_bytes": 500, "keep_recent": 1},
        {"stage": "clear_tool_results", "keep": 2},
        {"stage": "summarise", "keep_tokens": 1000},
    ],
}


def _fresh(name: str) -> Strategy:
    return make_strategy(name, CUSTOM if name == "custom" else SMALL.get(name, {}))


def _replay(strategy: Strategy, conversation: Conversation) -> str:
    return _dump(run(conversation, strategy, summarizer=OfflineSummarizer()))


def _instance_attributes(strategy: Strategy) -> dict[str, int]:
    return {k: id(v) for k, v in vars(strategy).items()}


@pytest.mark.parametrize("name", NAMES)
def test_one_instance_replays_twice_with_the_fresh_instance_results(name: str) -> None:
    expected = [_replay(_fresh(name), c) for c in CONVERSATIONS]
    shared = _fresh(name)
    before = _instance_attributes(shared)
    for _ in range(2):  # each conversation twice, in turn: nothing carries over
        assert [_replay(shared, c) for c in CONVERSATIONS] == expected
    # a replay adds no attribute to the instance and rebinds none (settings only)
    assert _instance_attributes(shared) == before


@pytest.fixture
def _fast_thread_switches() -> Iterator[None]:
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # interleave the two replays as finely as possible
    yield
    sys.setswitchinterval(old)


@pytest.mark.usefixtures("_fast_thread_switches")
@pytest.mark.parametrize("name", NAMES)
def test_two_threads_replaying_with_one_instance_give_the_single_run_results(name: str) -> None:
    first, second = CONVERSATIONS[0], CONVERSATIONS[2]
    expected = {0: _replay(_fresh(name), first), 1: _replay(_fresh(name), second)}
    shared = _fresh(name)
    got: dict[int, str] = {}
    errors: list[BaseException] = []
    barrier = threading.Barrier(2)

    def work(slot: int, conversation: Conversation) -> None:
        try:
            barrier.wait()
            got[slot] = _replay(shared, conversation)
        except BaseException as exc:  # reported below, with the thread's slot
            errors.append(exc)

    threads = [
        threading.Thread(target=work, args=(0, first)),
        threading.Thread(target=work, args=(1, second)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert got == expected


class _WritesTheContext(Strategy):
    """Keeps a running total by writing the context instead of acting through it."""

    name = "writes_the_context"
    PARAMS: ClassVar = ()

    def count_text(self, text: str) -> int:
        return len(text)

    def count_message(self, message: Message) -> int:
        return len(message.text)

    def window(self, ctx: ContextView) -> int:
        return 1_000_000

    def before_call(self, ctx: ContextView) -> None:
        ctx.history_tokens = 0  # type: ignore[misc]


def test_assigning_to_the_context_view_fails_with_a_clear_error() -> None:
    c = conv(system("S"), user("hi"), assistant("yo"))
    with pytest.raises(ReadOnlyContextError, match="read-only.*'history_tokens'.*ctx.action"):
        run(c, _WritesTheContext())


def test_the_view_refuses_new_attributes_and_deletion_too() -> None:
    seen: list[ContextView] = []

    class Keeps(_WritesTheContext):
        def before_call(self, ctx: ContextView) -> None:
            seen.append(ctx)

    run(conv(system("S"), user("hi"), assistant("yo")), Keeps())
    (view,) = seen
    with pytest.raises(ReadOnlyContextError):
        view.my_total = 3  # type: ignore[attr-defined]
    with pytest.raises(ReadOnlyContextError):
        del view.live
    assert view.history_tokens == len("hi")  # reads still work
