"""``manage.py suite create|run|status|results|cancel|list``: suites from the command line.

    suite create NAME --transcripts 3,4,5 --preset qwenpaw --preset codex --window 32000
    suite create NAME --format claude-code --min-messages 50 --grid-base qwenpaw \\
        --grid max_input_length=16000,32000 --grid compact_threshold_ratio=0.6:0.8:0.1
    suite run NAME [--wait]          queue what is not finished (resume); with the in-memory
                                     broker the runs execute here, on an embedded worker
    suite status NAME [--json]       done/failed/remaining and ETA
    suite results NAME [--json|--csv]
    suite report NAME [--out FILE]   the results as one self-contained HTML file
                                     (suites_app/report.py; default ctxlab-suite-<id>.html,
                                     - = stdout), as ``manage.py report --suite`` writes it

Every subcommand takes ``--user`` (default: the local account) and ``--json`` prints one
JSON object for scripts. The same services and validation as the web form.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from sessions_app.management.commands._owner import resolve_owner
from sessions_app.models import Transcript
from suites_app import configs, report, results, services
from suites_app.configs import Base, SuiteInputError
from suites_app.forms import filter_transcripts
from suites_app.models import Suite
from suites_app.progress import suite_progress_data
from suites_app.replay_glue import SUMMARIZERS, LLMOptions, StrategyConfig


def _llm_options(options: dict[str, Any]) -> LLMOptions | None:
    """``--summarizer openai --model NAME [--openai-api responses]`` as the run options."""
    if options["summarizer"] != "openai":
        return None
    if not options["model"]:
        raise CommandError("--summarizer openai needs --model NAME (the name the endpoint serves)")
    return LLMOptions(model=options["model"], api=options["openai_api"])


class Command(BaseCommand):
    help = "Create, run and read suites (many transcripts × many configurations)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "action", choices=["create", "run", "status", "results", "report", "cancel", "list"]
        )
        parser.add_argument("name", nargs="?", default="", help="suite name or id")
        parser.add_argument("--user", help="owner (default: the local account)")
        parser.add_argument("--json", action="store_true", help="print JSON")
        parser.add_argument("--csv", action="store_true", help="results as CSV")
        parser.add_argument("-o", "--out", default="", help="report: file to write (- = stdout)")
        group = parser.add_argument_group("create: transcripts")
        group.add_argument("--transcripts", default="", help="ids: 3,4,5")
        group.add_argument("--all-transcripts", action="store_true")
        group.add_argument("--format", default="", help="only this format")
        group.add_argument("--min-messages", type=int)
        group.add_argument("--max-messages", type=int)
        group.add_argument("--match", default="", help="title or file name contains")
        group = parser.add_argument_group("create: configurations")
        group.add_argument("--preset", action="append", default=[], help="repeatable")
        group.add_argument("--config", action="append", default=[], help="saved name; repeatable")
        group.add_argument("--window", type=int, help="model context window for all")
        group.add_argument("--grid-base", default="", help="preset name or config:NAME")
        group.add_argument(
            "--grid", action="append", default=[], help="KEY=v1,v2 or KEY=start:stop:step (≤ 3)"
        )
        group.add_argument(
            "--summarizer", default="offline", choices=SUMMARIZERS,
            help="openai: an OpenAI-compatible endpoint (OPENAI_BASE_URL / OPENAI_API_KEY) "
            "with --model NAME",
        )  # fmt: skip
        group.add_argument("--model", default="", help="--summarizer openai: the model name")
        group.add_argument("--openai-api", choices=("chat", "responses"), default="chat")
        group.add_argument(
            "--replicates", type=int, default=1,
            help="runs of each transcript x configuration (a model summariser's replicates)",
        )  # fmt: skip
        group.add_argument("--max-attempts", type=int, default=2)
        group.add_argument("--no-run", action="store_true", help="create without queueing")
        parser.add_argument("--wait", action="store_true", help="run: wait until finished")
        parser.add_argument("--concurrency", type=int, help="embedded worker threads")
        parser.add_argument("--timeout", type=float, default=3600.0)

    def handle(self, *args: Any, **options: Any) -> None:
        owner = resolve_owner(options["user"])
        action = options["action"]
        try:
            if action == "list":
                self._out(options, {"suites": [
                    {"id": s.pk, "name": s.name, **suite_progress_data(s)}
                    for s in Suite.objects.filter(owner=owner)
                ]})  # fmt: skip
                return
            if action == "create":
                suite = self._create(owner, options)
                if not options["no_run"]:
                    self._run(suite, options)
                self._out(options, {"suite": suite.pk, "name": suite.name,
                                    **suite_progress_data(suite)})  # fmt: skip
                return
            suite = self._suite(owner, options["name"])
            if action == "run":
                self._run(suite, options)
                self._out(options, {"suite": suite.pk, **suite_progress_data(suite)})
            elif action == "status":
                self._out(options, {"suite": suite.pk, **suite_progress_data(suite)})
            elif action == "cancel":
                count = services.suite_cancel(suite=suite)
                self._out(options, {"suite": suite.pk, "cancelled": count})
            elif action == "results":
                page = results.build(suite)
                if options["csv"]:
                    self.stdout.write(page.as_csv(), ending="")
                else:
                    self._out(options, page.as_json(), text=_results_text(page))
            elif action == "report":
                self._report(suite, options)
        except SuiteInputError as exc:
            raise CommandError(str(exc)) from None

    def _out(self, options: dict[str, Any], data: dict[str, Any], text: str = "") -> None:
        if options["json"] or not text:
            self.stdout.write(json.dumps(data, ensure_ascii=False, default=str))
        else:
            self.stdout.write(text)

    def _report(self, suite: Suite, options: dict[str, Any]) -> None:
        text = report.report_html(suite)
        if options["out"] == "-":
            self.stdout.write(text, ending="")
            return
        path = Path(options["out"] or report.report_filename(suite))
        try:
            path.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise CommandError(f"cannot write {path}: {exc.strerror or exc}") from None
        size = path.stat().st_size
        self._out(
            options,
            {"suite": suite.pk, "path": str(path), "bytes": size},
            text=f"wrote {path} ({size:,} bytes)",
        )

    def _suite(self, owner: Any, ref: str) -> Suite:
        if not ref:
            raise CommandError("name the suite (its name or id)")
        suite = Suite.objects.filter(owner=owner, name=ref).first()
        if suite is None and ref.isdigit():
            suite = Suite.objects.filter(owner=owner, pk=int(ref)).first()
        if suite is None:
            raise CommandError(f"{owner} has no suite {ref!r}")
        return suite

    def _create(self, owner: Any, options: dict[str, Any]) -> Suite:
        mine = Transcript.objects.filter(owner=owner)
        chosen: dict[int, Transcript] = {}
        if options["transcripts"]:
            try:
                ids = [int(x) for x in options["transcripts"].split(",") if x.strip()]
            except ValueError:
                raise CommandError("--transcripts takes ids: 3,4,5") from None
            found = {t.pk: t for t in mine.filter(pk__in=ids)}
            missing = [i for i in ids if i not in found]
            if missing:
                raise CommandError(f"no transcript(s) {missing} of {owner}")
            chosen.update(found)
        filters = {"format": options["format"], "min_messages": options["min_messages"],
                   "max_messages": options["max_messages"], "text": options["match"]}  # fmt: skip
        if options["all_transcripts"] or any(v not in ("", None) for v in filters.values()):
            chosen.update((t.pk, t) for t in filter_transcripts(mine, **filters))
        window = options["window"]
        found_configs = configs.preset_configs(options["preset"], window=window)
        for name in options["config"]:
            found_configs.append(configs.make_config(_saved(owner, name), window=window))
        grid_keys: list[str] = []
        if options["grid"] or options["grid_base"]:
            base_ref = options["grid_base"]
            if not base_ref:
                raise CommandError("--grid needs --grid-base (a preset or config:NAME)")
            base = (
                _saved(owner, base_ref[7:])
                if base_ref.startswith("config:")
                else Base(configs.check_strategy(base_ref))
            )
            axes = {}
            for item in options["grid"]:
                key, sep, values = item.partition("=")
                if not sep:
                    raise CommandError(f"--grid {item!r}: give KEY=v1,v2 or KEY=start:stop:step")
                axes[key.strip()] = values
            found_configs.extend(configs.grid_configs(base, axes, window=window))
            grid_keys = list(axes)
        return services.suite_create(
            owner=owner, name=options["name"], transcripts=list(chosen.values()),
            configs=found_configs, summarizer=options["summarizer"], grid_keys=grid_keys,
            source={"cli": {k: v for k, v in filters.items() if v not in ("", None)}},
            max_attempts=options["max_attempts"], enqueue=False, llm=_llm_options(options),
            replicates=options["replicates"],
        )  # fmt: skip

    def _run(self, suite: Suite, options: dict[str, Any]) -> None:
        from ctxlab.celery import app

        eager = bool(app.conf.task_always_eager)  # tests, CTXLAB_CELERY_EAGER=1: run inline
        embedded = settings.CELERY_BROKER_URL.startswith("memory://") and not eager
        worker = None
        if embedded:  # nobody else can read an in-memory queue: execute here
            from ctxlab.serving.embedded import start_embedded_worker

            worker = start_embedded_worker(concurrency=options["concurrency"])
        services.suite_resume(suite=suite)
        if not (options["wait"] or embedded):
            return
        deadline = time.monotonic() + options["timeout"]
        last = ""
        while time.monotonic() < deadline:
            state = suite_progress_data(suite)
            line = f"{state['done']} done, {state['failed']} failed, {state['remaining']} remaining"
            if line != last and not options["json"]:
                self.stderr.write(line)
                last = line
            if state["finished"]:
                break
            time.sleep(0.5)
        if worker is not None:
            from ctxlab.serving.embedded import stop_embedded_worker

            stop_embedded_worker()


def _saved(owner: Any, name: str) -> Base:
    config = StrategyConfig.objects.filter(owner=owner, name=name).first()
    if config is None:
        raise CommandError(f"{owner} has no saved configuration {name!r}")
    return Base(config.strategy, config.pk, config.name, dict(config.params))


def _results_text(page: results.SuiteResults) -> str:
    lines = [f"suite {page.suite.name}: {page.progress['done']}/{page.progress['total']} done"]
    cost = page.cost_key or "-"
    lines.append(f"{'#':>3}  {'pareto':6}  {'retention':>9}  {cost:>20}  configuration")
    for c in page.leaderboard:
        kept = c.median(results.RETENTION_KEY)
        spent = c.median(page.cost_key) if page.cost_key else None
        lines.append(
            f"{c.rank:>3}  {'front' if c.pareto else '':6}  "
            f"{'-' if kept is None else f'{kept:.3f}':>9}  "
            f"{'-' if spent is None else f'{spent:,.4g}':>20}  {c.label}"
        )
    return "\n".join(lines)
