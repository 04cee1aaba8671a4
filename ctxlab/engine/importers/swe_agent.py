"""SWE-agent ``.traj`` files (and mini-swe-agent ``.traj.json``).

``history[]`` is the conversation. Function-calling runs store OpenAI ``tool_calls`` /
``tool_call_ids`` (converted like Chat Completions). Text-protocol runs (0.x, EnIGMA,
"thought_action") store the command inside the assistant text and the observation as the next
``user`` message; when the text is exactly ``thought`` followed by the fenced ``action`` (as
SWE-agent writes it), the action becomes a tool_use (name = the command's first word, input
``{"command": action}``, id synthesised) and the next user message its tool_result. The only
bytes not kept in blocks then are the fence markers around the command. Any other shape stays
plain text (counted in a warning). ``trajectory[]`` steps are used only when ``history`` is
missing. ``info.model_stats`` is run-level, so it goes to conversation metadata.

mini-swe-agent's ``.traj.json`` (``{info, messages, trajectory_format}``, checked on a real
2.3.0 trajectory, ``trajectory_format`` ``mini-swe-agent-1.1``): ``messages`` are OpenAI
chat messages (``tool_calls`` / ``tool`` results in 2.x, fenced commands in 1.x); the last
one, role ``exit`` (the submission, ``extra.exit_status``), never reaches the model and is
left out (``info.exit_status`` is in the metadata); ``info.config.model.model_name`` is the
model. ``trajectory_format`` is written after the messages, so the file is also known by
``info.mini_version`` at its start.
"""

from __future__ import annotations

import json
from typing import Any

from ..core.model import (
    Block,
    BlockKind,
    Conversation,
    Message,
    ParsedFile,
    Role,
    SourcePos,
    TranscriptError,
)
from ._common import WarningTally, load_json, require_content, short_title
from ._kit import title_from
from ._openai_messages import MessageConverter, as_dict, as_str, content_blocks

FORMAT = "swe-agent"
LABEL = "SWE-agent trajectory (.traj)"

_EXPECTED = 'a SWE-agent trajectory: a JSON object with "history" or "trajectory" lists'


def _split_action(content: str, thought: str, action: str) -> str | None:
    """The text before the fenced action when ``content`` is exactly thought + fenced action;
    None when the message does not have that shape."""
    if not action.strip() or not content.startswith(thought):
        return None
    rest = content[len(thought) :].strip()
    if not (rest.startswith("```") and rest.endswith("```") and len(rest) >= 6):
        return None
    lang, newline, body = rest[3:-3].partition("\n")
    if not newline or " " in lang.strip():
        return None
    if body.rstrip("\n") != action.rstrip("\n"):
        return None
    return thought


def _action_block(action: str, tool_id: str) -> Block:
    words = action.split(maxsplit=1)
    return Block(
        BlockKind.TOOL_USE,
        tool_id=tool_id,
        tool_name=words[0] if words else "",
        tool_input={"command": action},
        raw_type="swe_agent_action",
    )


def _text_flags(raw: dict[str, Any]) -> frozenset[str]:
    return frozenset({"demonstration"}) if raw.get("is_demo") is True else frozenset()


def _history(history: list[Any], *, conv_id: str, name: str, warn: WarningTally) -> list[Message]:
    converter = MessageConverter(conv_id, warn, lambda i: SourcePos(name, record=i))
    messages: list[Message] = []
    pending: tuple[str, str] | None = None  # (tool id, tool name) of a text-protocol action
    unsplit = 0
    for i, raw in enumerate(history):
        pos = SourcePos(name, record=i)
        if not isinstance(raw, dict):
            warn.add("skipped a history entry that is not a JSON object", str(pos))
            continue
        role = as_str(raw.get("role"))
        agent = as_str(raw.get("agent"))
        if pending and role == "user":
            text = "\n".join(b.text for b in content_blocks(raw.get("content"), warn, str(pos)))
            messages.append(
                Message(
                    Role.TOOL,
                    (
                        Block(
                            BlockKind.TOOL_RESULT,
                            tool_id=pending[0],
                            tool_name=pending[1],
                            text=text,
                            raw_type="observation",
                        ),
                    ),
                    source=pos,
                    name=agent,
                    flags=_text_flags(raw),
                )
            )
            pending = None
            continue
        pending = None
        action = raw.get("action")
        content = raw.get("content")
        if (
            role == "assistant"
            and not raw.get("tool_calls")
            and isinstance(action, str)
            and action.strip()
        ):
            thought = _split_action(as_str(content), as_str(raw.get("thought")), action)
            if thought is not None:
                tool_id = converter.synth_id()
                blocks = [Block(BlockKind.TEXT, text=thought)] if thought else []
                use = _action_block(action, tool_id)
                messages.append(
                    Message(
                        Role.ASSISTANT,
                        (*blocks, use),
                        source=pos,
                        name=agent,
                        flags=_text_flags(raw),
                    )
                )
                pending = (tool_id, use.tool_name)
                continue
            unsplit += 1
        message = converter.convert(i, raw)
        if message is not None:
            if agent and message.role is not Role.TOOL:
                message = Message(
                    message.role,
                    message.blocks,
                    source=message.source,
                    timestamp=message.timestamp,
                    model=message.model,
                    usage=message.usage,
                    id=message.id,
                    name=agent,
                    flags=message.flags,
                )
            messages.append(message)
    if unsplit:
        warn.add(
            f"{unsplit} assistant action(s) kept as text: the text is not thought + fenced action"
        )
    return messages


