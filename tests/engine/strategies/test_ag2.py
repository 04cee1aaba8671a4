"""AG2 TransformMessages: MessageHistoryLimiter and MessageTokenLimiter (ag2ai/ag2 @ 70badee).

Ported as tables from the original's ``test/agentchat/contrib/capabilities/test_transforms.py``:
``test_message_history_limiter_apply_transform`` and ``..._keep_first`` (the long, short,
no-content, tool and tool-kept fixtures), ``test_message_token_limiter_apply_transform`` and
``..._with_threshold_apply_transform`` (token counts and lengths after the transform). The
filter and name tests are not ported (``filter_dict``, ``exclude_names``: not modelled).
Then the replays: the request view against the ported functions at every step, tool
results sent whole, every corpus transcript."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from builders import assistant, call, conv, events_of, system, tool_result, user

from ctxlab.engine import cli
from ctxlab.engine.core.model import Message
from ctxlab.engine.replay import run
from ctxlab.engine.strategies import LIBRARY, PRESETS, STRATEGIES, _ag2
from ctxlab.engine.strategies import _chat_history as ch
from ctxlab.engine.strategies import ag2_token_limiter as tl
from ctxlab.engine.tokens.cl100k import reference_counter

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
count = reference_counter().count

LONG = [("assistant", "are you doing?"), ("user", "very very very very very very long string"),
        ("user", "hello"), ("assistant", "there"), ("user", "how")]  # fmt: skip
SHORT = [("user", "hello"), ("assistant", "there"), ("user", "how are you")]
NO_CONTENT = [("user", None), ("assistant", None)]
TOOL = [("user", "hello"), ("tool_calls", "calling_tool"), ("tool", "tool_response"),
        ("user", "how are you"), ("assistant", "are you doing?")]  # fmt: skip
TOOL_KEPT = [("user", "hello"), ("tool_calls", "calling_tool"), ("tool", "tool_response"),
             ("tool_calls", "calling_tool"), ("tool", "tool_response")]  # fmt: skip


def test_registered() -> None:
    for name in ("ag2_history_limiter", "ag2_token_limiter"):
        assert name in LIBRARY and name not in PRESETS
        assert STRATEGIES[name].WINDOW == "context_window"
    limits = {p.name: p.default for p in STRATEGIES["ag2_token_limiter"].PARAMS}
    assert (limits["max_tokens"], limits["max_tokens_per_message"], limits["min_tokens"]) == (
        1000, 50, 500)  # fmt: skip
    with pytest.raises(ValueError, match="min_tokens"):
        STRATEGIES["ag2_token_limiter"]({"max_tokens": 100, "min_tokens": 200})


# -- MessageHistoryLimiter.apply_transform -------------------------------------------------------


@pytest.mark.parametrize(
    ("messages", "keep_first", "expected"),
    [
        (LONG, False, [3, 2, 4]),  # the last one kept lands at position 1 (the original's order)
        (SHORT, False, [0, 1, 2]),
        (NO_CONTENT, False, [0, 1]),
        (TOOL, False, [3, 4]),  # the last slot is not given to the tool message
        (TOOL_KEPT, False, [3, 4]),
        (LONG, True, [0, 3, 4]),
        (SHORT, True, [0, 1, 2]),
        (NO_CONTENT, True, [0, 1]),
        (TOOL, True, [0, 3, 4]),
        (TOOL_KEPT, True, [0, 3, 4]),
    ],
)
def test_message_history_limiter_apply_transform(
    messages: list[tuple[str, str | None]], keep_first: bool, expected: list[int]
) -> None:
    roles = [r for r, _ in messages]
    assert _ag2.history_limiter_kept(roles, 3, keep_first) == expected


# -- MessageTokenLimiter.apply_transform ---------------------------------------------------------


def transform(
    messages: list[tuple[str, str | None]], max_tokens: int, per_message: int, min_tokens: int = 0
) -> tuple[int, int]:
    """(content tokens after the transform, messages kept), as the original's tests read."""
    contents = [c for _, c in messages]
    tokens = [count(c) if c else 0 for c in contents]
    if min_tokens and sum(tokens) < min_tokens:
        return sum(tokens), len(messages)
    oldest, cut = tl.walk(contents, tokens, max_tokens, per_message,
                          lambda p: count(tl.truncate_tokens(contents[p] or "", per_message)))  # fmt: skip
    after = sum(
        count(tl.truncate_tokens(contents[p] or "", cut[p])) if p in cut else tokens[p]
        for p in range(oldest, len(messages))
    )
    return after, len(messages) - oldest


@pytest.mark.parametrize(
    ("messages", "per_message", "min_tokens", "expected"),
    [
        (LONG, 3, 0, (9, 5)),
        (SHORT, 3, 0, (5, 3)),
        (NO_CONTENT, 3, 0, (0, 2)),
        (LONG, 1, 10, (5, 5)),  # message_token_limiter_with_threshold
        (SHORT, 1, 10, (5, 3)),  # under min_tokens: untouched
        (NO_CONTENT, 1, 10, (0, 2)),
    ],
)
def test_message_token_limiter_apply_transform(
    messages: list[tuple[str, str | None]], per_message: int, min_tokens: int,
    expected: tuple[int, int],
) -> None:  # fmt: skip
    assert transform(messages, sys.maxsize, per_message, min_tokens) == expected


@pytest.mark.parametrize(
    ("max_tokens", "per_message", "kept"),
    [
        (4, sys.maxsize, 1),  # per_message unset: only the newest, cut to max_tokens
        (sys.maxsize, sys.maxsize, 2),  # both unset: the second counted message ends the walk
        (3, 1, 4),  # 1 + 1 + 1, then the next is cut to 0 tokens, kept, and the walk ends
    ],
)
def test_token_limiter_none_limits_arithmetic(max_tokens: int, per_message: int, kept: int) -> None:
    assert transform(LONG, max_tokens, per_message)[1] == kept


