from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxlab.engine.evaluate.extract import facts, facts_of_parts

ALPHABET = st.sampled_from(
    list("ab_Z0129./:-~@+ \n\t()<>\"'`]") + ["http://x.y/", "Error", "failed", "src/a.py", "错误"]
)


@pytest.mark.parametrize(
    ("parts", "limit"),
    [
        pytest.param([], None, id="empty"),
        pytest.param(["see /usr/lib/x", "123 foo_bar"], None, id="two"),
        pytest.param(["a/b.py", "a/b.py", "c.py 1.2.3"], 1, id="limit-dedup"),
        pytest.param(["x Error here", "", "https://e.com/a)b"], 6, id="errors-urls"),
        pytest.param(["ends with /a/b", "/c/d at start"], None, id="edges"),
    ],
)
def test_facts_of_parts_table(parts: list[str], limit: int | None) -> None:
    assert facts_of_parts(parts, limit=limit) == facts("\n".join(parts), limit=limit)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.lists(ALPHABET, max_size=30).map("".join), max_size=6),
    st.one_of(st.none(), st.integers(min_value=0, max_value=4)),
)
def test_facts_of_parts_equals_joined(parts: list[str], limit: int | None) -> None:
    assert facts_of_parts(parts, limit=limit) == facts("\n".join(parts), limit=limit)
