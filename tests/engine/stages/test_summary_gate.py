"""The summary quality gate's questions, answers and texts (``stages.summary_gate``)."""

from __future__ import annotations

import pytest
from builders import assistant, call, tool_result, user

from ctxlab.engine.core.model import Message
from ctxlab.engine.evaluate import extract
from ctxlab.engine.stages import summary_gate as gate
from ctxlab.engine.stages.summary_gate import Question
from ctxlab.engine.strategies.custom import Custom, check_stages

SPAN: list[Message] = [
    user("Never touch the migrations folder. Fix the crash in src/app/loader.py please."),
    call("t1", "bash", cmd="pytest tests/test_loader.py -x"),
    tool_result("t1", "FAILED tests/test_loader.py::test_load - KeyError: 'user_id'"),
    assistant("I'll use parse_config_file instead of the regex loader; it takes 300 ms."),
]


def span(messages: list[Message]) -> list[tuple[int, Message]]:
    return list(enumerate(messages, start=1))


def test_questions_come_from_the_facts_the_survival_analysis_extracts() -> None:
    asked = gate.ask(span(SPAN), (), 50)
    found = {(q.kind, q.value) for q in asked}
    assert ("paths", "src/app/loader.py") in found
    assert ("commands", "pytest tests/test_loader.py -x") in found
    assert ("identifiers", "parse_config_file") in found
    assert ("numbers", "300 ms") in found
    assert any(kind == "instructions" and "migrations" in value for kind, value in found)
    assert any(kind == "decisions" and "parse_config_file" in value for kind, value in found)
    assert any(kind == "errors" and "KeyError" in value for kind, value in found)
    # every fact of the span, once (the extractor's own set)
    every = set().union(*(extract.message_facts(m) for m in SPAN))
    assert {(q.kind, q.value) for q in asked if q.kind != "decisions"} == every


def test_at_most_max_questions_spread_over_the_kinds_in_order() -> None:
    asked = gate.ask(span(SPAN), (), 4)
    assert [q.kind for q in asked] == ["instructions", "paths", "identifiers", "decisions"]
    assert gate.ask(span(SPAN), (), 4) == asked  # deterministic


def test_a_fact_the_kept_messages_still_hold_is_not_asked() -> None:
    kept = [user("Still working on src/app/loader.py")]
    asked = gate.ask(span(SPAN), kept, 50)
    assert ("paths", "src/app/loader.py") not in {(q.kind, q.value) for q in asked}
    assert ("paths", "src/app/loader.py") in {
        (q.kind, q.value) for q in gate.ask(span(SPAN), (), 50)
    }


def test_tool_output_is_read_up_to_500_characters() -> None:
    late = "x" * 600 + " see src/late/only_here.py"
    messages = [call("t1", "bash", cmd="ls"), tool_result("t1", late)]
    values = {q.value for q in gate.ask(span(messages), (), 50)}
    assert "src/late/only_here.py" not in values
    early = "see src/early/here.py " + "x" * 600
    messages = [call("t1", "bash", cmd="ls"), tool_result("t1", early)]
    assert "src/early/here.py" in {q.value for q in gate.ask(span(messages), (), 50)}


def test_a_recurring_fact_is_asked_before_a_newer_single_one() -> None:
    messages = [
        user("look at src/a.py"),
        user("and src/a.py again"),
        user("then src/b.py"),
    ]
    paths = [q.value for q in gate.ask(span(messages), (), 50) if q.kind == "paths"]
    assert paths == ["src/a.py", "src/b.py"]


def test_the_summary_answers_by_the_survival_rule() -> None:
    asked = (
        Question("paths", "src/app/loader.py", 1),
        Question("identifiers", "parse_config_file", 4),
        Question("instructions", "Never touch the migrations folder.", 1),
        Question("numbers", "300 ms", 4),
    )
    # the path word for word, the instruction paraphrased; the identifier and number absent
    summary = "Fixed src/app/loader.py. The migrations folder must never be touched."
    verdict = gate.judge(asked, summary, 0.6)
    assert [q.value for q in verdict.missed] == ["parse_config_file", "300 ms"]
    assert verdict.score == 0.5
    assert not verdict.passed
    assert verdict.words() == "summary rejected: 2 of 4 facts missing"
    assert gate.judge(asked, summary, 0.5).passed
    assert gate.judge(asked, summary, 0.5).words() == "summary checked: 2 of 4 facts missing"


