"""Claude Code session JSONL (``~/.claude/projects/<slug>/<session>.jsonl``).

One line per content block or event. The thread is rebuilt from ``uuid``/``parentUuid``
as Claude Code's own loader does, from the newest line back, and the lines that fork off
it only because of how the agent writes them are folded back in (file order):

- parallel tool calls are one API response (one ``message.id``) written one assistant line
  per block, and each tool result's ``parentUuid`` is its own tool_use line, so the uuid
  tree forks at every parallel call: a side subtree holding only more lines of the
  thread's responses and results of their calls is part of the thread;
- progress, hook, system and attachment lines sit in the parent chain and are skipped;
- a ``compact_boundary`` line has no parent: it continues from its ``logicalParentUuid``,
  or from the main-thread line before it in the file when that line is not in the file
  (as does any line whose parent the agent never wrote).

Only a real rewind or edit (a different response or a different typed request as a
sibling: a regenerated answer, a session resumed mid-answer) becomes an alternate
conversation. The lines of one API response are merged into one message whose usage is
counted once; parallel tool results (one line each) into one user turn; Task sub-agent
threads (inline sidechain lines, or CLI 2.1.x's ``agent_progress`` lines reporting each of
the sub-agent's messages) become their own conversations pointing at the main one. A line
that is not JSON is skipped with a warning naming it (two records run together on one line
are both read); a file is refused only when nothing in it is readable. ``toolUseResult``
duplicates the model-visible ``tool_result`` content and is ignored.

The agent's own compactions become ``OriginalCompaction``s with the version that wrote
them: ``compact_boundary`` (with a manual ``/compact``'s focus text from the
``<command-args>`` after it), ``microcompact_boundary`` (the tool results it cleared), and
the summary a file starts from when no boundary precedes it (the conversation is then
``continued``: context before it is not in the file). A conversation's ``version`` is the
newest line's (``first_version`` when the session was resumed under another CLI).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from ..core.model import (
    Block,
    BlockKind,
    Conversation,
    OriginalCompaction,
    ParsedFile,
    Role,
    SourcePos,
    TranscriptError,
)
from ..strategies._claude_code_versions import UNWRITTEN_PARENT
from . import _anthropic_blocks as ab
from ._common import iter_jsonl_lenient
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
    # 2.1.150 - 2.1.218: the remote-control bridge's session id and sequence number, and
    # the file-history checkpoint written as a change to the previous snapshot (both kept
    # in the upload's raw lines, as the snapshots are)
    "bridge-session",
    "file-history-delta",
}
_MESSAGE_TYPES = {"user", "assistant"}
# System lines that record one of the agent's own compactions.
_BOUNDARIES = {"compact_boundary", "microcompact_boundary"}
# Metadata keys of an alternate branch (a rewound/edited branch kept as its own
# conversation): the conversation it forks from, and the line of that thread it follows.
ALTERNATE_OF = "alternate_of"
FORKS_AFTER_LINE = "forks_after_line"
# Metadata key ("1") of a conversation whose context before its first message is not in
# the file: it starts from a compaction (a summary, or a boundary line first), or its first
# line follows a line the file does not hold (a checkpoint cut from a longer session).
CONTINUED = "continued"


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
    unreadable: list[TranscriptError] = []
    # sub-agent id -> its messages by uuid, in file order (from progress lines)
    agents: dict[str, dict[str, _Node]] = {}
    for line, rec in iter_jsonl_lenient(data, name, warnings, unreadable):
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
        elif rtype == "progress":
            _sub_agent_line(rec, line, agents)
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
        if unreadable:
            raise unreadable[0]
        raise TranscriptError(
            "no Claude Code session lines found",
            file=name,
            expected="JSONL lines with type user/assistant, uuid and parentUuid",
        )
    _link(nodes, order, warnings)

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
    inline = {as_str(n.rec.get("agentId")) for n in nodes.values() if n.rec.get("isSidechain")}
    threads += [
        _Thread([*lines.values()]) for agent, lines in agents.items() if agent not in inline
    ]
    convs = _conversations(threads, nodes, name, warnings, summaries, last_summary, named_title)
    return ParsedFile(FORMAT, tuple(convs), warnings.freeze())


# Fields of the progress line a sub-agent's message is given (the message has none).
_CONTEXT_FIELDS = ("sessionId", "version", "cwd", "gitBranch")


def _sub_agent_line(rec: dict[str, Any], line: int, agents: dict[str, dict[str, _Node]]) -> None:
    """A Task sub-agent's message, as CLI 2.1.x reports it while the sub-agent runs (a
    ``progress`` line of type ``agent_progress``; its own transcript is another file): kept
    as a line of that sub-agent's sidechain thread, in file order."""
    data = as_dict(rec.get("data"))
    message = as_dict(data.get("message"))
    agent = as_str(data.get("agentId"))
    if data.get("type") != "agent_progress" or not agent:
        return
    if as_str(message.get("type")) not in _MESSAGE_TYPES:
        return
    lines = agents.setdefault(agent, {})
    uuid = as_str(message.get("uuid")) or f"{agent}:{line}"
    if uuid in lines:
        return  # reported again (a resumed session repeats earlier lines)
    sub: dict[str, Any] = {k: rec[k] for k in _CONTEXT_FIELDS if k in rec}
    sub.update(message, uuid=uuid, isSidechain=True, agentId=agent)
    lines[uuid] = _Node(line, sub, None)


