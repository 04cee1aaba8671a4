"""The recall side of "Lost in Compaction" (``evaluate/lost_in_compaction.recall`` and
``python -m ctxlab.engine lost-in-compaction --condition``) against the local fake
OpenAI-compatible server, through the real SDK: the study's prompts after the whole
context, replicates as separate calls, the study's judge, the keyword judge, the budget."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/: the shared fakes
from fake_openai import CHAT, FakeOpenAI, Reply  # noqa: E402

from ctxlab.engine.__main__ import main  # noqa: E402
from ctxlab.engine.evaluate import lost_in_compaction as lic  # noqa: E402
from ctxlab.engine.summarize.summarizers import get_summarizer  # noqa: E402

KEY = "sk-lic-recall-4411"
CONTEXT = [
    {"role": "user", "content": "[Summary of 40 earlier messages]\n\nThe user ran a 5K."},
    {"role": "assistant", "content": "Understood. I have the context."},
    {"role": "user", "content": "Rachel moved to the suburbs last month."},
    {"role": "assistant", "content": "Good to know."},
]
FACTS = [
    {"fact_id": "F1", "question": "What was my 5K time?", "answer": "25 minutes",
     "keywords": ["25", "minutes"]},
    {"fact_id": "F2", "question": "Where did Rachel move?", "answer": "the suburbs",
     "keywords": ["suburbs"]},
]  # fmt: skip


@pytest.fixture
def study(tmp_path: Path) -> Path:
    run = tmp_path / "compaction_v5_R4_t" / "contexts"
    run.mkdir(parents=True)
    (run / "d80_C4.json").write_text(json.dumps(CONTEXT))
    meta = {"facts": FACTS, "compaction": {"facts_compacted": ["F1"]}}
    (run / "d80_C4_meta.json").write_text(json.dumps(meta))
    return tmp_path


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    with FakeOpenAI(api_key=KEY) as server:
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.delenv("CTXLAB_OPENAI_LOCAL", raising=False)
        yield server


def _answers(**given: str) -> Reply:
    return Reply.ok(json.dumps([{"id": k, "answer": v} for k, v in given.items()]))


def _verdicts(**recalled: bool) -> Reply:
    return Reply.ok(
        json.dumps([{"id": k, "recalled": v, "accurate": v} for k, v in recalled.items()])
    )


def test_recall_with_the_studys_judge_and_replicates(study: Path, fake: FakeOpenAI) -> None:
    fake.queue(
        _answers(F1="25 minutes", F2="the suburbs"), _verdicts(F1=True, F2=True),
        _answers(F1="I don't recall", F2="the suburbs"), _verdicts(F1=False, F2=True),
    )  # fmt: skip
    tree = lic.open_study(study)
    condition = lic.find_condition(tree, "d80_C4")
    llm = get_summarizer("openai", model="qwen3:8b")
    result = lic.recall(tree, condition, llm, replicates=2, questions_per_prompt=5)  # type: ignore[arg-type]
    assert [r["compacted"] for r in result.per_replicate] == [1.0, 0.0]
    assert [r["remaining"] for r in result.per_replicate] == [1.0, 1.0]
    spread = result.spread_of("all")
    assert spread is not None and (spread.n, spread.low, spread.high) == (2, 0.5, 1.0)
    sent = fake.requests_to(CHAT)
    assert len(sent) == 4  # per replicate: one question prompt (Q=5 > 2 facts), one judge
    ask = sent[0].body["messages"]
    # the study's system prompt, the whole context as history, then its question prompt
    assert ask[0] == {"role": "system", "content": lic.RECALL_SYSTEM}
    assert [m["content"] for m in ask[1:5]] == [m["content"] for m in CONTEXT]
    assert "- [F1] What was my 5K time?\n- [F2] Where did Rachel move?" in ask[-1]["content"]
    assert "Expected: 25 minutes" in sent[1].body["messages"][-1]["content"]
    assert sent[2].body == sent[0].body  # the second replicate asked again, not cached
    assert result.llm["calls"] == 4 and result.unanswered == 0


def test_recall_with_the_keyword_judge_and_a_missing_answer(study: Path, fake: FakeOpenAI) -> None:
    fake.queue(_answers(F2="They moved to the Suburbs"))  # F1 left out of the reply
    tree = lic.open_study(study)
    llm = get_summarizer("openai", model="qwen3:8b")
    result = lic.recall(
        tree, lic.find_condition(tree, "d80_C4"), llm,  # type: ignore[arg-type]
        replicates=1, questions_per_prompt=1, judge="keywords",
    )  # fmt: skip
    # Q=1: one prompt per fact; the second got the fake's default reply (no JSON array)
    assert len(fake.requests_to(CHAT)) == 2
    assert result.per_replicate[0] == {"all": 0.0, "compacted": 0.0, "remaining": 0.0}
    assert result.unanswered == 2


def test_the_command_runs_one_condition(
    study: Path, fake: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.queue(_answers(F1="25 minutes", F2="suburbs"), _verdicts(F1=True, F2=False))
    code = main(["lost-in-compaction", "--study", str(study), "--condition", "d80_C4",
                 "--model", "qwen3:8b", "--replicates", "1", "--json"])  # fmt: skip
    assert code == 0
    record = json.loads(capsys.readouterr().out)
    assert record["recall_compacted"]["mean"] == 1.0
    assert record["recall_remaining"]["mean"] == 0.0
    assert record["published_recall"] == lic.PUBLISHED_RECALL["C4"]
    assert KEY not in json.dumps(record)


def test_the_command_refuses_above_the_budget(
    study: Path, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    monkeypatch.setenv("CTXLAB_OPENAI_LOCAL", "0")  # priced as the remote model it names
    code = main(["lost-in-compaction", "--study", str(study), "--condition", "d80_C4",
                 "--model", "gpt-4o", "--budget-usd", "0.0001"])  # fmt: skip
    assert code == 2 and "above --budget-usd" in capsys.readouterr().err
    code = main(["lost-in-compaction", "--study", str(study), "--condition", "d80_C4",
                 "--model", "no-such-model-x"])  # fmt: skip
    assert code == 2 and "no price is known" in capsys.readouterr().err
    assert fake.requests == []  # nothing sent
