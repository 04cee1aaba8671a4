"""Per-summary reuse in the offline summariser: what a person typed in an item is read once
per summary (the goal, constraints and next step walk the same items), and the call marks
are looked for only in a text holding one of their common parts."""

from __future__ import annotations

from ctxlab.engine.core.model import Block, BlockKind, Conversation, Message, Role
from ctxlab.engine.core.summary_request import MaterialItem, Section, SummaryRequest
from ctxlab.engine.summarize import offline


def test_every_call_mark_holds_one_of_the_mark_heads() -> None:
    for mark in offline._CALL_MARKS:
        assert offline._may_hold_call_mark(mark), mark
    assert not offline._may_hold_call_mark("no marks: [Tool] <tol_use> function_call")


def _conversation() -> Conversation:
    def msg(role: Role, text: str) -> Message:
        return Message(role=role, blocks=(Block(kind=BlockKind.TEXT, text=text),))

    messages = (
        msg(Role.USER, "Add a dark mode toggle. You must keep the old colours."),
        msg(Role.ASSISTANT, "I decided to use CSS variables because they cascade."),
        msg(Role.USER, "Please never touch the migrations."),
        msg(Role.ASSISTANT, "Created src/theme.css"),
        msg(Role.USER, "Now add a test for it."),
    )
    return Conversation(id="c", title="t", messages=messages)


def test_each_item_person_text_is_read_once_per_summary(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    conversation = _conversation()
    material = tuple(
        MaterialItem(role=m.role.value, text=m.text, index=i)
        for i, m in enumerate(conversation.messages)
    )
    request = SummaryRequest(
        strategy="t",
        system="",
        messages=(),
        sections=(
            Section("## Goal", "goal"),
            Section("## Constraints", "constraints"),
            Section("## Next", "next"),
        ),
        material=material,
        conversation=conversation,
    )
    read: list[int] = []
    real = offline._person_text

    def counting(item: MaterialItem, conv: Conversation | None = None) -> str:
        read.append(item.index)
        return real(item, conv)

    monkeypatch.setattr(offline, "_person_text", counting)
    text = offline.OfflineSummarizer().summarize(request).text
    assert "Add a dark mode toggle." in text  # the goal
    assert "Please never touch the migrations." in text  # a constraint
    assert "Now add a test for it." in text  # the next step
    assert sorted(read) == sorted(set(read)), read  # no item read twice


def test_call_marks_are_found_where_a_scan_per_mark_finds_them() -> None:
    assert set(offline._TOOL_MARKS) | set(offline._FUNCTION_MARKS) == set(offline._CALL_MARKS)
    head = (
        "tool [tool_use] <tool_use>x [tool call y] [function_call z] [functionCall w]"
        "\n[Bot tool calls]: f() tool_ [tool_result a] [function toolbox"
    )
    expected = sorted(
        at for mark in offline._CALL_MARKS for at in range(len(head)) if head.startswith(mark, at)
    )
    assert sorted(offline._call_marks(head)) == expected
    assert len(expected) >= 6


def test_speakers_sort_items_by_their_source_role_else_their_own() -> None:
    conversation = _conversation()
    tool = Message(role=Role.TOOL, blocks=(Block(kind=BlockKind.TEXT, text="out"),))
    conversation = Conversation(id="c", title="t", messages=(*conversation.messages, tool))
    items = (
        MaterialItem(role="user", text="rendered as user, said by the assistant", index=1),
        MaterialItem(role="assistant", text="rendered as assistant, typed", index=0),
        MaterialItem(role="user", text="a tool output shown as user", index=5),
        MaterialItem(role="user", text="no source: its own role", index=-1),
        MaterialItem(role="assistant", text="past the end: its own role", index=99),
        MaterialItem(role="system", text="neither", index=-1),
    )
    # the rule every walk read per item before: the source's role, else the item's
    for conv in (conversation, None):
        users, said = offline._speakers(items, conv)
        by_rule = [
            (s.role if (s := offline._source(m, conv)) is not None else m.role) for m in items
        ]
        assert users == [m for m, r in zip(items, by_rule, strict=True) if r in (Role.USER, "user")]
        assert said == [
            m for m, r in zip(items, by_rule, strict=True) if r in (Role.ASSISTANT, "assistant")
        ]
    users, said = offline._speakers(items, conversation)
    assert [m.index for m in users] == [0, -1] and [m.index for m in said] == [1, 99]
    users, said = offline._speakers(items, None)
    assert [m.index for m in users] == [1, 5, -1] and [m.index for m in said] == [0, 99]