def _link(nodes: dict[str, _Node], order: list[str], warnings: Warnings) -> None:
    """Parents as the agent meant them. A ``compact_boundary`` line has none: it continues
    from its ``logicalParentUuid``; when that line is not in the file (or its own chain
    reaches no conversation line), and for any main-thread line whose parent is not in the
    file (a line the agent never wrote: a tool result cut off by the compaction), from the
    main-thread line before it in the file.

    A partial compaction (2.1.2xx ``compactMetadata.preservedSegment``: the messages from
    ``headUuid`` to ``tailUuid`` are kept after the summary, ``anchorUuid``) leaves the
    next lines hanging off the kept segment's tail, beside the boundary; as Claude Code's
    loader puts the segment after the anchor, they continue from the anchor (the boundary
    when the anchor is not in the file)."""
    # The last main-thread line so far that is a conversation line or hangs off one.
    previous: str | None = None
    after_segment: dict[str, str] = {}  # a kept segment's tail -> where later lines go on
    for uuid in order:
        node = nodes[uuid]
        rec = node.rec
        main_line = rec.get("isSidechain") is not True
        if node.parent in after_segment and main_line and uuid != after_segment[node.parent]:
            node.parent = after_segment[node.parent]
        if rec.get("parentUuid") is None and rec.get("subtype") == "compact_boundary":
            segment = as_dict(as_dict(rec.get("compactMetadata")).get("preservedSegment"))
            tail, anchor = as_str(segment.get("tailUuid")), as_str(segment.get("anchorUuid"))
            if tail and main_line:
                after_segment[tail] = anchor if anchor in nodes else uuid
            logical = rec.get("logicalParentUuid")
            if isinstance(logical, str) and _reaches_a_message(logical, nodes):
                node.parent = logical
            elif previous is not None and main_line:
                node.parent = previous
                warnings.add(
                    "compact boundary's logical parent not in this file; continued from "
                    "the line before it",
                    f"line {node.line}",
                    code="parent-missing",
                )
        elif (
            node.parent is not None
            and node.parent not in nodes
            and previous is not None
            and main_line
        ):
            warnings.add(
                "parent line not in this file; continued from the line before it",
                f"line {node.line}",
                code="parent-missing",
            )
            node.parent = previous
        if main_line and (node.parent is not None or as_str(rec.get("type")) in _MESSAGE_TYPES):
            previous = uuid


