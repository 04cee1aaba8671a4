"""OpenHands V1 (software-agent-sdk) events: a real log (tests/data/openhands-v1, MIT) and a
conversation folder of every event kind the SDK writes, Condensation included; before this
importer such logs were "no OpenHands events found"."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command

from ctxlab.engine import importers
from ctxlab.engine.core.model import Conversation, Role, TranscriptError
from ctxlab.engine.importers import openhands_v1
from ctxlab.engine.sources import openhands

DATA = Path(__file__).parents[2] / "data"
REAL = DATA / "openhands-v1" / "pr-review.events.jsonl"
FOLDER = DATA / "openhands-v1" / "conversations"


def _folder_bytes() -> tuple[str, bytes]:
    (conv,) = openhands.conversations(FOLDER)
    return conv.name, conv.read()


def test_detect_picks_v1_for_the_real_log_and_the_folder() -> None:
    assert importers.detect(REAL.read_bytes(), "events.jsonl") == "openhands-v1"
    name, data = _folder_bytes()
    assert importers.detect(data, name) == "openhands-v1"


def test_no_other_data_file_is_taken_for_v1() -> None:
    files = [p for p in DATA.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl")]
    files = [p for p in files if "openhands-v1" not in p.parts]
    assert len(files) > 20
    claimed = [p.name for p in files if openhands_v1.sniff(p.read_bytes()[:65536], p.name) >= 50]
    assert claimed == []


def test_the_real_log_every_call_and_result() -> None:
    parsed = importers.parse(REAL.read_bytes(), name="events.jsonl")
    (conv,) = parsed.conversations
    assert [m.role for m in conv.messages] == [
        Role.ASSISTANT, Role.TOOL, Role.TOOL, Role.ASSISTANT, Role.TOOL,
    ]  # fmt: skip
    assert conv.tool_call_count == 2 and conv.tool_result_count == 3
    first = conv.messages[0].tool_uses[0]
    assert (first.tool_id, first.tool_name) == ("chatcmpl-tool-9d0341c7a033ae28", "terminal")
    assert first.tool_input["summary"] == "Build session URL from environment"
    result = conv.messages[1].blocks[0]
    assert result.is_error and result.text.startswith("[An error occurred during execution.]\n")
    # the fixture is a slice: one observation answers an action not in it
    assert [w.code for w in parsed.warnings] == ["tool-result-unknown-id"]
    assert conv.model == "litellm_proxy/minimax-m2.7"


def test_the_folder_every_kind_and_the_condensation() -> None:
    name, data = _folder_bytes()
    parsed = importers.parse(data, name=name)
    assert parsed.warnings == ()
    (conv,) = parsed.conversations
    assert conv.id == "c0ffee00-0000-4000-8000-000000000001"
    assert conv.title == "The test in test_calc.py fails. Fix calc.py."
    assert [t.name for t in conv.tools] == ["terminal", "file_editor"]
    roles = [m.role for m in conv.messages]
    assert roles == [Role.SYSTEM, Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT, Role.TOOL,
                     Role.TOOL, Role.USER, Role.ASSISTANT, Role.TOOL, Role.USER, Role.ASSISTANT,
                     Role.TOOL, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT]  # fmt: skip
    assert "<REPOSITORY_INFO>" in conv.messages[1].text  # extended_content follows the message
    parallel = conv.messages[4]
    assert [b.tool_id for b in parallel.tool_uses] == ["call_2", "call_3"]
    assert conv.tool_call_count == 6 and conv.tool_result_count == 6
    error = conv.messages[6].blocks[0]
    assert error.is_error and error.tool_id == "call_3"
    assert conv.messages[9].blocks[0].text == "Action rejected: User rejected the action."
    (condensation,) = conv.compactions
    assert condensation.kind == "condensation" and condensation.summary_index == 7
    summary = conv.messages[7]
    assert summary.text.startswith("USER_CONTEXT: fix calc.py")
    assert {"compact_summary", "meta"} <= summary.flags
    detail = dict(condensation.detail)
    assert detail == {
        "forgotten_events": "6",
        "forgotten_messages": "2-6",
        "summary_offset": "2",
        "requested": "CondensationRequest",
    }
    assert conv.model == "litellm_proxy/claude-sonnet-4-5"


def test_eval_output_lines_with_a_v1_history_are_one_conversation_each() -> None:
    _, data = _folder_bytes()
    events = [json.loads(line) for line in data.splitlines()]
    lines = [json.dumps({"instance_id": f"calc__{i}", "history": events}) for i in (1, 2)]
    parsed = importers.parse("\n".join(lines).encode(), name="output.jsonl")
    assert parsed.format == "openhands-v1"
    assert [c.id for c in parsed.conversations] == ["calc__1", "calc__2"]
    assert all(c.tool_call_count == 6 for c in parsed.conversations)


def test_a_file_without_v1_events_is_refused() -> None:
    with pytest.raises(TranscriptError, match="no OpenHands V1 events"):
        importers.parse(b'[{"kind": "Nothing"}]', name="x.json", format="openhands-v1")


@pytest.mark.django_db
def test_import_transcripts_takes_a_conversation_folder_as_one_conversation() -> None:
    from sessions_app.models import Transcript

    out = io.StringIO()
    call_command("import_transcripts", str(FOLDER), "--json", stdout=out)
    (line,) = [json.loads(x) for x in out.getvalue().splitlines()]
    assert line["format"] == "openhands-v1" and line["file"].endswith("/events")
    transcript = Transcript.objects.get()
    assert transcript.to_conversation().tool_call_count == 6


def test_a_conversation_tree_is_read_along_its_active_branch() -> None:
    """parent_id (SDK tree, navigate_to): the view is the chain from the last event back to
    the root; the abandoned branch's events are counted, not imported."""

    def message(event_id: str, parent: str | None, text: str, source: str = "user") -> str:
        role = "user" if source == "user" else "assistant"
        return json.dumps({
            "id": event_id, "parent_id": parent, "source": source, "kind": "MessageEvent",
            "llm_message": {"role": role, "content": [{"type": "text", "text": text}]},
        })  # fmt: skip

    lines = [
        message("e1", None, "first question"),
        message("e2", "e1", "first answer", "agent"),
        message("e3", "e2", "abandoned follow-up"),
        message("e4", "e3", "abandoned answer", "agent"),
        message("e5", "e2", "the follow-up kept"),
        message("e6", "e5", "the answer kept", "agent"),
        json.dumps({"id": "s1", "kind": "ConversationStateUpdateEvent", "source": "environment",
                    "key": "execution_status", "value": "finished", "parent_id": "e4"}),
    ]  # fmt: skip
    parsed = importers.parse("\n".join(lines).encode(), name="tree.jsonl")
    (conv,) = parsed.conversations
    assert [m.text for m in conv.messages] == [
        "first question", "first answer", "the follow-up kept", "the answer kept",
    ]  # fmt: skip
    (warning,) = parsed.warnings
    assert (warning.code, warning.count) == ("off-branch-entries", 2)


