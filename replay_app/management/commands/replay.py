"""``manage.py replay``: replay a transcript through a strategy and print what it did.

Thin shell: the logic lives in ``ctxlab.engine.cli``. ``--file`` needs no database.
``--list-strategies [--json]`` prints the library with each strategy's window parameter.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ctxlab.engine import cli
from ctxlab.engine.core.model import Conversation, TranscriptError
from ctxlab.engine.summarize.summarizers import SUMMARIZERS


def _load_stored(transcript_id: str) -> Conversation:
    """The seam to stored transcripts (``sessions_app.services.load_conversation``)."""
    try:
        from sessions_app.services import load_conversation
    except ImportError as exc:
        raise CommandError(
            "--transcript needs sessions_app.services.load_conversation, which is not "
            f"available in this build ({exc}); use --file PATH instead"
        ) from None
    try:
        return load_conversation(int(transcript_id))
    except Exception as exc:  # DoesNotExist, bad id ...
        raise CommandError(f"transcript {transcript_id!r}: {exc}") from None


def _save(options: dict[str, Any]) -> str:
    """``--save``: a stored run via replay_app (same service path as the web)."""
    from replay_app.management.cli import describe, save_run

    if not (options["save"] and options["transcript"]):
        raise CommandError("--save and --config need --transcript ID (and each other)")
    if options["sweep"]:
        return _save_sweep(options)
    try:
        run = save_run(
            transcript_id=options["transcript"], strategy=options["strategy"],
            config_name=options["config"], assignments=options["assignments"],
            summarizer=options["summarizer"], model=options.get("model"),
            window=options.get("window"), api=options["openai_api"], stream=options["stream"],
        )  # fmt: skip
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    if run.status != "done":
        raise CommandError(describe(run))
    return describe(run)


def _save_sweep(options: dict[str, Any]) -> str:
    """``--sweep key=v1,v2 --save``: a sweep group (same path as /runs/sweep/new/)."""
    from replay_app.management.cli import describe_sweep, save_sweep

    try:
        group, runs = save_sweep(
            transcript_id=options["transcript"], strategy=options["strategy"],
            config_name=options["config"], sweep_text=options["sweep"],
            assignments=options["assignments"], summarizer=options["summarizer"],
            model=options.get("model"), window=options.get("window"),
            api=options["openai_api"], stream=options["stream"],
        )  # fmt: skip
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    text = describe_sweep(group, runs)
    if any(run.status != "done" for run in runs):
        raise CommandError(text)
    return text


def _stored_window_warnings(options: dict[str, Any]) -> list[str]:
    """``--window`` below a stored transcript's fixed part (as the run form warns)."""
    if options.get("window") is None or not str(options.get("transcript") or "").isdigit():
        return []
    from replay_app.runs.transcript_picker import window_warnings
    from sessions_app.models import Transcript

    found = list(Transcript.objects.filter(pk=int(options["transcript"])))
    return window_warnings(found, options["window"])


def _summarizer(options: dict[str, Any]) -> tuple[Any, Any]:
    """The summariser for a file/stored replay: a name, or a model one (Claude, an
    OpenAI-compatible endpoint) with the DB cache."""
    from replay_app.costs import llm

    provider = options["summarizer"]
    if provider not in llm.PROVIDERS:
        return provider, None
    from ctxlab.engine.cost.pricing import find_model

    if not llm.key_available(provider):
        raise ValueError(llm.no_key_message(provider))
    if provider == "openai":
        if not options["model"]:
            raise ValueError(
                "--summarizer openai needs --model NAME (the name the endpoint serves)"
            )
        inner = llm.make_llm(
            "openai", options["model"], api=options["openai_api"], stream=options["stream"]
        )
    else:
        model = options["model"] or llm.default_model()
        if model not in llm.summary_models() and find_model(model) is None:
            raise ValueError(f"no price known for model {model!r}")
        inner = llm.make_anthropic(model=model)
    metered = llm.MeteredSummarizer(inner)
    return metered, metered


class Command(BaseCommand):
    help = (
        "Replay a transcript through a compaction strategy: prints steps, events by kind, "
        "peak tokens and findings; --json OUT writes the full record."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        cli.add_replay_arguments(
            parser, window_help="; with --sweep, --sweep window=V1,V2 sweeps it"
        )
        # Required unless --list-strategies (checked in handle).
        source = parser.add_mutually_exclusive_group()
        source.add_argument("--transcript", metavar="ID", help="a stored transcript")
        source.add_argument("--file", metavar="PATH", help="a transcript file (no database)")
        parser.add_argument("--config", metavar="NAME", help="a saved configuration (with --save)")
        parser.add_argument(
            "--save", action="store_true",
            help="store a run of a --transcript (same path as the web) and print its URL",
        )  # fmt: skip
        parser.add_argument(
            "--sweep", metavar="KEY=V1,V2,...",
            help="with --save: one run per value of a numeric parameter (2-12 values, or "
            "KEY=START:STOP:STEP), stored as one comparison group with a sweep table",
        )  # fmt: skip
        parser.add_argument(
            "--summarizer", default="offline", choices=sorted({*SUMMARIZERS, "anthropic"}),
            help="anthropic: Claude via ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL; openai: any "
            "OpenAI-compatible endpoint via OPENAI_BASE_URL / OPENAI_API_KEY with --model NAME "
            "(environment only); summaries are cached in the database, so a rerun never pays "
            "twice",
        )  # fmt: skip

    def handle(self, *args: Any, **options: Any) -> None:
        if options["list_strategies"]:
            self.stdout.write(cli.library_listing(as_json=options["json"] is not None))
            return
        if not (options["transcript"] or options["file"]):
            raise CommandError("give --transcript ID or --file PATH (or --list-strategies)")
        if options["sweep"] and not options["save"]:
            raise CommandError("--sweep needs --save (and --transcript ID)")
        if options["save"] or options["config"]:
            for warning in _stored_window_warnings(options):
                self.stderr.write(f"warning: {warning}")
            self.stdout.write(_save(options))
            return
        if not options["strategy"]:
            raise CommandError("--strategy is required (or --config NAME --save)")
        try:
            if options["file"]:
                conversation = cli.load_file(
                    options["file"], format=options["format"], conversation=options["conversation"]
                )
            else:
                conversation = _load_stored(options["transcript"])
            if warning := cli.window_warning(conversation, options["window"]):
                self.stderr.write(warning)
            summarizer, metered = _summarizer(options)
            result = cli.replay_conversation(
                conversation,
                strategy=options["strategy"],
                assignments=options["assignments"],
                summarizer=summarizer,
                window=options["window"],
            )
        except (TranscriptError, ValueError, OSError) as exc:
            raise CommandError(str(exc)) from None
        if options["json"]:
            record = cli.result_to_json(result, detail=options["detail"])
            if metered is not None:
                record["llm"] = {"model": metered.model, **metered.totals()}
            data = json.dumps(record, ensure_ascii=False)
            if options["json"] == "-":
                self.stdout.write(data)
                return
            Path(options["json"]).write_text(data, encoding="utf-8")
        self.stdout.write(cli.format_table(result))
        if metered is not None:
            from replay_app.costs import llm

            label = llm.summarizer_label(options["summarizer"], metered.model)
            local = bool(getattr(metered.inner, "local", False))
            self.stdout.write(cli.llm_line(label, metered.totals(), local=local))
        if options["json"]:
            self.stdout.write(f"\nJSON written to {options['json']}")