def _reaches_a_message(uuid: str, nodes: dict[str, _Node]) -> bool:
    """Whether the chain up from ``uuid`` (itself included) holds a user/assistant line."""
    seen: set[str] = set()
    current: str | None = uuid
    while current is not None and current in nodes and current not in seen:
        seen.add(current)
        node = nodes[current]
        if as_str(node.rec.get("type")) in _MESSAGE_TYPES:
            return True
        current = node.parent
    return False


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


def _starts_mid_session(thread: _Thread, nodes: dict[str, _Node]) -> bool:
    """Whether the thread's first line follows a line that is not in the file (a
    checkpoint or excerpt cut from a longer session): what came before was in the agent's
    context but is not here."""
    parent = thread.nodes[0].rec.get("parentUuid")
    return isinstance(parent, str) and bool(parent) and parent not in nodes


def _is_message(node: _Node) -> int:
    return 1 if as_str(node.rec.get("type")) in _MESSAGE_TYPES else 0


def _threads(
    roots: list[str], nodes: dict[str, _Node], children: dict[str, list[str]], warnings: Warnings
) -> list[_Thread]:
    """Each root's main thread, then the real branches off it as alternates.

    The main thread follows, from the root, the child whose subtree holds the newest real
    line (see ``_is_real``), so lines that never reached the model (a ``/export`` whose
    parent is the first line) cannot cut the conversation short, and a rewind's newest
    branch wins. A subtree off it that holds only more of the thread's own turns (see
    ``_turn_mates``: the other calls of a parallel response and their results) is part of
    it, in file order. Other off-thread subtrees with real lines become alternate threads
    (the same rule inside them); the others are set aside with a counted warning, as is a
    second main root without a real line.
    """
    newest_real, newest_any, size = _subtree_facts(roots, nodes, children)
    has_real_main = any(
        newest_real[r] >= 0 and nodes[r].rec.get("isSidechain") is not True for r in roots
    )
    threads: list[_Thread] = []
    pending: list[tuple[str, _Node | None, int]] = [(root, None, -1) for root in roots]
    while pending:
        start, fork, forked_from = pending.pop(0)
        if fork is None and newest_real[start] < 0 and has_real_main:
            if size[start]:
                warnings.add(
                    "local-command/meta lines outside the main thread set aside",
                    f"line {nodes[start].line}",
                    code="side-lines-set-aside",
                    count=size[start],
                )
            continue
        path = [start]
        while kids := children.get(path[-1]):
            path.append(max(kids, key=lambda k: (newest_real[k], newest_any[k])))
        index = len(threads)
        on_path = set(path)
        responses = {_response_id(nodes[u].rec) for u in path} - {""}
        calls = {c for u in path for c in _call_ids(nodes[u].rec)}
        members = list(path)
        for at, uuid in enumerate(path):
            for kid in children.get(uuid, ()):
                if kid in on_path:
                    continue
                subtree = _subtree(kid, children)
                if _turn_mates(subtree, nodes, responses, calls) or _before_late_hooks(
                    subtree, path[at + 1 :], nodes
                ):
                    members += subtree
                elif newest_real[kid] >= 0:
                    pending.append((kid, nodes[uuid], index))
                elif size[kid]:  # metadata lines (progress, hooks) are skipped anyway
                    warnings.add(
                        "local-command/meta lines outside the main thread set aside",
                        f"line {nodes[kid].line}",
                        code="side-lines-set-aside",
                        count=size[kid],
                    )
        members.sort(key=lambda u: nodes[u].line)
        threads.append(_Thread([nodes[u] for u in members], fork, forked_from))
        if fork is not None:
            warnings.add(
                "lines on a rewound/edited branch kept as an alternate conversation",
                f"line {nodes[start].line}",
                code="alternate-branch",
                count=sum(_is_message(nodes[u]) for u in members),
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


def _before_late_hooks(subtree: list[str], rest: list[str], nodes: dict[str, _Node]) -> bool:
    """Whether a branch off the thread is the thread's own next lines, cut off by hook
    lines written late: 2.1.72-2.1.78 write a call's ``hook_progress`` lines (and the
    ``stop_hook_summary``) after the turn's later lines, parented to the call's line, and
    the next prompt chains from them. The thread goes on through those hook lines; the
    branch was written before them (its first line before the thread's next one) and ends
    before the thread's next real line, so it is the turn the hooks ran beside."""
    if not rest or _is_real(nodes[rest[0]]):
        return False
    after = next((nodes[u].line for u in rest if _is_real(nodes[u])), None)
    first = min(nodes[u].line for u in subtree)
    last = max(nodes[u].line for u in subtree)
    return after is not None and first < nodes[rest[0]].line and last < after


def _subtree(start: str, children: dict[str, list[str]]) -> list[str]:
    found: list[str] = []
    stack = [start]
    while stack:
        uuid = stack.pop()
        found.append(uuid)
        stack.extend(children.get(uuid, ()))
    return found


def _response_id(rec: dict[str, Any]) -> str:
    """The API response an assistant line belongs to ("" for other lines)."""
    if rec.get("type") != "assistant":
        return ""
    return as_str(as_dict(rec.get("message")).get("id"))


def _content_ids(rec: dict[str, Any], kind: str, key: str) -> list[str]:
    content = as_dict(rec.get("message")).get("content")
    return [
        as_str(b.get(key))
        for b in as_list(content)
        if isinstance(b, dict) and b.get("type") == kind and as_str(b.get(key))
    ]


def _call_ids(rec: dict[str, Any]) -> list[str]:
    return _content_ids(rec, "tool_use", "id") if rec.get("type") == "assistant" else []


def _turn_mates(
    subtree: list[str], nodes: dict[str, _Node], responses: set[str], calls: set[str]
) -> bool:
    """Whether a subtree off a thread holds only more of the thread's own turns: lines of
    API responses on the thread (parallel tool calls, one line each), results of tool
    calls on the thread or in the subtree (each result's parent is its own call's line),
    and lines that are no conversation (progress, hooks, local commands). A different
    response or a typed request makes it a real branch."""
    known = set(calls)
    turn_lines = 0
    for uuid in subtree:
        rec = nodes[uuid].rec
        if rec.get("type") == "assistant":
            if _response_id(rec) not in responses:
                return False
            known.update(_call_ids(rec))
            turn_lines += 1
    for uuid in subtree:
        node = nodes[uuid]
        if node.rec.get("type") != "user" or not _is_real(node):
            continue
        results = _content_ids(node.rec, "tool_result", "tool_use_id")
        if not results or not known.issuperset(results):
            return False
        turn_lines += 1
    # Only local-command/meta lines: not part of the thread, unless they record one of the
    # agent's compactions.
    return turn_lines > 0 or any(
        as_str(nodes[u].rec.get("subtype")) in _BOUNDARIES for u in subtree
    )


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
        messages, compactions = built.messages, built.compactions
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
                ("git_branch", "gitBranch"),
            )
            if as_str(first.get(field))
        ]
        # The agent version that wrote the newest line (a session resumed under a newer
        # CLI), and the first one when it differs.
        if built.last_version:
            meta.insert(2, ("version", built.last_version))
        if built.first_version != built.last_version:
            meta.append(("first_version", built.first_version))
        if built.continued or (thread.fork is None and _starts_mid_session(thread, nodes)):
            meta.append((CONTINUED, "1"))
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


