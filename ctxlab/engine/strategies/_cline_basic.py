"""Cline's rule-based compaction (``runBasicCompaction``), a pure function.

Ported from cline/cline @ 21cb8d25 ``sdk/packages/core/src/extensions/context/
basic-compaction.ts``: typed user prompts always survive (trimmed; attachments only on the
latest); the latest turn keeps its newest messages that fit the target, the kept suffix
snapped forward to an assistant message; each older turn keeps its concluding assistant
answer (no tool call, thinking dropped) when it fits, newest turns first; earlier
compactions' survivors are frozen; everything else is dropped and re-surfaced as a
``<SYSTEM_NOTICE>`` of its tool activity (files read, files edited, commands, and the
conversation's last three assistant texts when they were dropped) on the prompt before it.

Quirk kept: the notices (with the last assistant texts they carry) are added after the
budget, so a fold can end over its target.

Reading (the lab keeps one message per source message): where the original merges a run of
adjacent typed prompts into one message with the notices between them, each prompt stays
its own message and the notice for the gap after it is appended to it: the same blocks in
the same order, without the merged message's single wrapper. Not modelled: the budget
projection safety valve (it trims only when the estimator drifted past the trigger) and
the usage metadata the fold records.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from . import _cline_rules as r


def _sanitize_typed(message: r.Msg) -> r.Msg | None:
    content = message.get("content")
    if isinstance(content, str):
        return {**message, "content": content.strip()} if content.strip() else None
    kept = [b for b in content or [] if b.get("type") != "text" or str(b.get("text", "")).strip()]
    if not kept:
        return None
    return {
        **message,
        "content": [
            {**b, "text": b["text"].strip()} if b.get("type") == "text" else b for b in kept
        ],
    }


def _user_blocks(message: r.Msg, keep_attachments: bool) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content.strip() else []
    if keep_attachments:
        return list(content or [])
    return [b for b in content or [] if b.get("type") not in ("file", "image")]


def _assistant_text(message: r.Msg) -> str | None:
    if message.get("role") != "assistant":
        return None
    content = message.get("content")
    if isinstance(content, str):
        return content.strip() or None
    text = "\n".join(
        t
        for b in content or []
        if b.get("type") == "text" and (t := str(b.get("text", "")).strip())
    )
    return text or None


def _older_final(message: r.Msg) -> r.Msg | None:
    content = message.get("content")
    if isinstance(content, str):
        return message if content.strip() else None
    kept = [b for b in content or [] if b.get("type") not in ("thinking", "redacted_thinking")]
    if not any(b.get("type") == "text" and str(b.get("text", "")).strip() for b in kept):
        return None
    return {**message, "content": kept}


def _has_tool_use(message: r.Msg) -> bool:
    return any(b.get("type") == "tool_use" for b in r.blocks(message))


def basic_compaction(
    messages: Sequence[r.Msg],
    target_tokens: int,
    trigger_tokens: int,
    estimate: r.Estimate,
    aliases: Mapping[str, str] | None = None,
) -> list[tuple[int, r.Msg]] | None:
    """The compacted transcript as (position in ``messages``, new message) pairs; None
    when nothing changes (or nothing can be folded around)."""
    if len(messages) < 2:
        return None
    target = max(1, min(target_tokens, trigger_tokens))
    typed = [i for i, m in enumerate(messages) if r.is_turn_start(m)]
    sanitized = {i: s for i in typed if (s := _sanitize_typed(messages[i])) is not None}
    if not sanitized:
        return None
    latest = typed[-1]
    total = sum(
        estimate({**s, "content": _user_blocks(s, i == latest)}) for i, s in sanitized.items()
    )
    frozen = {i for i, m in enumerate(messages) if i not in sanitized and r.is_preserved(m)}
    total += sum(estimate(messages[i]) for i in frozen)

    # The latest turn: its newest messages that fit, the suffix starting at an assistant.
    start = len(messages)
    accumulated = 0
    for index in range(len(messages) - 1, latest, -1):
        if index in frozen:
            break
        cost = estimate(messages[index])
        if total + accumulated + cost > target:
            break
        accumulated += cost
        start = index
    while start < len(messages) and messages[start].get("role") != "assistant":
        start += 1
    extra = set(range(start, len(messages)))
    total += sum(estimate(messages[i]) for i in extra)

    # Older turns: the concluding answer when it fits, newest turns first.
    finals: dict[int, r.Msg] = {}
    for block in range(len(typed) - 2, -1, -1):
        for index in range(typed[block + 1] - 1, typed[block], -1):
            candidate = messages[index]
            if index in frozen:
                break
            if candidate.get("role") != "assistant" or _has_tool_use(candidate):
                continue
            preserved = _older_final(candidate)
            if preserved is not None:
                cost = estimate(preserved)
                if total + cost <= target:
                    finals[index] = preserved
                    total += cost
            break

    kept: list[tuple[int, r.Msg]] = []
    for index, message in enumerate(messages):
        if index in sanitized:
            kept.append((index, sanitized[index]))
        elif index in frozen or index in extra:
            kept.append((index, message))
        elif index in finals:
            kept.append((index, finals[index]))

    out = _with_notices(kept, messages, latest, aliases or {})
    if [m for _, m in out] == list(messages):
        return None
    # Survivors that are not typed prompts are frozen for the next compaction.
    return [
        (i, m if r.is_turn_start(m) or r.is_preserved(m)
         else {**m, "metadata": {**(m.get("metadata") or {}), "compaction": r.PRESERVED}})
        for i, m in out
    ]  # fmt: skip


def _with_notices(
    kept: list[tuple[int, r.Msg]],
    originals: Sequence[r.Msg],
    latest: int,
    aliases: Mapping[str, str],
) -> list[tuple[int, r.Msg]]:
    """``mergeAdjacentUserTurns`` (per message, see the module docstring)."""
    preserved_text: set[int] = set()
    for scan in range(len(originals) - 1, -1, -1):
        if len(preserved_text) >= r.PRESERVED_ASSISTANT_TEXT_COUNT:
            break
        if _assistant_text(originals[scan]):
            preserved_text.add(scan)
    out: list[tuple[int, r.Msg]] = []
    for k, (index, message) in enumerate(kept):
        if not r.is_turn_start(message):
            out.append((index, message))
            continue
        content = _user_blocks(message, index == latest)
        gap_end = kept[k + 1][0] if k + 1 < len(kept) else len(originals)
        if gap_end > index + 1:
            span = originals[index + 1 : gap_end]
            activity = r.summarize_tool_activity(span, aliases)
            responses = [
                t
                for p in range(index + 1, gap_end)
                if p in preserved_text and (t := _assistant_text(originals[p]))
            ]
            if any(activity) or responses:
                content = [*content, r.notice_block(activity, responses)]
        raw = message.get("content")
        as_blocks = [{"type": "text", "text": raw}] if isinstance(raw, str) else raw
        if content != as_blocks:  # a string prompt stays a string unless a notice joins it
            message = {**message, "content": content}
        out.append((index, message))
    return out
