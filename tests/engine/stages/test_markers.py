from __future__ import annotations

import pytest

from ctxlab.engine.stages.markers import (
    middle_out_truncate,
    qwenpaw_retruncate,
    qwenpaw_truncate_fresh,
    reme_truncate_text,
)

NOTICE = (
    "<<<TRUNCATED>>>\nThe output above was truncated."
    "\nThe full content is saved to the file and contains {total} lines in total."
    "\nThis excerpt starts at line {start} and covers the next {n} bytes."
    "\nIf the current content is not enough, call `read_file` with file_path={path} "
    "start_line={line} to read more."
)


def test_qwenpaw_truncate_fresh_within_limit_unchanged() -> None:
    assert (
        qwenpaw_truncate_fresh("abc", max_bytes=3, start_line=1, total_lines=1, path="p") == "abc"
    )


def test_qwenpaw_truncate_fresh_notice_byte_exact() -> None:
    text = "a\nb\nc\nd\ne\n"
    out = qwenpaw_truncate_fresh(text, max_bytes=4, start_line=1, total_lines=6, path="/w/x.txt")
    assert out == "a\nb\n" + NOTICE.format(total=6, start=1, n=4, path="/w/x.txt", line=3)


def test_qwenpaw_truncate_fresh_single_line_has_no_notice() -> None:
    out = qwenpaw_truncate_fresh("x" * 50, max_bytes=10, start_line=1, total_lines=1, path="p")
    assert out == "x" * 10


def test_qwenpaw_truncate_fresh_drops_split_multibyte_char() -> None:
    text = "é" * 10 + "\nz"  # 2 bytes each
    out = qwenpaw_truncate_fresh(text, max_bytes=5, start_line=1, total_lines=2, path="")
    assert out.startswith("éé<<<TRUNCATED>>>")
    assert "file_path= start_line=2" in out


def test_qwenpaw_retruncate_rewrites_bytes_and_line() -> None:
    body = "\n".join(f"l{i}" for i in range(3000))
    first = qwenpaw_truncate_fresh(body, max_bytes=5000, start_line=1, total_lines=3000, path="f")
    again = qwenpaw_retruncate(first, max_bytes=100)
    head, _, notice = again.partition("<<<TRUNCATED>>>")
    assert len(head.encode()) == 100
    assert "covers the next 100 bytes" in notice
    assert f"start_line={1 + head.count(chr(10))} to read more" in notice
    assert "file_path=f" in notice


@pytest.mark.parametrize(
    ("extra", "changed"), [(100, False), (101, True)], ids=["within-slack", "over-slack"]
)
def test_qwenpaw_retruncate_slack(extra: int, changed: bool) -> None:
    text = "y" * (1000 + extra) + NOTICE.format(total=9, start=1, n=5, path="p", line=2)
    assert (qwenpaw_retruncate(text, max_bytes=1000) != text) is changed


def test_qwenpaw_retruncate_unparseable_notice_unchanged() -> None:
    text = "z" * 5000 + "<<<TRUNCATED>>> something else"
    assert qwenpaw_retruncate(text, max_bytes=10) == text


def test_reme_truncate_text_head_tail_chars() -> None:
    out = reme_truncate_text("a" * 10 + "b" * 10, 10)
    assert out == "aaaaa\n\n<<<TRUNCATED>>> (10 characters omitted) <<<END_TRUNCATED>>>\n\nbbbbb"


def test_middle_out_truncate_marker() -> None:
    out = middle_out_truncate("x" * 100, max_tokens=5)
    assert out == "x" * 10 + "\n\n...20 tokens truncated...\n\n" + "x" * 10
    assert middle_out_truncate("x" * 20, max_tokens=5) == "x" * 20
