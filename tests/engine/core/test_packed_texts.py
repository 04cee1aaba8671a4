"""A replay's offloaded files (``ReplayResult.offloads``): long texts kept compressed, read
back as they were written, and compared, copied and pickled as the dict they stand for."""

from __future__ import annotations

import copy
import pickle

from ctxlab.engine.core.packed import PACK_CHARS, PackedTexts
from ctxlab.engine.core.records import ReplayResult

LONG = "## Summarized at step 9\n<message role='tool'>é \ud800 ✓</message>\n" * 400


def test_long_texts_are_packed_and_read_back_whole() -> None:
    texts = PackedTexts()
    texts["/history.md#section-1"] = LONG
    texts["short.txt"] = "kept as given"
    assert len(LONG) >= PACK_CHARS
    assert isinstance(texts._packed["/history.md#section-1"], bytes)  # compressed
    assert len(texts._packed["/history.md#section-1"]) < len(LONG) // 10
    assert texts._packed["short.txt"] == "kept as given"
    assert texts["/history.md#section-1"] == LONG  # a lone surrogate too
    assert list(texts) == ["/history.md#section-1", "short.txt"] and len(texts) == 2
    assert "short.txt" in texts and texts.get("missing") is None


def test_they_compare_copy_and_pickle_as_the_dict_they_stand_for() -> None:
    texts = PackedTexts([("a", LONG), ("b", "x")])
    as_dict = {"a": LONG, "b": "x"}
    assert texts == as_dict and as_dict.__eq__(texts) is NotImplemented  # (then ours)
    assert dict.__eq__(as_dict, dict(texts))
    assert texts != {"a": LONG}
    assert pickle.loads(pickle.dumps(texts)) == texts
    assert copy.deepcopy(texts) == texts and dict(texts) == {"a": LONG, "b": "x"}
    del texts["b"]
    assert dict(texts) == {"a": LONG}


def test_a_replay_result_keeps_its_offloads_packed() -> None:
    result = ReplayResult(strategy="s", params={}, estimator="e", summarizer="m", message_count=0)
    assert isinstance(result.offloads, PackedTexts) and result.offloads == {}