def test_fewer_than_two_questions_is_no_opinion() -> None:
    verdict = gate.judge((Question("paths", "src/a.py", 1),), "nothing", 1.0)
    assert verdict.score is None
    assert verdict.passed


def test_the_appendix_makes_the_summary_keep_every_missed_fact() -> None:
    asked = gate.ask(span(SPAN), (), 50)
    verdict = gate.judge(asked, "A summary that says nothing concrete.", 0.6)
    assert len(verdict.missed) == len(asked) > 5
    amended = f"A summary that says nothing concrete.\n\n{gate.appendix(verdict.missed)}"
    assert gate.judge(asked, amended, 1.0).missed == ()
    assert gate.appendix(verdict.missed).startswith(gate.APPENDIX_HEADING)
    assert "$ pytest tests/test_loader.py -x" in gate.appendix(verdict.missed)


def test_must_keep_lists_the_missed_facts_by_kind() -> None:
    text = gate.must_keep((Question("paths", "src/a.py", 1), Question("commands", "ls -la", 2)))
    assert text.splitlines() == [
        gate.MUST_KEEP_HEADING,
        "- paths: src/a.py",
        "- commands: $ ls -la",
    ]


def test_the_event_detail_masks_secrets_and_lists_a_few() -> None:
    secret = "export OPENAI_API_KEY=sk-proj-" + "a1B2c3D4e5F6g7H8i9J0" * 3
    missed = tuple(Question("commands", secret, 1) for _ in range(12))
    detail = gate.Verdict(missed, missed, 0.6).detail()
    assert detail["asked"] == detail["missing"] == 12
    assert len(detail["missed"]) == gate.MISSED_SHOWN
    assert "a1B2c3D4e5F6g7H8i9J0" not in str(detail)


# --- the stage's options (custom.check_stages) ---------------------------------------------
SUMMARISE = {"stage": "summarise", "keep_tokens": 300}


def test_the_gate_fills_its_defaults() -> None:
    stages = check_stages([SUMMARISE, {"stage": "summary_gate"}])
    assert stages[1] == {
        "stage": "summary_gate",
        "min_score": 0.6,
        "max_questions": 10,
        "on_reject": "accept_with_appendix",
    }


@pytest.mark.parametrize(
    ("gate_options", "message"),
    [
        ({"min_score": 1.5}, r"'min_score' must be <= 1.0"),
        ({"min_score": -0.1}, r"'min_score' must be >= 0.0"),
        ({"min_score": float("nan")}, r"'min_score' must be a finite number"),
        ({"min_score": True}, r"'min_score' must be a number"),
        ({"min_score": "high"}, r"'min_score' must be a number"),
        ({"max_questions": 1}, r"'max_questions' must be >= 2"),
        ({"max_questions": 201}, r"'max_questions' must be <= 200"),
        ({"max_questions": 2.5}, r"'max_questions' must be an integer"),
        ({"on_reject": "ignore"}, r"'on_reject' must be one of accept_with_appendix, retry"),
    ],
)
def test_the_gate_checks_its_options(gate_options: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Custom({"stages": [SUMMARISE, {"stage": "summary_gate", **gate_options}]})


def test_an_integer_min_score_is_a_number() -> None:
    assert Custom({"stages": [SUMMARISE, {"stage": "summary_gate", "min_score": 1}]}).gate


def test_one_gate_and_only_with_a_summarise_stage() -> None:
    with pytest.raises(ValueError, match="at most one summary_gate"):
        check_stages([SUMMARISE, {"stage": "summary_gate"}, {"stage": "summary_gate"}])
    with pytest.raises(ValueError, match="summary_gate needs a summarise stage"):
        check_stages([{"stage": "drop_oldest_turns"}, {"stage": "summary_gate"}])