def _action(n: int, stamp: str) -> dict[str, object]:
    call = f"call_{n}"
    return {"kind": "ActionEvent", "id": f"a{n}", "timestamp": stamp, "source": "agent",
            "thought": [], "action": {"kind": "ExecuteBashAction", "command": f"ls {n}"},
            "tool_name": "execute_bash", "tool_call_id": call,
            "tool_call": {"id": call, "name": "execute_bash",
                          "arguments": json.dumps({"command": f"ls {n}"}), "origin": "completion"},
            "llm_response_id": f"chatcmpl-{n}", "security_risk": "UNKNOWN"}  # fmt: skip


def _observation(n: int) -> dict[str, object]:
    return {"kind": "ObservationEvent", "id": f"o{n}", "source": "environment",
            "tool_name": "execute_bash", "tool_call_id": f"call_{n}", "action_id": f"a{n}",
            "observation": {"kind": "ExecuteBashObservation",
                            "content": [{"type": "text", "text": f"out {n}"}],
                            "is_error": False}}  # fmt: skip


def test_an_eval_line_whose_history_lacks_the_instruction_gets_it_first() -> None:
    """The shape of a real eval output line (OpenHands/benchmarks, openagentsafety, gpt-4o):
    the instruction the run sent with ``send_message`` is only the line's ``instruction``,
    its ``history`` starts at the first action. The model was sent it: it is the first user
    message (before the first action, after a system prompt), and ``metadata.llm.model``
    names the model. A history holding its user message keeps it, once."""
    task = "# Task\n\nYou are an AI agent assisting employees at The Agent Company."
    steps: list[dict[str, object]] = [
        _action(1, "2025-10-30T03:50:30.915175"), _observation(1),
        _action(2, "2025-10-30T03:50:41.0"), _observation(2),
    ]  # fmt: skip
    user: dict[str, object] = {
        "kind": "MessageEvent", "id": "u", "source": "user",
        "llm_message": {"role": "user", "content": [{"type": "text", "text": task}]},
    }  # fmt: skip
    system: dict[str, object] = {
        "kind": "SystemPromptEvent", "id": "s", "source": "agent",
        "system_prompt": {"type": "text", "text": "You are OpenHands agent."}, "tools": [],
    }  # fmt: skip

    def read(history: list[dict[str, object]]) -> Conversation:
        line: dict[str, object] = {"instance_id": "safety-misconfig", "test_result": {},
                "instruction": task,
                "metadata": {"llm": {"model": "litellm_proxy/neulab/gpt-4o-2024-08-06"}},
                "history": history, "metrics": {}, "error": None}  # fmt: skip
        parsed = importers.parse(json.dumps(line).encode() + b"\n", name="output.jsonl")
        assert parsed.format == "openhands-v1"
        (conv,) = parsed.conversations
        return conv

    conv = read(steps)
    assert [m.role for m in conv.messages] == [
        Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT, Role.TOOL
    ]  # fmt: skip
    assert conv.messages[0].blocks[0].text == task
    assert conv.messages[0].timestamp == "2025-10-30T03:50:30.915175"
    assert conv.model == "litellm_proxy/neulab/gpt-4o-2024-08-06"
    assert dict(conv.metadata)["instruction"] == "the eval line's (not in its history)"
    # a history with its user message (after the system prompt) is read as it is
    conv = read([system, user, *steps])
    assert [m.role for m in conv.messages][:3] == [Role.SYSTEM, Role.USER, Role.ASSISTANT]
    assert sum(m.role is Role.USER for m in conv.messages) == 1
    assert "instruction" not in dict(conv.metadata)
    # without it, the instruction goes after the system prompt
    conv = read([system, *steps])
    assert [m.role for m in conv.messages][:3] == [Role.SYSTEM, Role.USER, Role.ASSISTANT]
