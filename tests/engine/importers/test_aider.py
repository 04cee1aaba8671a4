from __future__ import annotations

from pathlib import Path

import pytest

from ctxlab.engine import importers
from ctxlab.engine.core.model import ParsedFile, Role, TranscriptError
from ctxlab.engine.importers import aider

DIR = Path(__file__).parents[2] / "data" / "corpus" / "aider"
REPO = "aider-repo-chat-history.md"
EXAMPLE = "aider-example-complex-change.md"


@pytest.fixture(scope="module")
def repo() -> ParsedFile:
    return aider.parse((DIR / REPO).read_bytes(), name=REPO)


def test_aider_repo_history_one_conversation_per_session() -> None:
    data = (DIR / REPO).read_bytes()
    assert importers.detect(data, REPO) == "aider"
    parsed = importers.parse(data, name=REPO)
    convs = parsed.conversations
    # 1,133 "# aider chat started at" sessions, plus conversation #0: the fixture starts in
    # the middle of an earlier session (lint output and a '####' prompt before the first
    # header), kept rather than dropped.
    assert len(convs) == 1134
    assert convs[0].title.startswith("before the first session header")
    assert sum(1 for c in convs if dict(c.metadata).get("started_at")) == 1133
    # The manifest counts 2,773 messages / 816 calls / 2,816 results with its own heuristic;
    # here every run of '####' lines (user), reply text (assistant) and '>' output (tool)
    # is a message, and aider's output is a tool_result without a call (aider ran it).
    totals = (
        sum(len(c.messages) for c in convs),
        sum(c.tool_call_count for c in convs),
        sum(c.tool_result_count for c in convs),
    )
    assert totals == (5195, 0, 2627)
    roles = [m.role for c in convs for m in c.messages]
    assert (roles.count(Role.USER), roles.count(Role.ASSISTANT)) == (1551, 1017)
    assert parsed.warnings == ()


@pytest.mark.parametrize(
    ("index", "expected", "title", "model"),
    [
        pytest.param(
            1, (1, 0, 1), "2024-08-05 19:33:02", "claude-3-5-sonnet-20240620", id="banner"
        ),
        pytest.param(
            2,
            (5, 0, 2),
            "2024-08-05 19:33:32 · Use the Spinner instead of the inlined custom spinner",
            "claude-3-5-sonnet-20240620",
            id="edit",
        ),
        pytest.param(
            1133,
            (3, 0, 1),
            "2024-08-22 08:47:04 · update the message",
            "claude-3-5-sonnet-20240620",
            id="last",
        ),
    ],
)
def test_aider_repo_history_sessions(
    repo: ParsedFile, index: int, expected: tuple[int, int, int], title: str, model: str
) -> None:
    conv = repo.conversations[index]
    assert (len(conv.messages), conv.tool_call_count, conv.tool_result_count) == expected
    assert conv.title.startswith(title)
    assert conv.model == model
    assert conv.id == f"{REPO}#{index}"


def test_aider_session_roles_usage_and_edit_blocks(repo: ParsedFile) -> None:
    conv = repo.conversations[2]
    banner, user, reply, report = conv.messages[:4]
    assert banner.role is Role.TOOL and banner.tool_results[0].raw_type == "aider_output"
    assert banner.timestamp == "2024-08-05T19:33:32" and banner.source.line == 105
    assert (user.role, user.text) == (
        Role.USER,
        "Use the Spinner instead of the inlined custom spinner",
    )
    assert reply.role is Role.ASSISTANT and "<<<<<<< SEARCH" in reply.text
    assert ">>>>>>> REPLACE" in reply.text
    assert reply.usage is not None
    assert (reply.usage.input_uncached, reply.usage.output, reply.usage.convention) == (
        5244,
        604,
        "aider",
    )
    assert report.text.startswith("Tokens: 5,244 sent, 604 received.")


