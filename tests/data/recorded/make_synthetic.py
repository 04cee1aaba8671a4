"""Write the two synthetic transcripts with an original compaction (the corpus has none).

    python tests/data/recorded/make_synthetic.py

claude-code-compacted.jsonl: a Claude Code session whose reported usage grows by 4 000 tokens
a turn (each user message pastes a ~16 000-character log); when turn 7's message comes
(24 000 + 4 000 >= 27 000, the auto-compact threshold of a 60 000 window) the session holds
a compact_boundary (auto, preTokens 28 180) and the isCompactSummary message Claude Code
2.1.88 writes, then turn 7 and two more turns.
codex-compacted.jsonl: a Codex rollout (session_meta, turn_context, response items) with a
``compacted`` record after four 2 000-character exchanges, then two more.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
CC_SUMMARY = (
    "Summary:\n1. Primary Request and Intent:\n   Make the CSV importer stream rows.\n"
    "2. Key Technical Concepts:\n   - csv.reader over a file object\n"
    "3. Files and Code Sections:\n   - src/importer.py: read_rows() now yields rows\n"
    "4. Errors and fixes:\n   - UnicodeDecodeError on latin-1 files: open with errors='replace'\n"
    "5. Pending Tasks:\n   - Add a test for an empty file\n"
    "6. Current Work:\n   Writing tests/test_importer.py"
)
CC_WRAPPED = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The summary below covers the earlier portion of the conversation.\n\n"
    + CC_SUMMARY
    + "\n\nIf you need specific details from before compaction (like exact code snippets, error "
    "messages, or content you generated), read the full transcript at: "
    "/home/dev/.claude/projects/demo/s1.jsonl"
    + "\nContinue the conversation from where it left off without asking the user any "
    "further questions. Resume directly \u2014 do not acknowledge the summary, do not recap "
    'what was happening, do not preface with "I\'ll continue" or similar. Pick up the last '
    "task as if the break never happened."
)
CODEX_SUMMARY = (
    "Streaming CSV importer: read_rows() yields rows; latin-1 files open with "
    "errors='replace'. Next: test an empty file."
)


def _ts(k: int) -> str:
    return f"2025-06-0{1 + k // 10}T10:{k % 60:02d}:00Z"


def claude_code() -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    parent = None
    k = 0

    def user(text: str, **extra: object) -> None:
        nonlocal parent, k
        k += 1
        uid = f"u{k}"
        out.append(
            {
                "type": "user",
                "uuid": uid,
                "parentUuid": parent,
                "sessionId": "s1",
                "timestamp": _ts(k),
                "message": {"role": "user", "content": text},
                **extra,
            }
        )
        parent = uid

    def assistant(text: str, input_tokens: int) -> None:
        nonlocal parent, k
        k += 1
        uid = f"a{k}"
        out.append(
            {
                "type": "assistant",
                "uuid": uid,
                "parentUuid": parent,
                "sessionId": "s1",
                "timestamp": _ts(k),
                "message": {
                    "id": f"msg_{k}",
                    "role": "assistant",
                    "model": "claude-sonnet-4",
                    "content": [{"type": "text", "text": text}],
                    "usage": {"input_tokens": input_tokens, "output_tokens": 50},
                },
            }
        )
        parent = uid

    log = "2025-06-01 10:00:00 INFO importer: row parsed ok\n" * 320  # ~16 000 chars
    for turn in range(1, 7):
        user(f"Step {turn}: continue making the CSV importer stream rows. Log:\n{log}")
        assistant(f"Done with step {turn}: read_rows() changed, tests run. " * 4, 4000 * turn)
    k += 1
    out.append(
        {
            "type": "system",
            "subtype": "compact_boundary",
            "uuid": f"b{k}",
            "parentUuid": None,
            "logicalParentUuid": parent,
            "sessionId": "s1",
            "timestamp": _ts(k),
            "content": "Conversation compacted",
            "compactMetadata": {"trigger": "auto", "preTokens": 28180},
        }
    )
    parent = f"b{k}"
    user(CC_WRAPPED, isCompactSummary=True, isVisibleInTranscriptOnly=True)
    user(f"Step 7: continue making the CSV importer stream rows. Log:\n{log}")
    assistant("Done with step 7: read_rows() streams.", 4800)
    for turn in range(8, 10):
        user(f"Step {turn}: add a test for an empty file.")
        assistant(f"Step {turn} done: tests/test_importer.py passes.", 3000 + 500 * turn)
    return out


def codex() -> list[dict[str, object]]:
    def env(kind: str, payload: dict[str, object], k: int) -> dict[str, object]:
        return {"timestamp": _ts(k), "type": kind, "payload": payload}

    out = [
        env("session_meta", {"id": "sess-rec", "cwd": "/w"}, 0),
        env("turn_context", {"model": "gpt-5"}, 0),
    ]
    k = 1
    for turn in range(1, 5):
        for role, text in (
            ("user", f"Step {turn}: stream the CSV importer. "),
            ("assistant", f"Step {turn} done, read_rows() yields rows. "),
        ):
            out.append(
                env("response_item", {"type": "message", "role": role, "content": text * 50}, k)
            )
            k += 1
    out.append(env("compacted", {"message": CODEX_SUMMARY, "replacement_history": []}, k))
    for turn in range(5, 7):
        for role, text in (
            ("user", f"Step {turn}: test an empty file. "),
            ("assistant", f"Step {turn} done. "),
        ):
            k += 1
            out.append(
                env("response_item", {"type": "message", "role": role, "content": text * 20}, k)
            )
    return out


def main() -> None:
    for name, records in (
        ("claude-code-compacted.jsonl", claude_code()),
        ("codex-compacted.jsonl", codex()),
    ):
        (HERE / name).write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")


if __name__ == "__main__":
    main()
