"""Which Codex CLI version compacts how: the rules the ``codex`` strategy runs per ``cli_version``.

Two rule sets, each with its source. The openai/codex repository could not be brought here
whole (its snapshot is 757 MB, over the 500 MB fetch limit), so the newer rules are read
from the stored versions of its files (commits below, later than 0.142.5) and checked
against real 0.140.0 - 0.142.5 rollouts (EntityProcess/agentv ``entire/checkpoints/v1``,
13 auto compactions on two models, see docs/strategies/codex.md):

- ``0.145`` (cli 0.145.0 and later, the page says when newer than checked): the 0.140 rules
  with a lower limit (83 % of the window) and its own reasoning factor, inferred from real
  rollouts (see ``V0_145``), and the sub-agents' ``agent_message`` items in the context.
- ``0.140`` (cli 0.140.0 - 0.144.x; checked on 0.140.0 - 0.142.5):
  * count: ``ContextManager::get_total_token_usage(server_reasoning_included = false)``
    (``codex-rs/core/src/context_manager/history.rs``, stored version a20bf059): the last
    response's ``last_token_usage.total_tokens`` + the estimate of the items recorded after
    the last model-generated item (tool outputs; JSON bytes / 4, an image 7 373 bytes:
    ``estimate_item_token_count``) + the estimate of the encrypted reasoning items before the
    last user message (``get_non_last_reasoning_items_tokens``: (base64 length x 3/4 - 650)
    / 4).
  * limit: ``ModelInfo::auto_compact_token_limit`` (``codex-rs/protocol/src/openai_models.rs``,
    stored version 8db07003): 90% of the model's context window; a configured
    ``model_auto_compact_token_limit`` can only lower it. Rollouts report
    ``model_context_window`` as the *effective* window (95%: 258 400 for gpt-5.5's 272 000,
    121 600 for gpt-5.3-codex-spark's 128 000).
  * check points (``session/turn.rs``): before a turn's first request, before its user
    message is recorded (``run_pre_sampling_compact``), and after a sampling that needs a
    follow-up (tool outputs), ``token_limit_reached && needs_follow_up`` (mid-turn). A
    request that starts no follow-up and no turn is not checked.
  * compaction: remote (``/responses/compact``); the ``compacted`` line holds
    ``message: ""`` and a ``replacement_history`` of the earlier user messages, the
    re-injected developer / AGENTS.md messages and one encrypted ``compaction`` item. No
    readable summary exists.
  An older rollout (before 0.140) whose compactions already carry a replacement history
  (remote compaction) runs these rules too, and its events say so (the strategy decides).
- ``0.118`` (cli 0.118.0 up to 0.140; compactions checked on 0.118.0 only, entireio/git-sync
  ``entire/checkpoints/v1``; 0.120-0.139 rollouts there hold none): the 0.140 trigger — the
  same ``get_total_token_usage`` (the reasoning boundary is the last ``role == "user"``
  message, which includes the ``<subagent_notification>`` messages a collab turn records),
  the same 90 % limit of the window the rollout reports / 0.95, the same check points — and
  the same remote compaction (``message: ""``; 0.118's replacement history keeps the
  earlier user *and* assistant messages and the re-injected developer/environment
  messages; Entire's copy holds no encrypted item). What differs is the item a tool output
  serializes to: no ``internal_chat_message_metadata_passthrough``, so 54 bytes of framing
  instead of 150.
- ``legacy`` (before 0.118, and rollouts without ``cli_version``): ``compact.rs`` at
  0100b103625752f6a10c21b79a8c423761dc4c6a as the strategy docstring says (checked before
  every request on the reported total minus reasoning; local summary with SUMMARY_PREFIX).
  Its version range is not pinned to a tag.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# estimate_reasoning_length / estimate_item_token_count (history.rs)
REASONING_BASE64_OVERHEAD_BYTES = 650
RESIZED_IMAGE_BYTES_ESTIMATE = 7_373
# ModelInfo::effective_context_window_percent default: the window a rollout reports.
EFFECTIVE_CONTEXT_WINDOW_PERCENT = 95
AUTO_COMPACT_PERCENT = 90
DEFAULT_CONTEXT_WINDOW = 272_000  # gpt-5 / gpt-5.x family


@dataclass(frozen=True, slots=True)
class VersionRules:
    """How one range of Codex versions triggers and compacts (see module docstring)."""

    name: str
    first: tuple[int, ...]  # first cli_version the rules hold for
    count: str  # "reported_minus_reasoning" | "total_plus_estimates"
    checks: str  # "every_request" | "pre_turn_and_follow_up"
    compaction: str  # "local_summary" | "remote_encrypted"
    source: str
    # serialized framing of a tool output beside its text and call id (estimate_item_token_count
    # serializes the whole item): 0.14x adds internal_chat_message_metadata_passthrough {turn_id}
    item_framing_bytes: int = 0
    # the auto-compact limit as a percentage of the model's window (auto_compact_token_limit)
    auto_compact_percent: int = 90
    # tokens of a reply's redacted encrypted reasoning per reported reasoning token (the
    # reasoning_estimate_factor parameter at its default takes this)
    reasoning_factor: float = 1.25


LEGACY = VersionRules(
    "legacy",
    (0,),
    "reported_minus_reasoning",
    "every_request",
    "local_summary",
    "openai/codex codex-rs/core/src/compact.rs @ 0100b103625752f6a10c21b79a8c423761dc4c6a",
)
V0_140 = VersionRules(
    "0.140",
    (0, 140, 0),
    "total_plus_estimates",
    "pre_turn_and_follow_up",
    "remote_encrypted",
    "openai/codex codex-rs/core/src/context_manager/history.rs (stored a20bf059: "
    "get_total_token_usage, get_non_last_reasoning_items_tokens), "
    "codex-rs/protocol/src/openai_models.rs (stored 8db07003: auto_compact_token_limit), "
    "session/turn.rs check points; checked on cli 0.140.0-0.142.5 rollouts",
    item_framing_bytes=150,  # type, call_id, output keys + the 0.14x passthrough {turn_id}
)
# The same trigger as 0.140 (count, limit, check points), before the 0.14x item metadata: a
# tool output serializes as {"type":"function_call_output","call_id":…,"output":…} (54
# bytes of framing; custom_tool_call_output 57), as the 0.118 rollouts write their items.
V0_118 = VersionRules(
    "0.118",
    (0, 118, 0),
    "total_plus_estimates",
    "pre_turn_and_follow_up",
    "remote_encrypted",
    "openai/codex codex-rs/core/src/context_manager/history.rs (stored versions without a "
    "commit id: get_total_token_usage(server_reasoning_included) = last_token_usage."
    "total_tokens + items_after_last_model_generated_item + get_non_last_reasoning_items_"
    "tokens, estimate_reasoning_length = len x 3/4 - 650; the reasoning bounded by the last "
    'is_user_turn_boundary, not by any role == "user" message as an older stored version '
    "has it: the 0.118 rollouts side with the former), codex-rs/core/src/session_prefix.rs "
    "(stored 3180a39b: <subagent_notification>, <turn_aborted> are no turn boundary), the "
    "run_turn check points (run_pre_sampling_compact; token_limit_reached && "
    "needs_follow_up) and ModelInfo::auto_compact_token_limit (90% of context_window); "
    "checked on cli 0.118.0 rollouts (entireio/git-sync), 0.120-0.139 seen without "
    "compactions",
    item_framing_bytes=54,
)
# Codex 0.145 (multi-agent "collaboration" rollouts, gpt-5.6-sol): the 0.140 count and check
# points, with the sub-agents' agent_message items in the context (the next request's reported
# input grows by them), and a lower limit than 90 %. Its source could not be read (the
# openai/codex snapshot is over the fetch limit; no stored file of the 0.145 tag), so the
# limit is what the real rollouts prove (entireio/entire-sem entire/checkpoints/v1, cli
# 0.145.0-alpha.18, two distinct auto compactions): the first fired on a count of 226 719
# (225 254 reported + the tool output after it; no reasoning before the turn's only user
# message) after a check at 224 271 did not; 83 % of the 272 000 window (225 760) is the
# round percentage inside (224 271, 226 719]. The second (a count moved by the reasoning of
# three earlier turns, redacted) then holds only for 1.42-1.46 reasoning tokens per reported
# reasoning token (gpt-5.5 on 0.140-0.142: 1.22-1.28): 1.44. Three 0.145.0-alpha.30 rollouts
# peak at 213 473 without compacting, consistent with it. Two compactions are thin: the
# table says so, and a pinned rule set or parameter overrides both numbers.
V0_145 = VersionRules(
    "0.145",
    (0, 145, 0),
    "total_plus_estimates",
    "pre_turn_and_follow_up",
    "remote_encrypted",
    "inferred from real cli 0.145.0-alpha.18 rollouts (entireio/entire-sem, 2 auto "
    "compactions, gpt-5.6-sol): the 0.140 count with agent_message items in context, limit "
    "83% of the window (225 760 of 272 000), 1.44 reasoning tokens per reported reasoning "
    "token; the 0.145 source was not available",
    item_framing_bytes=150,
    auto_compact_percent=83,
    reasoning_factor=1.44,
)
TABLE: tuple[VersionRules, ...] = (V0_145, V0_140, V0_118, LEGACY)  # newest first
BY_NAME = {r.name: r for r in TABLE}
NEWEST_SEEN = (0, 145, 0)


def parse_version(text: str) -> tuple[int, ...] | None:
    """``"0.142.5"`` -> (0, 142, 5); suffixes (``-alpha.3``) are ignored; None if no number."""
    match = re.match(r"\s*v?(\d+(?:\.\d+)*)", text or "")
    if not match:
        return None
    return tuple(int(part) for part in match.group(1).split("."))


def rules_for(version: str) -> tuple[VersionRules, str]:
    """The rules for a cli_version (or a rule-set name), and why they were chosen."""
    if version in BY_NAME:
        return BY_NAME[version], f"pinned to the {version} rules"
    parsed = parse_version(version)
    if parsed is None:
        return LEGACY, "no cli_version: the legacy rules"
    for rules in TABLE:
        if parsed >= rules.first:
            why = f"cli_version {version}"
            if rules is V0_145 and parsed[:3] > NEWEST_SEEN:
                why += " is newer than the newest checked (0.145.0): its rules are assumed"
            elif rules is V0_140 and parsed > (0, 142, 5):
                why += " is newer than the newest 0.140-rules version checked (0.142.5)"
            return rules, why
    return LEGACY, f"cli_version {version}"


def context_window_from_reported(model_context_window: int) -> int:
    """Rollouts report the effective window (95%): the model's window it came from."""
    return round(model_context_window * 100 / EFFECTIVE_CONTEXT_WINDOW_PERCENT)


def auto_compact_limit(
    context_window: int, configured: int = 0, percent: int = AUTO_COMPACT_PERCENT
) -> int:
    """90% of the window (0.145: 83%); a configured limit (> 0) can only lower it."""
    limit = context_window * percent // 100
    return min(configured, limit) if configured > 0 else limit


def reasoning_estimate(encrypted_len: int) -> int:
    """``estimate_reasoning_length`` then bytes / 4 (ceil): a reasoning item's tokens."""
    decoded = max(0, encrypted_len * 3 // 4 - REASONING_BASE64_OVERHEAD_BYTES)
    return -(-decoded // 4)


def describe_table() -> list[dict[str, object]]:
    """The table as plain data, for pages and docs."""
    return [
        {
            "rules": r.name,
            "first": ".".join(map(str, r.first)) if r.first != (0,) else "",
            "count": r.count,
            "checks": r.checks,
            "compaction": r.compaction,
            "limit_percent": r.auto_compact_percent,
            "source": r.source,
        }
        for r in TABLE
    ]