# A conversation that starts from a compaction summary (no boundary line before it).
_CONTINUED = "This session is being continued from a previous conversation"
_COMPACT_COMMAND = "<command-name>/compact</command-name>"
_COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.DOTALL)


@dataclass(slots=True)
class _Built:
    messages: list[MessageBuilder]
    compactions: list[OriginalCompaction]
    first_version: str = ""
    last_version: str = ""

    @property
    def continued(self) -> bool:
        """Context before the first message is not in the file (it starts after a
        compaction)."""
        return any(c.before_index == 0 and c.kind == "compact_boundary" for c in self.compactions)


@dataclass(slots=True)
class _Compactions:
    """The thread's original compactions as its lines come: a boundary waits for its
    summary message, a manual one for the ``/compact`` line holding its focus text."""

    found: list[OriginalCompaction] = field(default_factory=list)
    awaiting_summary: int | None = None  # index in ``found``
    awaiting_focus: int | None = None
    focus_before: str | None = None  # a ``/compact`` line seen before its boundary
    # a partial compaction (``preservedSegment``) -> the file line of its kept segment's head
    kept_heads: dict[int, int] = field(default_factory=dict)

    def boundary(
        self, rec: dict[str, Any], before_index: int, where: SourcePos, lines: dict[str, int]
    ) -> None:
        """A boundary line (``lines``: the thread's uuids -> their file lines)."""
        subtype = rec.get("subtype")
        version = as_str(rec.get("version"))
        if subtype == "microcompact_boundary":
            mm = as_dict(rec.get("microcompactMetadata"))
            self.found.append(
                OriginalCompaction(
                    before_index=before_index,
                    kind="microcompact",
                    trigger=as_str(mm.get("trigger")),
                    pre_tokens=as_int(mm.get("preTokens")) if "preTokens" in mm else None,
                    source=where,
                    cleared_tool_ids=tuple(as_str(t) for t in as_list(mm.get("compactedToolIds"))),
                    tokens_saved=as_int(mm.get("tokensSaved")) if "tokensSaved" in mm else None,
                    agent_version=version,
                )
            )
            return
        cm = as_dict(rec.get("compactMetadata"))
        trigger = as_str(cm.get("trigger"))
        # continued from the line before it (``_link``): the agent's last line is unwritten
        logical = as_str(rec.get("logicalParentUuid"))
        unwritten = before_index > 0 and logical and logical not in lines
        self.found.append(
            OriginalCompaction(
                before_index=before_index,
                kind="compact_boundary",
                trigger=trigger,
                pre_tokens=as_int(cm.get("preTokens")) if "preTokens" in cm else None,
                source=where,
                instructions=(self.focus_before or "") if trigger == "manual" else "",
                agent_version=version,
                detail=((UNWRITTEN_PARENT, logical),) if unwritten else (),
            )
        )
        self.awaiting_summary = self.awaiting_focus = len(self.found) - 1
        self.focus_before = None
        head = as_str(as_dict(cm.get("preservedSegment")).get("headUuid"))
        if head in lines:
            self.kept_heads[len(self.found) - 1] = lines[head]

    def kept(self, messages: list[MessageBuilder]) -> None:
        """Each partial compaction's kept segment: ``first_kept`` (``stages.originals``), the
        first message at or after its head's line, and how many messages it keeps (up to
        the boundary, where the file wrote them)."""
        for k, head in self.kept_heads.items():
            c = self.found[k]
            first = next(
                (
                    i
                    for i, m in enumerate(messages[: c.before_index])
                    if (m.source.line or 0) >= head
                ),
                None,
            )
            if first is not None:
                kept = (("first_kept", str(first)), ("kept_messages", str(c.before_index - first)))
                self._update(k, detail=c.detail + kept)

    def user_line(
        self, rec: dict[str, Any], text: str, index: int, first: bool, where: SourcePos
    ) -> None:
        """A user message at ``index``; ``first``: no real message came before it."""
        if _COMPACT_COMMAND in text:
            args = _COMMAND_ARGS.search(text)
            focus = args.group(1).strip() if args else ""
            if self.awaiting_focus is None:
                self.focus_before = focus
            elif focus and not self.found[self.awaiting_focus].instructions:
                self._update(self.awaiting_focus, instructions=focus)
        if rec.get("isCompactSummary") is not True and not (
            first and text.lstrip().startswith(_CONTINUED)
        ):
            return
        if self.awaiting_summary is not None:
            self._update(self.awaiting_summary, summary_index=index)
        elif first:  # the file starts after a compaction it does not hold
            self.found.append(
                OriginalCompaction(
                    before_index=0,
                    kind="compact_boundary",
                    summary_index=index,
                    source=where,
                    agent_version=as_str(rec.get("version")),
                )
            )
        self.awaiting_summary = None

    def assistant_line(self) -> None:
        self.awaiting_summary = self.awaiting_focus = None
        self.focus_before = None

    def _update(self, index: int, **changes: Any) -> None:
        self.found[index] = replace(self.found[index], **changes)


