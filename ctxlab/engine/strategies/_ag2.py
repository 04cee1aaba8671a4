"""AG2 ``TransformMessages`` (``MessageHistoryLimiter``, ``MessageTokenLimiter``), ported.

ag2ai/ag2 @ 70badeefcefcefca9a52b5f43636a616a7952fee,
``autogen/agentchat/contrib/capabilities/transforms.py`` (both transforms) and
``transforms_util.py`` @ 1b756e7a3c62d0ecdb9fa3e4fd0351fbe5fc23e2 (``count_text_tokens``,
``min_tokens_reached``, ``is_content_right_type``);
``autogen/agentchat/conversable_agent.py`` ``_generate_oai_reply_from_client`` (a stored
``tool`` message's ``tool_responses`` are unrolled into the request, its ``content`` is not
sent).

Where it runs: ``TransformMessages(transforms=[...]).add_to_agent(agent)`` registers
``process_all_messages_before_reply``: before every reply the agent's stored messages to
that sender (the system message is added later, never transformed) are deep-copied and
transformed; the stored history keeps everything. So each strategy here is a request view
recomputed from the whole history before every call. Both transforms only ever move the
kept window forward as messages arrive, so a message once left out stays out.

One AG2 message per transcript message (``_chat_history.whole``): a batch of tool results
is one ``tool`` message (``tool_responses``, its content their texts joined by blank lines).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.records import Fate

if TYPE_CHECKING:
    from ..core.context_view import ContextView


def history_limiter_kept(
    roles: list[str], max_messages: int | None, keep_first_message: bool = False
) -> list[int]:
    """``MessageHistoryLimiter.apply_transform``'s kept positions (in the order it returns
    them). The last slot skips a ``tool`` message (it still uses the slot), the loop never
    reaches position 0 unless ``keep_first_message``, and the last message it keeps is
    inserted at position 1, not 0 (the original's order; the request shows source order)."""
    n = len(roles)
    if max_messages is None or n <= max_messages:
        return list(range(n))
    out: list[int] = []
    remaining = max_messages
    if keep_first_message and n:
        out = [0]
        remaining -= 1
    for i in range(n - 1, 0, -1):
        if remaining > 1:
            out.insert(1 if keep_first_message else 0, i)
        if remaining == 1 and roles[i] != "tool":
            out.insert(1, i)
        remaining -= 1
        if remaining == 0:
            break
    return out


def apply_view(
    ctx: ContextView,
    view: dict[int, Any],
    desired: dict[int, Any],
    changed: list[int],
    kind: str,
    reason: str,
    detail: dict[str, Any],
) -> None:
    """Apply the request-view changes of ``changed`` sources: ``desired[i]`` is None
    (left out), a message (shown in part) or absent (shown whole). Views only narrow here."""
    if not changed:
        return
    dropped = [i for i in changed if i in desired and desired[i] is None]
    partial = [i for i in changed if desired.get(i) is not None]
    back = [i for i in changed if i not in desired and i in view]
    with ctx.action(kind, reason=reason, **detail) as act:
        if dropped:
            act.remove(dropped, Fate.DROPPED)
        for i in partial:
            act.replace(i, desired[i], Fate.PRUNED)
        for i in back:
            act.replace(i, ctx.original(i), Fate.RESTORED)
    for i in changed:
        if i in desired:
            view[i] = desired[i]
        else:
            view.pop(i, None)
