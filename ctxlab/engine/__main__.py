"""``python -m ctxlab.engine replay --file PATH --strategy NAME ...``: the engine alone.

``replay --list-strategies [--json]`` prints every strategy with its window parameter (what
``--window`` sets) and the parameters that follow it.

The same replay and the same JSON as ``manage.py replay --file`` (both call
``ctxlab.engine.cli``), without starting Django: a few tenths of a second instead of more
than a second. Stored transcripts, saved configurations, sweeps and the Claude summariser
need the database: use ``manage.py replay`` for those. ``--summarizer openai --model NAME``
sends each summary request to an OpenAI-compatible endpoint (``OPENAI_BASE_URL``,
``OPENAI_API_KEY``), cached in memory for the run.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from . import cli
from .core.model import TranscriptError
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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
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
