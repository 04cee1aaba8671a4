"""A summary call's input made again when read, from what the strategy made it of.

``SummaryRecord.input`` may be a function rendering the text (``records._RenderedWhenRead``);
``ReplayContext.summarize`` keeps the request's parts, the long ones zlib-compressed
(``summary_input.PackedInput``). QwenPaw's and CoPaw's compactor prompt (the compacted
messages formatted into one user message) and BaseAgent's compaction call (every live row)
are made from message versions the replay keeps anyway (originals, or the modified
versions the context holds): a ``RemadeInput`` keeps those references and the few other
values, and renders the same text on each read. Compressing those prompts was ~10% of
QwenPaw's and CoPaw's replays on the realistic 20k transcript; this costs nothing until
read (the worker reads each input once, to store it).

The render function and its arguments must make the text from values that do not change
afterwards (frozen messages, strings, a dict copied for the call). Pickled, the input is
its text (a plain ``str``): the references do not travel.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class RemadeInput:
    """``render(*args)``, called at each read; pickled as the text it renders."""

    __slots__ = ("_args", "_render")

    def __init__(self, render: Callable[..., str], *args: Any) -> None:
        self._render = render
        self._args = args

    def __call__(self) -> str:
        return self._render(*self._args)

    def __reduce__(self) -> tuple[type[str], tuple[str]]:
        return str, (self(),)