def test_aider_website_example() -> None:
    data = (DIR / EXAMPLE).read_bytes()
    assert importers.detect(data, EXAMPLE) == "aider"
    (conv,) = aider.parse(data, name=EXAMPLE).conversations
    # Manifest: 27 messages, 0 calls, 9 results; the 9 '>' outputs match, the message split
    # differs by one (28 here: 10 user, 9 assistant, 9 tool runs).
    assert (len(conv.messages), conv.tool_call_count, conv.tool_result_count) == (28, 0, 9)
    assert [m.role for m in conv.messages].count(Role.USER) == 10
    assert not any("<div" in m.text or "</div>" in m.text for m in conv.messages)
    assert "complex multi-file change" in dict(conv.metadata)["page_prose"]
    assert conv.messages[0].text.startswith("$ aider tests/test_main.py")


@pytest.mark.parametrize(
    ("text", "roles"),
    [
        pytest.param(
            "#### hi  \n\nhello\n\n> Tokens: 1.2k sent, 3 received.  \n",
            [Role.USER, Role.ASSISTANT, Role.TOOL],
            id="basic",
        ),
        # a quote or header inside a reply (no hard break) stays assistant text
        pytest.param(
            "#### hi  \n\nreply\n> quoted\n#### Header\n",
            [Role.USER, Role.ASSISTANT],
            id="markdown-in-reply",
        ),
        # ...but aider's own lines (hard break) end the reply, even inside an open fence
        pytest.param(
            "#### hi  \n\n```python\nx = 1\n\n> ^C KeyboardInterrupt  \n\n#### next  \n",
            [Role.USER, Role.ASSISTANT, Role.TOOL, Role.USER],
            id="interrupted-fence",
        ),
    ],
)
def test_aider_line_roles(text: str, roles: list[Role]) -> None:
    conv = aider.parse(text.encode(), name="h.md").conversations[0]
    assert [m.role for m in conv.messages] == roles


def test_aider_rounded_token_report() -> None:
    text = "#### q  \n\nanswer\n\n> Tokens: 12.7k sent, 1.3k cache write, 2k cache hit, 144 received.  \n"
    (conv,) = aider.parse(text.encode(), name="h.md").conversations
    usage = conv.messages[1].usage
    assert usage is not None
    assert (usage.input_uncached, usage.cache_write_5m, usage.cache_read, usage.output) == (
        9400,
        1300,
        2000,
        144,
    )
    assert usage.prompt_tokens == 12700


def test_aider_text_without_sessions_is_an_error() -> None:
    with pytest.raises(TranscriptError, match="no aider session header") as info:
        aider.parse(b"# Title\n\nsome markdown\n> a quote\n", name="notes.md")
    assert "notes.md" in str(info.value)


def test_aider_model_only_from_aider_announcements(repo: ParsedFile) -> None:
    # Session 644 runs a script whose output prints "Models: ['claude-3-opus-20240229', ...]":
    # that list is the program's, not the model aider announced (and it was taken as the
    # model "['claude-3-opus-20240229',"). Later sessions append ⚡ (prompt caching) to the
    # announced name: a marker, not part of the model id.
    assert repo.conversations[644].model == "claude-3-5-sonnet-20240620"
    assert repo.conversations[809].model == "anthropic/claude-3-haiku-20240307"
    assert not any(c.model.startswith(("[", "{", "(", "'", '"')) for c in repo.conversations)
    assert not any("⚡" in c.model or "∞" in c.model for c in repo.conversations)
    text = (
        "# aider chat started at 2024-08-01 10:00:00\n\n"
        "> Main model: openrouter/deepseek/deepseek-coder ∞ with diff edit format  \n\n"
        "#### run it  \n\nok\n\n> Models: ['gpt-4', 'gpt-4o']  \n"
    )
    (conv,) = aider.parse(text.encode(), name="h.md").conversations
    assert conv.model == "openrouter/deepseek/deepseek-coder"
