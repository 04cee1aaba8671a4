"""A stored transcript that grows: the channel-layer event its live page listens to.

The contract (read by the transcript's live page, ``sessions_app/consumers.py``): after
every refresh that added messages to transcript ``pk``, the group ``transcript-<pk>``
receives ``{"type": "transcript.grown", "messages": <the transcript's total message count>}``.
"""

from __future__ import annotations

import logging
from typing import TypedDict

log = logging.getLogger(__name__)

GROWN = "transcript.grown"


class GrownMessage(TypedDict):
    type: str  # always GROWN
    messages: int  # the transcript's total message count after the growth


def transcript_group_name(transcript_id: int) -> str:
    """The channel-layer group of one transcript's growth events."""
    return f"transcript-{transcript_id}"


def send_grown(transcript_id: int, messages: int) -> bool:
    """Tell the transcript's group it now holds ``messages`` messages; best effort (a
    broken channel layer must not undo an import): False when nothing was sent."""
    from asgiref.sync import async_to_sync
    from channels.layers import get_channel_layer

    layer = get_channel_layer()  # opened lazily, never at import
    if layer is None:
        return False
    message: GrownMessage = {"type": GROWN, "messages": messages}
    try:
        async_to_sync(layer.group_send)(transcript_group_name(transcript_id), dict(message))
    except Exception:
        log.warning("growth of transcript %s not announced", transcript_id, exc_info=True)
        return False
    return True
