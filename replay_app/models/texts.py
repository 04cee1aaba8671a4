"""Texts a run stored (summary inputs, modified message texts, offloaded files), each
distinct text once, by content hash.

- ``StoredText``: one row per distinct text (blake2b-160 hex key), shared by every run
  that uses it, whoever owns the run: rows are only ever read through a run that points at
  them (``replay_app.runs.textstore``), never listed or looked up by a user's hash, so
  sharing a row leaks nothing.
- ``RunText``: which run uses which stored text. Deleting a run deletes its links; a text
  no link points at any more is deleted with it (``textstore`` collects those candidates
  before the delete and removes the orphans after the commit), so deleting one run never
  removes a text another run still uses.

Most of what a run would copy is already in the transcript: a summary input is mostly the
transcript's own messages rendered, a truncated or offloaded text is a prefix of the
original. ``textstore`` stores those parts as references into the transcript's messages
and only the rest here.
"""

from __future__ import annotations

from django.db import models

from replay_app.models.runs import Run


class StoredText(models.Model):
    """One distinct text, stored once."""

    key = models.CharField(max_length=40, primary_key=True)  # blake2b-160 hex of UTF-8
    text = models.TextField()
    size = models.PositiveBigIntegerField()  # UTF-8 bytes

    def __str__(self) -> str:
        return f"text {self.key[:12]} ({self.size} bytes)"


class RunText(models.Model):
    """A run uses a stored text (the reference count of ``StoredText``)."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="text_links")
    text = models.ForeignKey(StoredText, on_delete=models.PROTECT, related_name="links")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "text"], name="runtext_run_text")]