# -- replays -----------------------------------------------------------------------------------


def session(turns: int, size: int = 30) -> list[Message]:
    msgs = [system("sys")]
    for t in range(turns):
        msgs += [user(f"question {t} " + "word " * size), call(f"c{t}", text=f"look {t}"),
                 tool_result(f"c{t}", f"result {t} " + "data " * size), call(f"d{t}"),
                 tool_result(f"d{t}", "short"), assistant(f"answer {t} " + "text " * size)]  # fmt: skip
    return msgs


@pytest.mark.parametrize("params", [{}, {"max_messages": 4}, {"max_messages": 5,
                                                              "keep_first_message": True}])  # fmt: skip
def test_history_limiter_view_matches_the_transform_at_every_step(
    params: dict[str, object],
) -> None:
    msgs = session(5)
    res = run(conv(*msgs), "ag2_history_limiter", params=params)
    strategy = STRATEGIES["ag2_history_limiter"](params)
    for step in res.steps:
        before = list(range(1, step.source_index))
        roles = [ch.whole(msgs[i], i).role for i in before]
        want = {before[k] for k in _ag2.history_limiter_kept(
            roles, int(strategy.params["max_messages"]),
            bool(strategy.params["keep_first_message"]))}  # fmt: skip
        assert set(step.context_indexes) - {0} == want, step.source_index
    assert events_of(res, "trim")


def test_token_limiter_cuts_texts_but_sends_tool_results_whole() -> None:
    msgs = session(6, size=80)
    res = run(conv(*msgs), "ag2_token_limiter", params={"max_tokens": 300,
                                                        "max_tokens_per_message": 40,
                                                        "min_tokens": 0})  # fmt: skip
    changes = [c for e in events_of(res, "trim") for c in e.changes]
    pruned = {c.index for c in changes if c.fate.value == "pruned"}
    dropped = {c.index for c in changes if c.fate.value == "dropped"}
    assert pruned and dropped
    assert all(msgs[i].role.value != "user" or not msgs[i].blocks[0].tool_id for i in pruned)
    for c in changes:
        if c.fate.value == "pruned":
            assert c.message is not None
            assert count(c.message.blocks[0].text) <= 40
    last = res.steps[-1].context_indexes
    assert last == sorted(last) and min(i for i in last if i) > 1


def test_token_limiter_cuts_each_text_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # The walk caps a message to max_tokens_per_message and counts that head; the request
    # shows the same head: one truncation per message and length, however many requests.
    calls: list[tuple[str, int]] = []
    truncate = tl.truncate_tokens

    def counted(text: str, n_tokens: int) -> str:
        calls.append((text, n_tokens))
        return truncate(text, n_tokens)

    monkeypatch.setattr(tl, "truncate_tokens", counted)
    res = run(conv(*session(6, size=80)), "ag2_token_limiter",
              params={"max_tokens": 300, "max_tokens_per_message": 40, "min_tokens": 0})  # fmt: skip
    pruned = [c for e in events_of(res, "trim") for c in e.changes if c.fate.value == "pruned"]
    assert pruned and calls
    assert len(calls) == len(set(calls))


def test_token_limiter_waits_for_min_tokens() -> None:
    res = run(conv(*session(1, size=5)), "ag2_token_limiter")
    assert not res.events


CORPUS_FILES = sorted(
    p.relative_to(CORPUS).as_posix()
    for p in CORPUS.rglob("*")
    if p.is_file() and p.suffix not in {".md", ".tsv"} and not p.name.startswith(".")
)


@pytest.mark.parametrize("name", CORPUS_FILES)
def test_replays_every_corpus_transcript(name: str) -> None:
    conversation = cli.load_file(CORPUS / name)
    for strategy, params in (
        ("ag2_history_limiter", {}),
        ("ag2_history_limiter", {"max_messages": 1, "keep_first_message": True}),
        ("ag2_token_limiter", {}),
        ("ag2_token_limiter", {"max_tokens": -1, "min_tokens": 0}),
        ("ag2_token_limiter", {"max_tokens_per_message": -1}),
    ):
        res = run(conversation, strategy, params=params)
        assert len(res.steps) >= 0


def test_token_limits_capped_at_the_default_models() -> None:
    s = STRATEGIES["ag2_token_limiter"]({"max_tokens": 10_000, "max_tokens_per_message": 5000})
    assert (s.max_tokens, s.per_message) == (4096, 4096)
    assert STRATEGIES["ag2_token_limiter"]({"max_tokens": -1}).max_tokens == sys.maxsize


def test_truncate_tokens_encodes_a_head_only_and_equals_the_whole_encoding() -> None:
    """The first n tokens from a head of the text (its last pattern piece left out) are
    the first n of the whole text's encoding, on every corpus text and sizes around the
    head's first guess (8 n + 64 characters)."""
    from ctxlab.engine.tokens.cl100k import _encoding

    enc = _encoding()
    texts = [b.text for name in CORPUS_FILES for m in cli.load_file(CORPUS / name).messages
             for b in m.blocks if b.text]  # fmt: skip
    texts += ["a" * 5000, " " * 3000 + "x", "word " * 2000, "\n\n" * 700 + "end"]
    for text in texts:
        tokens = enc.encode_ordinary(text)
        for n in (0, 1, 7, 50, 333):
            want = text if n >= len(tokens) else enc.decode(tokens[:n])
            assert tl.truncate_tokens(text, n) == want, (text[:40], n)
