"""Claude Code session JSONL (``~/.claude/projects/<slug>/<session>.jsonl``).

One line per content block or event. The thread is rebuilt from ``uuid``/``parentUuid``
(crossing ``compact_boundary`` lines through ``logicalParentUuid``); the lines of one API
response (same ``message.id``) are merged into one message whose usage is counted once;
parallel tool results (one line each) are merged into one user turn; inline sidechain
(Task sub-agent) threads become their own conversations pointing at the main one.
``toolUseResult`` duplicates the model-visible ``tool_result`` content and is ignored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..model import (
    Conversation,
    OriginalCompaction,
    ParsedFile,
    Role,
    SourcePos,
    TranscriptError,
)
from . import _anthropic_blocks as ab
from ._common import iter_jsonl
from ._kit import (
    MessageBuilder,
    Warnings,
    as_dict,
    as_int,
    as_str,
    reject_empty,
    shorten,
    title_from,
)

FORMAT = "claude-code"
LABEL = "Claude Code session"

# Line types that carry no conversation content; skipped without a warning.
_METADATA_TYPES = {
    "summary",
    "file-history-snapshot",
    "queue-operation",
    "ai-title",
    "custom-title",
    "permission-mode",
    "mode",
    "attachment",
    "progress",
    "system",
    "last-prompt",
    "tag",
    "agent-name",
    "pr-link",
}
_MESSAGE_TYPES = {"user", "assistant"}


def sniff(head: bytes, name: str) -> int:
    if not head.lstrip().startswith(b"{"):
        return 0
    if b'"parentUuid"' in head and b'"sessionId"' in head:
        return 95
    if b'"type":"summary"' in head and b'"leafUuid"' in head:
        return 80
    return 0


@dataclass(slots=True)
class _Node:
    line: int
    rec: dict[str, Any]
    parent: str | None


def parse(data: bytes, *, name: str) -> ParsedFile:
    reject_empty(data, name, "a Claude Code session (JSONL)")
    warnings = Warnings()
    nodes: dict[str, _Node] = {}
    order: list[str] = []
    summaries: dict[str, str] = {}
    last_summary = ""
    named_title = ""
    recognised = 0
    for line, rec in iter_jsonl(data, name):
        if not isinstance(rec, dict):
            warnings.add("line is not a JSON object; skipped", f"line {line}")
            continue
        rtype = as_str(rec.get("type")) or repr(rec.get("type"))[:40]
        if rtype == "summary":
            recognised += 1
            text = as_str(rec.get("summary"))
            last_summary = text or last_summary
            summaries.setdefault(as_str(rec.get("leafUuid")), text)
        elif rtype in {"custom-title", "ai-title"}:
            recognised += 1
            named_title = as_str(rec.get("customTitle") or rec.get("aiTitle")) or named_title
        uuid = rec.get("uuid")
        if isinstance(uuid, str) and uuid and "parentUuid" in rec:
            recognised += 1
            if uuid in nodes:  # resumed sessions repeat earlier lines
                warnings.add("repeated uuid (resumed session); later copy skipped", f"line {line}")
                continue
            parent = rec.get("parentUuid")
            if parent is None and rec.get("subtype") == "compact_boundary":
                parent = rec.get("logicalParentUuid")
            nodes[uuid] = _Node(line, rec, parent if isinstance(parent, str) else None)
            order.append(uuid)
        elif rtype in _METADATA_TYPES:
            recognised += 1
        elif rtype not in _MESSAGE_TYPES:
            warnings.add(f"unknown record type {str(rtype)[:40]!r} skipped", f"line {line}")
        else:
            warnings.add(f"{rtype} line without uuid skipped", f"line {line}")
    if not recognised:
        raise TranscriptError(
            "no Claude Code session lines found",
            file=name,
            expected="JSONL lines with type user/assistant, uuid and parentUuid",
        )

    children: dict[str, list[str]] = {}
    roots: list[str] = []
    for uuid in order:
        parent = nodes[uuid].parent
        if parent is not None and parent in nodes and parent != uuid:
            children.setdefault(parent, []).append(uuid)
        else:
            if parent is not None:
                warnings.add("parent line not in this file; thread starts here", str(uuid))
            roots.append(uuid)

    threads = [_active_path(root, nodes, children, warnings) for root in roots]
    convs = _conversations(threads, nodes, name, warnings, summaries, last_summary, named_title)
    return ParsedFile(FORMAT, tuple(convs), warnings.freeze())


def _active_path(
    root: str, nodes: dict[str, _Node], children: dict[str, list[str]], warnings: Warnings
) -> list[_Node]:
    """Root -> newest leaf (a rewind leaves abandoned branches; those are counted)."""
    stack, subtree, leaf = [root], 0, ""
    while stack:
        uuid = stack.pop()
        subtree += 1
        kids = children.get(uuid)
        if kids:
            stack.extend(kids)
        elif not leaf or nodes[uuid].line > nodes[leaf].line:
            leaf = uuid
    path: list[_Node] = []
    cursor: str | None = leaf
    on_path = set()
    while cursor is not None and cursor not in on_path:
        on_path.add(cursor)
        node = nodes[cursor]
        path.append(node)
        cursor = node.parent if node.parent in nodes and cursor != root else None
    path.reverse()
    if subtree > len(path):
        stack = [root]
        while stack:
            off = stack.pop()
            stack.extend(children.get(off, ()))
            if off not in on_path and as_str(nodes[off].rec.get("type")) in _MESSAGE_TYPES:
                warnings.add(
                    "line on an abandoned branch (rewind/edit) skipped",
                    f"line {nodes[off].line}",
                )
    return path


def _conversations(
    threads: list[list[_Node]],
    nodes: dict[str, _Node],
    name: str,
    warnings: Warnings,
    summaries: dict[str, str],
    last_summary: str,
    named_title: str,
) -> list[Conversation]:
    main: list[Conversation] = []
    side: list[tuple[Conversation, str]] = []
    for thread in threads:
        built = _thread(thread, name, warnings)
        if built is None:
            continue
        messages, compactions = built
        first = thread[0].rec
        sid = as_str(first.get("sessionId")) or name or "claude-code"
        sidechain = first.get("isSidechain") is True
        title = next((summaries[n.rec["uuid"]] for n in thread if n.rec["uuid"] in summaries), "")
        if not sidechain:
            title = title or named_title or last_summary
        title = title or title_from(messages, fallback=shorten(sid))
        models = [m.model for m in messages if m.model and not m.model.startswith("<")]
        meta = [
            (key, as_str(first.get(field)))
            for key, field in (
                ("session_id", "sessionId"),
                ("cwd", "cwd"),
                ("version", "version"),
                ("git_branch", "gitBranch"),
            )
            if as_str(first.get(field))
        ]
        if sidechain:
            agent = as_str(first.get("agentId")) or as_str(first.get("uuid"))[:8]
            conv_id = f"{sid}/agent-{agent}"
        else:
            conv_id = sid if not main else f"{sid}~{as_str(first.get('uuid'))[:8]}"
        conv = Conversation(
            id=conv_id,
            title=title,
            messages=tuple(m.build() for m in messages),
            compactions=tuple(compactions),
            model=models[-1] if models else "",
            metadata=tuple(meta),
            usage_convention="anthropic",
        )
        if sidechain:
            first_text = messages[0].blocks[0].text if messages and messages[0].blocks else ""
            side.append((conv, first_text))
        else:
            main.append(conv)
    out = list(main)
    # A sub-agent's first user text is the prompt its Task call carried: link it to that
    # conversation (else to the first main thread).
    prompts = {
        str(as_dict(b.tool_input).get("prompt")): c.id
        for c in main
        for m in c.messages
        for b in m.tool_uses
        if isinstance(b.tool_input, dict)
    }
    default_parent = main[0].id if main else None
    for conv, first_text in side:
        parent = prompts.get(first_text, default_parent)
        out.append(
            Conversation(
                id=conv.id,
                title=conv.title,
                messages=conv.messages,
                compactions=conv.compactions,
                model=conv.model,
                metadata=conv.metadata,
                usage_convention=conv.usage_convention,
                parent_id=parent,
            )
        )
    return out


def _thread(
    thread: list[_Node], name: str, warnings: Warnings
) -> tuple[list[MessageBuilder], list[OriginalCompaction]] | None:
    messages: list[MessageBuilder] = []
    compactions: list[OriginalCompaction] = []
    last_assistant: MessageBuilder | None = None
    pending_summary: int | None = None  # index in `compactions` awaiting its summary message
    for node in thread:
        rec, line = node.rec, node.line
        rtype = as_str(rec.get("type"))
        where = SourcePos(file=name, line=line)
        if rtype == "system" and rec.get("subtype") == "compact_boundary":
            cm = as_dict(rec.get("compactMetadata"))
            compactions.append(
                OriginalCompaction(
                    before_index=len(messages),
                    kind="compact_boundary",
                    trigger=as_str(cm.get("trigger")),
                    pre_tokens=as_int(cm.get("preTokens")) if "preTokens" in cm else None,
                    source=where,
                )
            )
            pending_summary = len(compactions) - 1
            continue
        if rtype not in _MESSAGE_TYPES:
            continue
        msg = rec.get("message")
        if not isinstance(msg, dict):
            warnings.add(f"{rtype} line without a message object skipped", f"line {line}")
            continue
        blocks = ab.blocks(msg.get("content"))
        flags = {
            flag
            for flag, key in (
                ("meta", "isMeta"),
                ("sidechain", "isSidechain"),
                ("compact_summary", "isCompactSummary"),
            )
            if rec.get(key) is True
        }
        timestamp = as_str(rec.get("timestamp")) or None
        if rtype == "assistant":
            msg_id = as_str(msg.get("id"))
            usage = ab.usage(msg.get("usage"))
            if last_assistant is not None and msg_id and last_assistant.id == msg_id:
                # Another line of the same API response: one message, usage counted once
                # (the last line carries the final numbers).
                last_assistant.blocks.extend(blocks)
                last_assistant.usage = usage or last_assistant.usage
                continue
            last_assistant = MessageBuilder(
                Role.ASSISTANT,
                blocks,
                where,
                timestamp,
                model=as_str(msg.get("model")),
                usage=usage,
                id=msg_id or as_str(rec.get("uuid")),
                flags=flags,
            )
            messages.append(last_assistant)
            continue
        builder = MessageBuilder(
            Role.USER, blocks, where, timestamp, id=as_str(rec.get("uuid")), flags=flags
        )
        prev = messages[-1] if messages else None
        if (
            prev is not None
            and prev.role is Role.USER
            and builder.only_tool_results
            and prev.only_tool_results
            and prev.flags == builder.flags
        ):
            prev.blocks.extend(builder.blocks)  # parallel results: one user turn
            continue
        if not blocks:
            warnings.add("user line with empty content", f"line {line}")
        messages.append(builder)
        if pending_summary is not None and "compact_summary" in flags:
            c = compactions[pending_summary]
            compactions[pending_summary] = OriginalCompaction(
                before_index=c.before_index,
                kind=c.kind,
                trigger=c.trigger,
                pre_tokens=c.pre_tokens,
                summary_index=len(messages) - 1,
                source=c.source,
            )
            pending_summary = None
    if not messages:
        return None
    return messages, compactions
