"""Load the demo transcripts: a few real ones from the corpus plus one long synthetic session.

Idempotent: files already imported (same sha256) are recognised and not stored twice, and the
synthetic session is only built when the user does not have it yet.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from ctxlab.web.display import counted
from sessions_app import services
from sessions_app.models import Upload

from ._owner import resolve_owner

CORPUS = Path(settings.BASE_DIR) / "tests" / "data" / "corpus"  # attribution: NOTICE.md there
DEMO_FILES = (
    "claude-code/ccviewer-fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl",
    "codex-rollout/agentcmd-rollout-2025-09-25T08-02-05-0199812e-64f0-7f73-91fc-095dda01c36e.jsonl",
    "openai-chat/taubench-gpt-4o-airline-task2-messages.json",
    "swe-agent-traj/marshmallow-1867-fc.traj",
    "gemini-cli/agentcmd-session-2025-10-27T19-55-981c87cb.json",
    "aider/aider-example-complex-change.md",
)
LONG_NAME = "demo-long-session.ctxlab.json"
# A margin over 300K: masking secrets at import shortens a few texts a little.
LONG_TARGET_TOKENS = 310_000


class Command(BaseCommand):
    help = "Import the demo transcripts (real corpus samples + a long synthetic session)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--user", default=None, help="owner (default: the local account)")
        parser.add_argument("--corpus", default=str(CORPUS), help="corpus folder")

    def handle(self, *args: Any, **options: Any) -> None:
        owner = resolve_owner(options["user"])
        corpus = Path(options["corpus"])
        for relative in DEMO_FILES:
            path = corpus / relative
            if not path.is_file():
                self.stderr.write(f"demo file missing: {path}")
                continue
            outcome = services.upload_import(owner=owner, name=path.name, data=path.read_bytes())
            self._report(outcome)
        if Upload.objects.filter(owner=owner, name=LONG_NAME).exists():
            self.stdout.write(f"already loaded {LONG_NAME}")
            return
        try:
            from ctxlab.engine.synth import long_demo_conversation
        except ImportError:
            self.stderr.write(
                "no synthetic generator (ctxlab.engine.synth): skipping the long demo"
            )
            return
        conversation = long_demo_conversation(corpus, target_tokens=LONG_TARGET_TOKENS, seed=0)
        outcome = services.conversation_import(
            owner=owner, name=LONG_NAME, conversations=(conversation,), source_format="synthetic"
        )
        self._report(outcome)

    def _report(self, outcome: services.ImportOutcome) -> None:
        if outcome.error is not None:
            self.stderr.write(self.style.ERROR(f"demo import failed: {outcome.error}"))
            return
        state = "already loaded" if outcome.duplicate else "loaded"
        messages = sum(c.messages for c in outcome.conversations)
        self.stdout.write(
            f"{state} {outcome.name} ({outcome.format}, {counted(messages, 'message')})"
        )
