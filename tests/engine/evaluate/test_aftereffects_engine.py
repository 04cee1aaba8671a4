"""aftereffects.py: what the agent did after its real compactions, on hand-built sessions
whose answers are known, and on a real corpus transcript with a compaction."""

from __future__ import annotations

from pathlib import Path

from builders import assistant, call, system, tool_result, user

from ctxlab.engine import importers
from ctxlab.engine.core.model import Conversation, OriginalCompaction
from ctxlab.engine.evaluate import aftereffects

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"

BEFORE = (
    system("You are an agent."),
    user("Fix the parser in src/parse.py"),  # 1
    call("r1", "Read", file_path="/repo/src/parse.py"),  # 2
    tool_result("r1", "def parse(): ..."),  # 3
    call("b1", "Bash", command="pytest -q tests/test_parse.py"),  # 4
    tool_result("b1", "1 failed"),  # 5
    call("e1", "Edit", file_path="/repo/src/lexer.py", old_string="a", new_string="b"),  # 6
    tool_result("e1", "ok"),  # 7
)
SUMMARY = user("This session is being continued ... summary", flags=frozenset({"compact_summary"}))
AFTER = (
    assistant("I apologize, I don't have the context of the earlier work. What would you like me to do next?"),  # 9
    user("continue fixing the parser"),  # 10
    call("g1", "Grep", pattern="parse"),  # 11: touches no file
    tool_result("g1", "src/parse.py"),  # 12
    call("r2", "Read", file_path="src/parse.py"),  # 13: re-read (relative spelling)
    tool_result("r2", "def parse(): ..."),  # 14
    call("b2", "Bash", command="pytest -q tests/test_parse.py"),  # 15: repeated
    tool_result("b2", "ok"),  # 16
    call("b3", "Bash", command="cat src/new.py"),  # 17: read, but never read before
    tool_result("b3", ""),  # 18
)  # fmt: skip


def _conversation(*compactions: OriginalCompaction) -> Conversation:
    return Conversation("t", "t", (*BEFORE, SUMMARY, *AFTER), compactions=compactions)


def test_after_effects_have_the_known_answers() -> None:
    conv = _conversation(OriginalCompaction(8, "compact_boundary", "auto", 150_000, 8))
    (effect,) = aftereffects.analyse(conv)
    assert effect.files_reread == ("src/parse.py",)
    assert effect.commands_repeated == ("pytest -q tests/test_parse.py",)
    assert effect.questions == ("What would you like me to do next?",)
    assert effect.apologies == ("I apologize, I don't have the context of the earlier work",)
    # turns: 9 (text), 11 (grep), 13 (read src/parse.py): the third assistant turn
    assert effect.turns_to_same_files == 3 and effect.first_touch == "src/parse.py"
    assert effect.turns == 5
    report = aftereffects.report(conv)
    assert report["summary"] == {
        "compactions": 1, "files_reread": 1, "commands_repeated": 1, "questions": 1,
        "apologies": 1, "turns_to_same_files": 3, "never_returned": 0,
    }  # fmt: skip


def test_window_and_next_compaction_bound_what_is_read() -> None:
    conv = _conversation(OriginalCompaction(8, "compact_boundary", "auto", None, 8))
    (effect,) = aftereffects.analyse(conv, window=2)  # turns 9 and 11 only
    assert effect.turns == 2 and effect.files_reread == () and effect.commands_repeated == ()
    assert effect.turns_to_same_files is None and effect.first_touch == ""
    # a second compaction at 13: the first one's window ends there
    conv = _conversation(
        OriginalCompaction(8, "compact_boundary", "auto", None, 8),
        OriginalCompaction(13, "compact_boundary", "manual", None, None),
    )
    first, second = aftereffects.analyse(conv)
    assert first.turns == 2 and first.files_reread == ()
    assert second.files_reread == ("src/parse.py",) and second.turns_to_same_files == 1
    assert second.trigger == "manual"
    assert aftereffects.summary([first, second])["never_returned"] == 1


def test_never_returned_only_counts_compactions_after_file_work() -> None:
    talk = Conversation("t", "t", (user("hi there, tell me a story"), SUMMARY, assistant("Once upon a time")),
                        compactions=(OriginalCompaction(1, "compact_boundary", "auto", None, 1),))  # fmt: skip
    (effect,) = aftereffects.analyse(talk)
    assert effect.files_before == 0 and effect.turns_to_same_files is None
    assert aftereffects.summary([effect])["never_returned"] == 0


def test_no_compaction_no_after_effects() -> None:
    report = aftereffects.report(_conversation())
    assert report["compactions"] == [] and report["summary"]["compactions"] == 0
    assert report["summary"]["turns_to_same_files"] is None


def test_real_corpus_transcript_with_a_compaction() -> None:
    path = CORPUS / "api-cassettes" / "pydanticai-test_anthropic_compaction_end_to_end.json"
    conv = importers.parse(path.read_bytes(), name=path.name).conversations[0]
    assert conv.compactions
    report = aftereffects.report(conv)
    (row,) = report["compactions"]
    assert row["kind"] == "server_compaction" and row["turns"] >= 1
    assert row["files_reread"] == [] and row["question_count"] == 0