def _thread(thread: list[_Node], name: str, warnings: Warnings) -> _Built | None:
    messages: list[MessageBuilder] = []
    compactions = _Compactions()
    last_assistant: MessageBuilder | None = None
    versions = [v for n in thread if (v := as_str(n.rec.get("version")))]
    lines = {uuid: n.line for n in thread if (uuid := as_str(n.rec.get("uuid")))}
    seen_real = False
    for node in thread:
        rec, line = node.rec, node.line
        rtype = as_str(rec.get("type"))
        where = SourcePos(file=name, line=line)
        if rtype == "system" and as_str(rec.get("subtype")) in _BOUNDARIES:
            compactions.boundary(rec, len(messages), where, lines)
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
            seen_real = True
            compactions.assistant_line()
            msg_id = as_str(msg.get("id"))
            usage = ab.usage(msg.get("usage"))
            if last_assistant is not None and msg_id and last_assistant.id == msg_id:
                # Another line of the same API response (after the results of its earlier
                # parallel calls, when they came first): one message, usage counted once
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
        text = _user_text(msg.get("content"))
        first = not seen_real
        seen_real = seen_real or _is_real(node)
        if first and text.lstrip().startswith(_CONTINUED):
            flags.add("compact_summary")
        builder = MessageBuilder(
            Role.USER, blocks, where, timestamp, id=as_str(rec.get("uuid")), flags=flags
        )
        prev = messages[-1] if messages else None
        if (
            prev is not None
            and prev.role is Role.USER
            and prev.flags == builder.flags
            and _has_results(builder)
            and _has_results(prev)
        ):
            _merge_results(prev, builder.blocks)  # parallel results: one user turn
            continue
        if not blocks:
            warnings.add("user line with empty content", f"line {line}")
        messages.append(builder)
        compactions.user_line(rec, text, len(messages) - 1, first, where)
    if not messages:
        return None
    compactions.kept(messages)
    return _Built(
        messages,
        compactions.found,
        first_version=versions[0] if versions else "",
        last_version=versions[-1] if versions else "",
    )


def _has_results(message: MessageBuilder) -> bool:
    return any(b.kind is BlockKind.TOOL_RESULT for b in message.blocks)


def _merge_results(turn: MessageBuilder, blocks: list[Block]) -> None:
    """Another result line of a parallel call into its user turn: results stay together
    ahead of any text typed while the tools ran (a line may carry both), as the API wants
    them."""
    at = max(i for i, b in enumerate(turn.blocks) if b.kind is BlockKind.TOOL_RESULT) + 1
    results = [b for b in blocks if b.kind is BlockKind.TOOL_RESULT]
    turn.blocks[at:at] = results
    turn.blocks.extend(b for b in blocks if b.kind is not BlockKind.TOOL_RESULT)


def _user_text(content: Any) -> str:
    """The text of a user line's content (a string or its text blocks)."""
    if isinstance(content, str):
        return content
    return "\n".join(
        as_str(b.get("text"))
        for b in as_list(content)
        if isinstance(b, dict) and b.get("type") == "text"
    )
