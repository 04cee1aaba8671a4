"""Codex by version: the rules table, and real 0.140-0.142 compactions it must reproduce.

The rollouts under tests/data/codex-rollouts are cut from EntityProcess/agentv's
``entire/checkpoints/v1`` (MIT; README there): every reported count, reasoning count and the
tool outputs Codex weighed at each compaction are as recorded.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from builders import EchoSummarizer, assistant, conv, system, tool_result, tool_use, user

from ctxlab.engine import importers
from ctxlab.engine.budget import window_params
from ctxlab.engine.core.model import Conversation, Usage
from ctxlab.engine.core.records import Fate
from ctxlab.engine.replay import run
from ctxlab.engine.strategies import _codex_versions as versions
from ctxlab.engine.strategies.codex import CodexStrategy
from ctxlab.engine.summarize.recorded import RecordedSummarizer

DATA = Path(__file__).resolve().parents[2] / "data" / "codex-rollouts"
SPARK = DATA / "agentv-0.142.2-spark-window2.jsonl"  # starts after window 1's compaction
MANUAL_AUTO = DATA / "agentv-0.142.5-manual-then-auto.jsonl"  # /compact, then an auto one
V0140 = DATA / "agentv-0.140.0-window3.jsonl"


def load(path: Path) -> Conversation:
    (conversation,) = importers.parse(path.read_bytes(), name=path.name).conversations
    return conversation


def replay(conversation: Conversation, **params: object):  # type: ignore[no-untyped-def]
    return run(conversation, "codex", params=params, summarizer=RecordedSummarizer())


def in_file(conversation: Conversation) -> list[int]:
    """Source index of each original compaction inside the file (not at its start)."""
    return [c.before_index for c in conversation.compactions if c.before_index > 0]


def compactions(result):  # type: ignore[no-untyped-def]
    return [e for e in result.events if e.kind == "compact"]


def first_step_at(result, index: int) -> int:  # type: ignore[no-untyped-def]
    return next(s for s, step in enumerate(result.steps) if step.source_index >= index)


# -- the table -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "name"),
    [("", "legacy"), ("0.40.0", "legacy"), ("0.117.9", "legacy"), ("0.118.0", "0.118"),
     ("0.139.9", "0.118"), ("0.118", "0.118"), ("0.140.0", "0.140"),
     ("0.140.0-alpha.19", "0.140"), ("0.142.5", "0.140"), ("0.144.3", "0.140"),
     ("0.145.0-alpha.18", "0.145"), ("0.149.1", "0.145"), ("0.145", "0.145"),
     ("legacy", "legacy"), ("0.140", "0.140"), ("not a version", "legacy")],
)  # fmt: skip
def test_rules_for_version(version: str, name: str) -> None:
    assert versions.rules_for(version)[0].name == name


def test_rules_for_a_version_newer_than_checked_says_so() -> None:
    assert "newer than the newest checked" in versions.rules_for("0.149.1")[1]
    assert "newer" not in versions.rules_for("0.142.5")[1]
    assert "newer" not in versions.rules_for("0.145.0-alpha.30")[1]


@pytest.mark.parametrize(
    ("reported", "window", "limit"),
    [(258_400, 272_000, 244_800), (121_600, 128_000, 115_200)],  # gpt-5.5, gpt-5.3-codex-spark
)
def test_reported_window_is_95_percent_and_limit_90_percent(
    reported: int, window: int, limit: int
) -> None:
    assert versions.context_window_from_reported(reported) == window
    assert versions.auto_compact_limit(window) == limit
    assert versions.auto_compact_limit(window, 100_000) == 100_000  # a config lowers it
    assert versions.auto_compact_limit(window, 10**9) == limit  # but never raises it


def test_reasoning_estimate_is_three_quarters_of_base64_minus_overhead() -> None:
    # 4 096 base64 chars -> 3 072 bytes - 650 = 2 422 -> ceil(/4) = 606 (history.rs test)
    assert versions.reasoning_estimate(4096) == 606
    assert versions.reasoning_estimate(100) == 0


# -- 0.140 check points on built conversations ---------------------------------------------------


def meta(version: str, window: int) -> tuple[tuple[str, str], ...]:
    return (("cli_version", version), ("model_context_window", str(window)))


def built(reported: int, version: str = "0.142.5", *, follow_up: bool) -> Conversation:
    """A turn whose reply reports ``reported``; then either a tool output (follow-up) or a
    reply that ends the turn, then a new user message."""
    messages = [
        system("S"),
        user("first task"),
        assistant("a1", tool_use("c1", "shell"), usage=Usage(input_uncached=100)),
        tool_result("c1", "ok"),
        assistant(
            "a2",
            *([tool_use("c2", "shell")] if follow_up else []),
            usage=Usage(input_uncached=reported),
        ),  # fmt: skip
    ]
    messages += [tool_result("c2", "x" * 400)] if follow_up else [user("second task")]
    messages.append(assistant("a3"))
    c = conv(*messages)
    return Conversation(c.id, c.title, c.messages, metadata=meta(version, 1_000))


def test_0140_mid_turn_counts_reported_plus_tool_output_estimate() -> None:
    # window 1 000 / 0.95 -> 1 053, limit 947; the 400-byte output is ~ (402 + 2 + 150) / 4 = 139
    limit = versions.auto_compact_limit(versions.context_window_from_reported(1_000))
    assert not compactions(replay(built(limit - 140, follow_up=True)))
    (event,) = compactions(replay(built(limit - 138, follow_up=True)))
    assert event.detail["phase"] == "mid_turn" and event.detail["rules_version"] == "0.140"
    assert event.detail["total_tokens"] >= limit == event.detail["limit"]


def test_0140_pre_turn_check_before_the_user_message() -> None:
    limit = versions.auto_compact_limit(versions.context_window_from_reported(1_000))
    assert not compactions(replay(built(limit - 1, follow_up=False)))
    (event,) = compactions(replay(built(limit, follow_up=False)))
    assert event.detail["phase"] == "pre_turn"


def test_legacy_rules_when_pinned_check_every_request_on_reported_minus_reasoning() -> None:
    c = built(2_000, follow_up=True)
    (event,) = compactions(replay(c, agent_version="legacy", model_context_window=2_000))
    assert "phase" not in event.detail and event.detail["usage_source"] == "reported"


def test_pinned_window_wins_over_the_reported_one() -> None:
    c = built(900, follow_up=True)
    assert compactions(replay(c))  # limit 947 from the rollout's window
    assert not compactions(replay(c, model_context_window=100_000))


# -- real compactions: reproduced at their own step ----------------------------------------------


@pytest.mark.parametrize(
    ("path", "version", "limit"),
    [(SPARK, "0.142.2", 115_200), (MANUAL_AUTO, "0.142.5", 244_800), (V0140, "0.140.0", 244_800)],
)
def test_real_auto_compaction_reproduced_at_its_step(path: Path, version: str, limit: int) -> None:
    conversation = load(path)
    result = replay(conversation)
    auto = [c for c in conversation.compactions if c.before_index > 0 and c.trigger == "auto"]
    assert auto and all(c.agent_version == version for c in auto)
    events = [e for e in compactions(result) if e.detail.get("original_trigger") == "auto"]
    assert [e.step for e in events] == [first_step_at(result, c.before_index) for c in auto]
    for event in events:
        assert event.detail["follows_original"] and event.detail["limit"] == limit
        assert event.detail["total_tokens"] >= limit  # the replay's own trigger fired there
    # and nowhere earlier: every compaction of the replay is one of the original's
    assert len(compactions(result)) == len(in_file(conversation))


def test_following_takes_the_replacement_history_as_the_context() -> None:
    conversation = load(MANUAL_AUTO)
    result = replay(conversation)
    auto = compactions(result)[-1]
    start = in_file(conversation)[-1]
    original = next(c for c in conversation.compactions if c.before_index == start)
    replacement = int(dict(original.detail)["replacement_items"])
    kept = result.steps[auto.step].context_indexes
    assert kept == list(range(start, start + replacement))  # exactly its replacement history
    assert all(f is Fate.SUMMARISED for f in (c.fate for c in auto.changes))
    # the count before it is the one the agent logged (pre_tokens); after it, Codex's own
    # estimate of the new history (post_tokens), as its next token_count says
    assert auto.tokens_before == original.pre_tokens
    assert auto.tokens_after == int(dict(original.detail)["post_tokens"])


def test_manual_compaction_followed_only_when_asked() -> None:
    conversation = load(MANUAL_AUTO)
    manual = next(c for c in conversation.compactions if c.trigger == "manual")
    followed = replay(conversation)
    first = compactions(followed)[0]
    assert first.detail["original_trigger"] == "manual"
    assert first.detail["total_tokens"] < first.detail["limit"]  # followed as the user's act
    assert first.step == first_step_at(followed, manual.before_index)
    skipped = replay(conversation, follow_manual_compactions=False)
    assert all(e.detail.get("original_trigger") != "manual" for e in compactions(skipped))
    (skip,) = [e for e in skipped.events if e.kind == "compact_skipped"][:1]
    assert {c.fate for c in skip.changes} == {Fate.DROPPED}


def test_not_following_leaves_the_replacement_history_out() -> None:
    conversation = load(SPARK)
    (start,) = in_file(conversation)
    result = replay(conversation, model_context_window=1_000_000)  # the trigger never fires
    assert not compactions(result)
    (skip,) = [e for e in result.events if e.kind == "compact_skipped"]
    assert min(c.index for c in skip.changes) == start
    assert skip.detail["window_number"] == "2"


def test_strategy_window_defaults_when_nothing_says() -> None:
    assert CodexStrategy().auto_compact_limit() == 244_800
    summarizer = EchoSummarizer()
    result = run(conv(system("S"), user("u"), assistant("a")), "codex", summarizer=summarizer)
    assert not compactions(result)


def test_an_older_rollout_with_remote_compactions_runs_the_0118_rules() -> None:
    conversation = load(SPARK)
    older = Conversation(
        conversation.id, conversation.title, conversation.messages,
        compactions=conversation.compactions,
        metadata=tuple((k, "0.110.0" if k == "cli_version" else v)
                       for k, v in conversation.metadata),
    )  # fmt: skip
    (event,) = compactions(replay(older))
    assert event.detail["rules_version"] == "0.118"
    assert "predates the checked range" in event.detail["rules_reason"]
    no_remote = Conversation(older.id, older.title, older.messages, metadata=older.metadata)
    assert all(e.detail.get("rules_version", "legacy") == "legacy" for e in
               compactions(replay(no_remote)))  # fmt: skip


def pre_turn_rollout(reported: int, version: str = "0.142.5") -> Conversation:
    """Turn 1 ends with a reply reporting ``reported``; turn 2 starts with a compaction
    written before its user message (a pre-turn auto compaction). 0.118's replacement
    history keeps the earlier replies too."""

    def rec(kind: str, payload: dict[str, object]) -> str:
        return json.dumps({"type": kind, "payload": payload})

    def msg(role: str, words: str) -> dict[str, object]:
        part = "output_text" if role == "assistant" else "input_text"
        return {"type": "message", "role": role, "content": [{"type": part, "text": words}]}

    def count(total: int, running: int) -> str:
        last = {"input_tokens": total - 10, "output_tokens": 10, "total_tokens": total}
        info = {"last_token_usage": last, "total_token_usage": {"total_tokens": running},
                "model_context_window": 1_000}  # fmt: skip
        return rec("event_msg", {"type": "token_count", "info": info})

    lines = [
        rec("session_meta", {"id": "s", "cli_version": version}),
        rec("event_msg", {"type": "task_started"}),
        rec("turn_context", {"model": "gpt-5.5"}),
        rec("response_item", msg("user", "first task")),
        rec("event_msg", {"type": "user_message", "message": "first task"}),
        rec("response_item", msg("assistant", "done")),
        count(reported, reported),
        rec("event_msg", {"type": "task_complete"}),
        rec("event_msg", {"type": "task_started"}),
        rec(
            "compacted",
            {
                "message": "",
                "replacement_history": [msg("user", "first task")]
                + ([msg("assistant", "done")] if version < "0.140" else []),
            },
        ),
        rec("response_item", msg("user", "second task")),
        rec("event_msg", {"type": "user_message", "message": "second task"}),
        rec("response_item", msg("assistant", "ok")),
        count(60, reported + 60),
    ]
    (conversation,) = importers.parse("\n".join(lines).encode(), name="p.jsonl").conversations
    return conversation


@pytest.mark.parametrize("version", ["0.142.5", "0.118.0"])
@pytest.mark.parametrize(("reported", "follows"), [(946, False), (947, True)])
def test_pre_turn_compaction_written_before_the_user_message(
    reported: int, follows: bool, version: str
) -> None:
    """Also when the first step after the boundary is a reply of 0.118's replacement
    history (the turn's user message not appended yet): still the pre-turn check."""
    conversation = pre_turn_rollout(reported, version)
    (original,) = conversation.compactions
    assert original.trigger == "auto" and original.pre_tokens == reported
    result = replay(conversation)
    if follows:
        (event,) = compactions(result)
        assert event.detail["phase"] == "pre_turn" and event.detail["follows_original"]
    else:
        assert not compactions(result)
        (skip,) = [e for e in result.events if e.kind == "compact_skipped"]
        assert skip.detail["phase"] == "pre_turn" and skip.detail["total_tokens"] == reported


def test_describe_rules_lists_each_range_with_its_source_and_the_pinned_one() -> None:
    from ctxlab.engine.strategies.codex import describe_rules

    table = describe_rules("0.141.0")
    assert [r["rules"] for r in table["ranges"]] == ["0.145", "0.140", "0.118", "legacy"]
    assert all(r["source"] for r in table["ranges"]) and table["selected"] == "0.140"
    assert describe_rules()["selected"] is None


# -- 0.118 (entireio/git-sync) -------------------------------------------------------------------

GIT_SYNC = DATA / "git-sync-0.118.0-mid-turn.jsonl"


def test_a_real_0118_mid_turn_compaction_is_reproduced_at_its_step() -> None:
    """git-sync 0.118.0, gpt-5.4 (reported window 258 400): Codex compacted after a sampling
    that needed a follow-up, the last response reporting 226 023. The 0.118 rules compact at
    that very step (and follow its replacement history); the legacy rules do not."""
    conversation = load(GIT_SYNC)
    (index,) = in_file(conversation)
    (original,) = [c for c in conversation.compactions if c.before_index == index]
    assert original.pre_tokens == 226_023
    result = replay(conversation)
    (event,) = compactions(result)
    assert event.step == first_step_at(result, index)
    assert event.detail["rules_version"] == "0.118" and event.detail["phase"] == "mid_turn"
    assert event.detail["follows_original"] and event.detail["total_tokens"] >= 244_800
    assert not compactions(replay(conversation, agent_version="legacy"))


def collab_rollout(
    notification: str, *, compacted: bool = False, output_chars: int = 200
) -> Conversation:
    """A 0.118 turn: a reply with 200 reasoning tokens and a tool call, then a user-role
    message recorded mid-turn (``notification``), a reply reporting 600 and a ~60-token
    tool output (then, when ``compacted``, the original's mid-turn compaction). Limit: 90%
    of 1 000."""

    def rec(kind: str, payload: dict[str, object]) -> str:
        return json.dumps({"type": kind, "payload": payload})

    def msg(role: str, words: str) -> dict[str, object]:
        part = "output_text" if role == "assistant" else "input_text"
        return {"type": "message", "role": role, "content": [{"type": part, "text": words}]}

    def count(total: int, reasoning: int, running: int) -> str:
        last = {"input_tokens": total - 10 - reasoning, "output_tokens": 10 + reasoning,
                "reasoning_output_tokens": reasoning, "total_tokens": total}  # fmt: skip
        info = {"last_token_usage": last, "total_token_usage": {"total_tokens": running},
                "model_context_window": 950}  # fmt: skip
        return rec("event_msg", {"type": "token_count", "info": info})

    def call(call_id: str) -> str:
        return rec("response_item", {"type": "function_call", "name": "exec_command",
                                     "arguments": "{}", "call_id": call_id})  # fmt: skip

    def output(call_id: str, text: str) -> str:
        return rec("response_item", {"type": "function_call_output", "call_id": call_id,
                                     "output": text})  # fmt: skip

    lines = [
        rec("session_meta", {"id": "s", "cli_version": "0.118.0"}),
        rec("event_msg", {"type": "task_started"}),
        rec("turn_context", {"model": "gpt-5.4"}),
        rec("response_item", msg("user", "review the repo")),
        rec("event_msg", {"type": "user_message", "message": "review the repo"}),
        rec("response_item", {"type": "reasoning", "summary": [], "content": None}),
        call("a"),
        count(500, 200, 500),
        output("a", "ok"),
        rec("response_item", msg("user", notification)),
        call("b"),
        count(600, 0, 1_100),
        output("b", "x" * output_chars),
        *(
            [
                rec(
                    "compacted",
                    {
                        "message": "",
                        "replacement_history": [
                            msg("user", "review the repo"),
                            msg("user", notification),
                        ],
                    },
                )
            ]  # fmt: skip
            if compacted
            else []
        ),
        rec("response_item", msg("assistant", "done")),
        count(700, 0, 1_800),
    ]
    (conversation,) = importers.parse("\n".join(lines).encode(), name="c.jsonl").conversations
    return conversation


def test_a_subagent_notification_is_no_user_turn_boundary_for_the_reasoning_count() -> None:
    """session_prefix.rs: <subagent_notification> is session prefix, no user-turn boundary,
    so the reasoning before it (this turn's) is not added: 600 + the tool output < 900. A
    real user message there would bound it: + 200 x 1.3 (a pinned factor) reaches the
    limit. At the default factor that reasoning is the count's uncertain part (the rollout
    hides it): the original did not compact there, so neither does the replay."""
    quiet = replay(collab_rollout('<subagent_notification>\n{"agent_path":"a1"}\n'
                                  "</subagent_notification>"), reasoning_estimate_factor=1.3)  # fmt: skip
    assert not compactions(quiet)
    user = replay(collab_rollout("also check the tests"), reasoning_estimate_factor=1.3)
    (event,) = compactions(user)
    assert event.detail["phase"] == "mid_turn" and event.detail["total_tokens"] >= 900
    assert not compactions(replay(collab_rollout("also check the tests")))


def test_a_count_reached_only_by_hidden_reasoning_is_settled_by_the_original() -> None:
    """The rollout hides the earlier turn's encrypted reasoning (200 reported tokens): the
    count is 600 + the tool output (40) + 200 to 300 tokens of it, 890 at the default 1.25,
    under the limit (900) but over it at the high end. Where the original compacted, its act
    settles it; a pinned factor stands alone (1.0: under the limit, skipped)."""
    rollout = collab_rollout("also check the tests", compacted=True, output_chars=100)
    (original,) = rollout.compactions
    (event,) = compactions(replay(rollout))
    assert event.detail["follows_original"]
    assert "redacted reasoning" in event.detail["decided_by"]
    low, high = event.detail["count_range"]
    assert low < event.detail["limit"] <= high and high - low == 100
    pinned = replay(rollout, reasoning_estimate_factor=1.0)
    assert not compactions(pinned)
    assert [e.kind for s in pinned.steps for e in s.events if e.kind == "compact_skipped"]


# -- 0.145 (multi-agent collaboration rollouts, entireio/entire-sem) --------------------------

COLLAB = DATA / "entire-sem-0.145.0-collab-window1.jsonl"


def test_0145_rules_limit_is_83_percent_of_the_window() -> None:
    rules, why = versions.rules_for("0.145.0-alpha.18")
    assert rules is versions.V0_145 and "newer" not in why
    window = versions.context_window_from_reported(258_400)
    assert versions.auto_compact_limit(window, 0, rules.auto_compact_percent) == 225_760
    assert versions.auto_compact_limit(window, 0, versions.V0_140.auto_compact_percent) == 244_800


def test_a_real_0145_collab_compaction_is_reproduced_at_its_step() -> None:
    """cli 0.145.0-alpha.18, gpt-5.6-sol, 13 sub-agent messages in the root's context: Codex
    compacted on 225 254 reported + the tool output after it, below the 0.140 limit (244 800)
    and after a check at 224 271 that did not: the 0.145 limit fires there, and only there."""
    conversation = load(COLLAB)
    (original,) = conversation.compactions
    assert original.agent_version == "0.145.0-alpha.18" and original.pre_tokens == 225_254
    result = replay(conversation)
    (event,) = compactions(result)
    assert event.detail["follows_original"] and event.detail["rules_version"] == "0.145"
    assert event.detail["limit"] == 225_760 and event.detail["phase"] == "mid_turn"
    assert 225_760 <= event.detail["total_tokens"] <= 225_254 + 2_000
    assert event.step == first_step_at(result, original.before_index)
    # the 0.140 rules (pinned) leave it: 90% is not reached
    pinned = replay(conversation, agent_version="0.140")
    assert not compactions(pinned)
    assert [e.kind for e in pinned.events if e.kind.startswith("compact")] == ["compact_skipped"]


def test_0145_reasoning_factor_is_the_versions_unless_pinned() -> None:
    strategy = CodexStrategy()
    reply = assistant("done", usage=Usage(input_uncached=10, output=110, reasoning=100))
    assert strategy._reasoning_tokens(reply, versions.V0_145) == 144
    assert strategy._reasoning_tokens(reply, versions.V0_140) == 125
    pinned = CodexStrategy({"reasoning_estimate_factor": 2.0})
    assert pinned._reasoning_tokens(reply, versions.V0_145) == 200


def test_a_budget_at_the_default_window_pins_it() -> None:
    """The same collab rollout, as if its model reported a 400 000 window (380 000 = 95%):
    at the default params that window decides and nothing compacts; a comparison budget of
    272 000 (the default value) still means 272 000, so the 0.145 limit fires again."""
    wide = {"model_context_window": "380000", "model_context_windows": "gpt-5.6-sol=380000"}
    conversation = load(COLLAB)
    metadata = tuple((k, wide.get(k, v)) for k, v in conversation.metadata)
    conversation = dataclasses.replace(conversation, metadata=metadata)
    assert not compactions(replay(conversation))
    params = window_params("codex", 272_000)
    assert params == {"model_context_window": 272_000, "window_from_session": False}
    (event,) = compactions(replay(conversation, **params))
    assert event.detail["limit"] == 225_760


def post_estimate_rollout(post: int) -> Conversation:
    """A turn whose tool output Codex weighs at 950 (limit 90% of 1 000) and compacts
    mid-turn, remotely, as 0.104 does: the replacement history keeps the earlier replies,
    then the user-side messages and the encrypted item, and Codex's own estimate of the new
    history (``post``: input 0, a total only) is written before and after the ``compacted``
    line. Then the follow-up request of the same turn (300) and a second turn (320)."""

    def rec(kind: str, payload: dict[str, object]) -> str:
        return json.dumps({"type": kind, "payload": payload})

    def msg(role: str, words: str) -> dict[str, object]:
        part = "output_text" if role == "assistant" else "input_text"
        return {"type": "message", "role": role, "content": [{"type": part, "text": words}]}

    def count(total: int, running: int, *, estimate: bool = False) -> str:
        last = {"input_tokens": 0 if estimate else total - 10,
                "output_tokens": 0 if estimate else 10, "total_tokens": total}  # fmt: skip
        info = {"last_token_usage": last, "total_token_usage": {"total_tokens": running},
                "model_context_window": 950}  # fmt: skip
        return rec("event_msg", {"type": "token_count", "info": info})

    history = [msg("user", "first task"), msg("assistant", "done"), msg("user", "fix it"),
               {"type": "compaction", "encrypted_content": "e" * 400}]  # fmt: skip
    lines = [
        rec("session_meta", {"id": "s", "cli_version": "0.104.0-alpha.1"}),
        rec("event_msg", {"type": "task_started"}),
        rec("turn_context", {"model": "gpt-5.3-codex"}),
        rec("response_item", msg("user", "first task")),
        rec("event_msg", {"type": "user_message", "message": "first task"}),
        rec("response_item", msg("assistant", "done")),
        count(400, 400),
        rec("event_msg", {"type": "task_complete"}),
        rec("event_msg", {"type": "task_started"}),
        rec("response_item", msg("user", "fix it")),
        rec("event_msg", {"type": "user_message", "message": "fix it"}),
        rec(
            "response_item",
            {"type": "function_call", "name": "exec_command", "arguments": "{}", "call_id": "a"},
        ),  # fmt: skip
        count(950, 1_350),
        rec("response_item", {"type": "function_call_output", "call_id": "a", "output": "ok"}),
        count(post, 1_350, estimate=True),
        rec("compacted", {"message": "", "replacement_history": history}),
        count(post, 1_350, estimate=True),
        rec("response_item", msg("assistant", "fixed")),
        count(300, 1_650),
        rec("event_msg", {"type": "task_complete"}),
        rec("event_msg", {"type": "task_started"}),
        rec("response_item", msg("user", "thanks")),
        rec("event_msg", {"type": "user_message", "message": "thanks"}),
        rec("response_item", msg("assistant", "welcome")),
        count(320, 1_970),
    ]
    (conversation,) = importers.parse("\n".join(lines).encode(), name="e.jsonl").conversations
    return conversation


@pytest.mark.parametrize("post", [200, 5_000])
def test_the_request_after_a_compaction_is_no_check_point(post: int) -> None:
    """After a mid-turn compaction Codex `continue`s into the follow-up request (after a
    pre-turn one it records the user message and samples): no check before it. Codex 0.104
    estimates the new history far over the window (madshn/localpush: 940 499 of 258 400),
    the estimate stands until that request's response reports, and the replay compacted a
    second time on it where Codex did not. One compaction, the original's, whatever the
    estimate; the next turn is checked on the response's own count."""
    conversation = post_estimate_rollout(post)
    (original,) = conversation.compactions
    assert dict(original.detail)["post_tokens"] == str(post)
    result = replay(conversation)
    (event,) = compactions(result)
    assert event.detail["follows_original"] and event.detail["phase"] == "mid_turn"
    assert event.detail["rules_version"] == "0.118"