def _steps(steps: list[Any], *, conv_id: str, name: str, warn: WarningTally) -> list[Message]:
    """Fallback when there is no history: each step is a response and its observation."""
    messages: list[Message] = []
    for i, step in enumerate(steps):
        pos = SourcePos(name, record=i)
        if not isinstance(step, dict):
            warn.add("skipped a trajectory step that is not a JSON object", str(pos))
            continue
        response = as_str(step.get("response"))
        action = as_str(step.get("action"))
        tool_id = f"{conv_id}:step{i}"
        thought = _split_action(response, as_str(step.get("thought")), action)
        if thought is None:
            thought = response
        blocks = [Block(BlockKind.TEXT, text=thought)] if thought else []
        if action.strip():
            use = _action_block(action, tool_id)
            blocks.append(use)
        messages.append(Message(Role.ASSISTANT, tuple(blocks), source=pos))
        if action.strip():
            result = Block(
                BlockKind.TOOL_RESULT,
                tool_id=tool_id,
                tool_name=use.tool_name,
                text=as_str(step.get("observation")),
                raw_type="observation",
            )
            messages.append(Message(Role.TOOL, (result,), source=pos))
    return messages


def _replay_config(doc: dict[str, Any]) -> dict[str, Any]:
    raw = doc.get("replay_config")
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except (ValueError, RecursionError):
            return {}
    return as_dict(raw)


def _metadata(doc: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    info = as_dict(doc.get("info"))
    meta = [
        (key, as_str(info[key]))
        for key in ("exit_status", "swe_agent_version", "mini_version")
        if isinstance(info.get(key), str)
    ]
    if isinstance(info.get("submission"), str):
        meta.append(("submission_chars", str(len(info["submission"]))))
    for key, value in as_dict(info.get("model_stats")).items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            meta.append((f"model_stats.{key}", str(value)))
    if isinstance(doc.get("environment"), str):
        meta.append(("environment", doc["environment"]))
    return tuple(meta)


def _pr_description(messages: list[Message]) -> str:
    """The task of a SWE-bench style prompt (mini-swe-agent's ``<pr_description>``)."""
    for message in messages[:3]:
        text = message.text
        start = text.find("<pr_description>")
        if message.role is Role.USER and start >= 0:
            body = text[start + len("<pr_description>") :].split("</pr_description>", 1)[0]
            body = body.replace("Consider the following PR description:", "", 1)
            return body.strip()
    return ""


def parse(data: bytes, *, name: str) -> ParsedFile:
    require_content(data, name, _EXPECTED)
    doc = load_json(data, name)
    if not isinstance(doc, dict):
        raise TranscriptError("the file is not a JSON object", file=name, expected=_EXPECTED)
    warn = WarningTally()
    conv_id = name or "trajectory"
    history = doc.get("history")
    if isinstance(history, list) and history:
        messages = _history(history, conv_id=conv_id, name=name, warn=warn)
    elif isinstance(doc.get("messages"), list) and doc["messages"]:  # mini-swe-agent
        converter = MessageConverter(conv_id, warn, lambda i: SourcePos(name, record=i))
        messages = [
            m
            for i, r in enumerate(doc["messages"])
            if as_dict(r).get("role") != "exit" and (m := converter.convert(i, r))
        ]
    elif isinstance(doc.get("trajectory"), list) and doc["trajectory"]:
        warn.add("no history: rebuilt from trajectory steps (no system or task prompt)")
        messages = _steps(doc["trajectory"], conv_id=conv_id, name=name, warn=warn)
    else:
        raise TranscriptError("no history or trajectory entries", file=name, expected=_EXPECTED)
    if not messages:
        raise TranscriptError("no usable history messages", file=name, expected=_EXPECTED)
    config = _replay_config(doc)
    problem = as_dict(config.get("problem_statement"))
    model = as_str(as_dict(as_dict(config.get("agent")).get("model")).get("name")) or as_str(
        as_dict(as_dict(as_dict(doc.get("info")).get("config")).get("model")).get("model_name")
    )
    first_user = title_from(messages, fallback="") or _pr_description(messages)
    title = as_str(problem.get("id")) or short_title(first_user) or conv_id
    conversation = Conversation(
        id=conv_id,
        title=title,
        messages=tuple(messages),
        model=model,
        metadata=_metadata(doc),
    )
    return ParsedFile(FORMAT, (conversation,), warn.freeze())


def sniff(head: bytes, name: str) -> int:
    text = head.lstrip()
    if not text.startswith(b"{"):
        return 0
    if b'"trajectory_format"' in text and b"mini-swe-agent" in text:
        return 90
    if b'"mini_version"' in text and b'"messages"' in text:
        return 92  # mini-swe-agent 2.x: its trajectory_format comes after the messages
    markers = sum(
        marker in text
        for marker in (b'"history"', b'"trajectory"', b'"model_stats"', b'"exit_status"')
    )
    if name.endswith(".traj") and markers:
        return 95
    if b'"history"' in text and b'"trajectory"' in text:
        return 85
    if b'"trajectory"' in text and (b'"observation"' in text and b'"thought"' in text):
        return 70
    return 0
