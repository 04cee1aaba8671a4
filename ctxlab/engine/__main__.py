"""``python -m ctxlab.engine replay --file PATH --strategy NAME ...``: the engine alone.

``replay --list-strategies [--json]`` prints every strategy with its window parameter (what
``--window`` sets) and the parameters that follow it.

The same replay and the same JSON as ``manage.py replay --file`` (both call
``ctxlab.engine.cli``), without starting Django: a few tenths of a second instead of more
than a second. Stored transcripts, saved configurations, sweeps and the Claude summariser
need the database: use ``manage.py replay`` for those. ``--summarizer openai --model NAME``
sends each summary request to an OpenAI-compatible endpoint (``OPENAI_BASE_URL``,
``OPENAI_API_KEY``), cached in memory for the run.

``lost-in-compaction --study PATH`` prints the grep table of the "Lost in Compaction" study
from its published contexts; with ``--condition RUN/dN_CL --summarizer openai|anthropic
--model NAME`` it runs the study's recall side with that model (docs/lost-in-compaction.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from . import cli
from .core.model import TranscriptError
from .core.summary_request import SummarizerError
from .summarize.adapters.openai_summarizer import OpenAISummarizer
from .summarize.summarizers import NEEDS_MODEL, SUMMARIZERS, get_summarizer


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m ctxlab.engine", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    replay = commands.add_parser(
        "replay", help="replay a transcript file through a strategy and print what it did"
    )
    replay.add_argument("--file", metavar="PATH", help="a transcript file")
    cli.add_replay_arguments(replay)
    replay.add_argument(
        "--summarizer", default="offline", choices=sorted(SUMMARIZERS),
        help="openai: an OpenAI-compatible endpoint (OPENAI_BASE_URL / OPENAI_API_KEY) with "
        "--model; Claude needs the database (manage.py replay)",
    )  # fmt: skip
    lic = commands.add_parser(
        "lost-in-compaction",
        help="the 'Lost in Compaction' study (profff/lost-in-compaction): its grep table from "
        "the published contexts, or with --condition its recall side with a model",
    )
    lic.add_argument("--study", required=True, metavar="PATH", help="a clone of the study")
    lic.add_argument(
        "--condition", metavar="RUN/dN_CL",
        help="recall side for one condition, e.g. compaction_v5_R4_20260224_1353/d80_C4",
    )  # fmt: skip
    lic.add_argument("--summarizer", choices=("openai", "anthropic"), default="openai")
    lic.add_argument("--model", default=None, help="the model that answers and judges")
    lic.add_argument("--openai-api", choices=("chat", "responses"), default="chat")
    lic.add_argument("--replicates", type=int, default=3)
    lic.add_argument("-q", "--questions-per-prompt", type=int, default=5, help="the paper's Q")
    lic.add_argument("--judge", choices=("model", "keywords"), default="model")
    lic.add_argument("--limit", type=int, default=None, help="only the first N facts")
    lic.add_argument(
        "--budget-usd", type=float, default=5.0,
        help="refuse when the estimated cost is above this (default 5)",
    )  # fmt: skip
    lic.add_argument(
        "--unpriced", action="store_true",
        help="run a remote model whose price ctxlab does not know (no cost estimate)",
    )  # fmt: skip
    lic.add_argument("--json", action="store_true", help="print JSON")
    return parser


def _lost_in_compaction(args: argparse.Namespace) -> int:
    from decimal import Decimal

    from .evaluate import lost_in_compaction as lic
    from .summarize.adapters.anthropic_summarizer import AnthropicSummarizer

    try:
        tree = lic.open_study(Path(args.study))
        if not args.condition:
            rows = lic.table(lic.grep_all(tree))
            if args.json:
                print(json.dumps([r.as_dict() for r in rows], ensure_ascii=False))
            else:
                print(lic.format_table(rows))
            return 0
        condition = lic.find_condition(tree, args.condition)
        if args.summarizer == "anthropic":
            llm: lic.Asker = (
                AnthropicSummarizer(model=args.model) if args.model else AnthropicSummarizer()
            )
        else:
            llm = get_summarizer("openai", model=args.model, api=args.openai_api)  # type: ignore[assignment]
        calls, tokens, usd = lic.estimate_usd(
            llm, tree, condition, replicates=args.replicates, q=args.questions_per_prompt,
            judge=args.judge, limit=args.limit,
        )  # fmt: skip
        if usd is None and not args.unpriced:
            print(f"error: no price is known for {llm.model}: {calls} calls of ~{tokens:,} "
                  "tokens each; check its price and pass --unpriced, or use a priced or "
                  "local model", file=sys.stderr)  # fmt: skip
            return 2
        if usd is not None and usd > Decimal(str(args.budget_usd)):
            print(f"error: {calls} calls of ~{tokens:,} tokens each are estimated at "
                  f"${usd:.2f}, above --budget-usd {args.budget_usd}", file=sys.stderr)  # fmt: skip
            return 2
        result = lic.recall(
            tree, condition, llm, replicates=args.replicates,
            questions_per_prompt=args.questions_per_prompt, judge=args.judge, limit=args.limit,
        )  # fmt: skip
    except (TranscriptError, ValueError, OSError, SummarizerError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    record = result.as_dict()
    if args.json:
        print(json.dumps(record, ensure_ascii=False))
        return 0
    for zone in ("all", "compacted", "remaining"):
        described = result.spread_of(zone)
        print(f"recall {zone:<10} {'-' if described is None else described.text(3)}")
    published = lic.PUBLISHED_RECALL.get(condition.level)
    low, high = lic.PUBLISHED_RECALL_ZONE[condition.level]
    print(f"published (Haiku 4.5, Q=5, d80): all {published}, compacted zone {low}-{high}")
    print(cli.llm_line(llm.model, llm.totals(), local=bool(getattr(llm, "local", False))))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "lost-in-compaction":
        return _lost_in_compaction(args)
    if args.list_strategies:
        print(cli.library_listing(as_json=args.json is not None))
        return 0
    if not (args.file and args.strategy):
        parser.error("replay needs --file PATH and --strategy NAME (or --list-strategies)")
    try:
        conversation = cli.load_file(args.file, format=args.format, conversation=args.conversation)
        if warning := cli.window_warning(conversation, args.window):
            print(warning, file=sys.stderr)
        summarizer = args.summarizer
        if summarizer in NEEDS_MODEL:
            summarizer = get_summarizer(
                summarizer, model=args.model, api=args.openai_api, stream=args.stream
            )
        result = cli.replay_conversation(
            conversation,
            strategy=args.strategy,
            assignments=args.assignments,
            summarizer=summarizer,
            window=args.window,
        )
    except (TranscriptError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    llm = summarizer if isinstance(summarizer, OpenAISummarizer) else None
    if args.json:
        record = cli.result_to_json(result, detail=args.detail)
        if llm is not None:
            record["llm"] = {"model": llm.model, "base_url": llm.endpoint, "local": llm.local,
                             **llm.totals()}  # fmt: skip
        data = json.dumps(record, ensure_ascii=False)
        if args.json == "-":
            print(data)
            return 0
        Path(args.json).write_text(data, encoding="utf-8")
    print(cli.format_table(result))
    if llm is not None:
        print(cli.llm_line(f"{llm.model} at {llm.endpoint}", llm.totals(), local=llm.local))
    if args.json:
        print(f"\nJSON written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
