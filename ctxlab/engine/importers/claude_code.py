"""Claude Code session JSONL (``~/.claude/projects/<slug>/<session>.jsonl``).

One line per content block or event. The thread is rebuilt from ``uuid``/``parentUuid``
(crossing ``compact_boundary`` lines through ``logicalParentUuid``); the lines of one API
response (same ``message.id``) are merged into one message whose usage is counted once;
parallel tool results (one line each) are merged into one user turn; inline sidechain
(Task sub-agent) threads become their own conversations pointing at the main one.
``toolUseResult`` duplicates the model-visible ``tool_result`` content and is ignored.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
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
    as_list,
    as_str,
    is_noise_text,
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
# Metadata keys of an alternate branch (a rewound/edited branch kept as its own
# conversation): the conversation it forks from, and the line of that thread it follows.
ALTERNATE_OF = "alternate_of"
FORKS_AFTER_LINE = "forks_after_line"


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
            warnings.add(
                "line is not a JSON object; skipped", f"line {line}", code="unknown-record"
            )
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
                warnings.add(
                    "repeated uuid (resumed session); later copy skipped",
                    f"line {line}",
                    code="repeated-id",
                )
                continue
            parent = rec.get("parentUuid")
            if parent is None and rec.get("subtype") == "compact_boundary":
                parent = rec.get("logicalParentUuid")
            nodes[uuid] = _Node(line, rec, parent if isinstance(parent, str) else None)
            order.append(uuid)
        elif rtype in _METADATA_TYPES:
            recognised += 1
        elif rtype not in _MESSAGE_TYPES:
            warnings.add(
                f"unknown record type {str(rtype)[:40]!r} skipped",
                f"line {line}",
                code="unknown-record",
            )
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
        if parent == uuid:
            continue  # its own parent: a one-line cycle, reported with the others below
        if parent is not None and parent in nodes:
            children.setdefault(parent, []).append(uuid)
        else:
            if parent is not None:
                warnings.add(
                    "parent line not in this file; thread starts here",
                    f"line {nodes[uuid].line}",
                    code="parent-missing",
                )
            roots.append(uuid)

    threads = _threads(roots, nodes, children, warnings)
    convs = _conversations(threads, nodes, name, warnings, summaries, last_summary, named_title)
    return ParsedFile(FORMAT, tuple(convs), warnings.freeze())


@dataclass(slots=True)
class _Thread:
    nodes: list[_Node]
    fork: _Node | None = None  # an alternate branch: the line of the thread it forks from
    forked_from: int = -1  # index in the thread list of that thread


def _is_real(node: _Node) -> bool:
    """A line that carries the conversation: a model response, a tool result, a compaction
    summary or a request the user typed. Local commands (/export, #memory input, their
    output and caveat), meta injections and system lines do not."""
    rec = node.rec
    rtype = rec.get("type")
    if rtype == "assistant":
        return True
    if rtype != "user" or rec.get("isMeta") is True:
        return False
    if rec.get("isCompactSummary") is True:
        return True
    message = rec.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return not is_noise_text(content)
    for block in as_list(content):
        block = as_dict(block)
        if block.get("type") != "text" or not is_noise_text(as_str(block.get("text"))):
            return True
    return False


def _is_message(node: _Node) -> int:
    return 1 if as_str(node.rec.get("type")) in _MESSAGE_TYPES else 0


def _threads(
    roots: list[str], nodes: dict[str, _Node], children: dict[str, list[str]], warnings: Warnings
) -> list[_Thread]:
    """Each root's main thread, then the real branches off it as alternates.

    The main thread follows, from the root, the child whose subtree holds the newest real
    line (see ``_is_real``), so lines that never reached the model (a ``/export`` whose
    parent is the first line) cannot cut the conversation short, and a rewind's newest
    branch wins. Off-thread subtrees with real lines become alternate threads (the same
    rule inside them); the others are set aside with a counted warning.
    """
    newest_real, newest_any, size = _subtree_facts(roots, nodes, children)
    threads: list[_Thread] = []
    pending: list[tuple[str, _Node | None, int]] = [(root, None, -1) for root in roots]
    while pending:
        start, fork, forked_from = pending.pop(0)
        path = [start]
        while kids := children.get(path[-1]):
            path.append(max(kids, key=lambda k: (newest_real[k], newest_any[k])))
        index = len(threads)
        threads.append(_Thread([nodes[u] for u in path], fork, forked_from))
        if fork is not None:
            warnings.add(
                "lines on a rewound/edited branch kept as an alternate conversation",
                f"line {nodes[start].line}",
                code="alternate-branch",
                count=sum(_is_message(nodes[u]) for u in path),
            )
        on_path = set(path)
        for uuid in path:
            for kid in children.get(uuid, ()):
                if kid in on_path:
                    continue
                if newest_real[kid] >= 0:
                    pending.append((kid, nodes[uuid], index))
                elif size[kid]:  # metadata lines (progress, hooks) are skipped anyway
                    warnings.add(
                        "local-command/meta lines outside the main thread set aside",
                        f"line {nodes[kid].line}",
                        code="side-lines-set-aside",
                        count=size[kid],
                    )
    unreached = len(nodes) - len(newest_any)
    if unreached:
        first = min(n.line for u, n in nodes.items() if u not in newest_any)
        warnings.add(
            "lines whose parentUuid chain loops back on itself set aside",
            f"line {first}",
            code="parent-cycle",
            count=unreached,
        )
    return threads


def _subtree_facts(
    roots: list[str], nodes: dict[str, _Node], children: dict[str, list[str]]
) -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
    """Per reachable line: the newest real line (-1: none) and newest line in its subtree,
    and how many user/assistant lines it holds. Iterative: a 20,000-line chain is 20,000
    deep."""
    order: list[str] = []
    stack = list(roots)
    while stack:
        uuid = stack.pop()
        order.append(uuid)
        stack.extend(children.get(uuid, ()))
    newest_real: dict[str, int] = {}
    newest_any: dict[str, int] = {}
    size: dict[str, int] = {}
    for uuid in reversed(order):  # children before parents
        node = nodes[uuid]
        real, last, count = (node.line if _is_real(node) else -1), node.line, _is_message(node)
        for kid in children.get(uuid, ()):
            real = max(real, newest_real[kid])
            last = max(last, newest_any[kid])
            count += size[kid]
        newest_real[uuid], newest_any[uuid], size[uuid] = real, last, count
    return newest_real, newest_any, size


def _conversations(
    threads: list[_Thread],
    nodes: dict[str, _Node],
    name: str,
    warnings: Warnings,
    summaries: dict[str, str],
    last_summary: str,
    named_title: str,
) -> list[Conversation]:
    main: list[Conversation] = []
    side: list[tuple[Conversation, str]] = []
    alternates: list[Conversation] = []
    conv_of: dict[int, str] = {}  # thread index -> conversation id
    title_of: dict[int, str] = {}
    for index, thread in enumerate(threads):
        built = _thread(thread.nodes, name, warnings)
        if built is None:
            continue
        messages, compactions = built
        first = thread.nodes[0].rec
        sid = as_str(first.get("sessionId")) or name or "claude-code"
        sidechain = first.get("isSidechain") is True
        alternate_of = conv_of.get(thread.forked_from) if thread.fork is not None else None
        title = next(
            (summaries[n.rec["uuid"]] for n in thread.nodes if n.rec["uuid"] in summaries), ""
        )
        if not sidechain and thread.fork is None:
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
        uuid8 = as_str(first.get("uuid"))[:8]
        if thread.fork is not None:
            conv_id = f"{sid}~alt-{uuid8}"
            # Its own first request, else what it is an alternate of (a regenerated answer).
            asked = title_from(messages, fallback="")
            of = title_of.get(thread.forked_from, "")
            title = f"alternate branch at line {thread.fork.line}" + (
                f": {asked}" if asked else f" of “{of}”" if of else f": {title}"
            )
            meta += [
                (ALTERNATE_OF, alternate_of or ""),
                (FORKS_AFTER_LINE, str(thread.fork.line)),
            ]
        elif sidechain:
            agent = as_str(first.get("agentId")) or uuid8
            conv_id = f"{sid}/agent-{agent}"
        else:
            conv_id = sid if not main else f"{sid}~{uuid8}"
        conv_of[index], title_of[index] = conv_id, title
        conv = Conversation(
            id=conv_id,
            title=title,
            messages=tuple(m.build() for m in messages),
            compactions=tuple(compactions),
            model=models[-1] if models else "",
            metadata=tuple(meta),
            usage_convention="anthropic",
            parent_id=alternate_of,
        )
        if thread.fork is not None:
            alternates.append(conv)
        elif sidechain:
            first_text = messages[0].blocks[0].text if messages and messages[0].blocks else ""
            side.append((conv, first_text))
        else:
            main.append(conv)
    out = list(main)
    # A sub-agent's first user text is the prompt its Task call carried: link it to that
    # conversation (else to the first main thread).
    prompts = {
        str(as_dict(b.tool_input).get("prompt")): c.id
        for c in (*main, *alternates)
        for m in c.messages
        for b in m.tool_uses
        if isinstance(b.tool_input, dict)
    }
    default_parent = main[0].id if main else None
    for conv, first_text in side:
        out.append(replace(conv, parent_id=prompts.get(first_text, default_parent)))
    return out + alternates


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
