"""How every page writes numbers and times (one rule, used by templates and charts alike).

- Counts: thousands separators, always ``12,345`` (never ``12345`` on one page and
  ``12,345`` on the next); ``—`` when there is no value.
- Counted words: ``counted``: ``1 part``, ``2 parts``, ``1,204 messages`` (never ``1 parts``):
  the one pluralisation rule of the site, the ``counted`` filter in templates.
- Money: ``usd``: ``$0.0174``, ``-$0.0003`` (never ``$-0.0003``).
- Times: ``<time datetime="ISO 8601">2026-11-25 16:08 UTC</time>``; ``static/js/localtime.js``
  rewrites the text to the reader's local time and keeps the UTC value as the hover title
  (no JavaScript: the UTC text stays).
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

from django.utils.html import format_html
from django.utils.safestring import SafeString

MISSING = "—"


def number(value: Any) -> str:
    """``12345`` -> ``12,345``; floats keep 3 significant digits below 1,000; bools and
    text pass through; None -> ``—``."""
    if value is None or value == "":
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, str):
        try:
            return f"{int(value):,}"
        except ValueError:
            return value
    return str(value)


def plural_of(word: str) -> str:
    """The English plural of a (lower-case, regular) noun: part -> parts, summary ->
    summaries, match -> matches. Irregular ones are given: ``counted(n, "child", "children")``."""
    if word.endswith("y") and word[-2:-1] not in ("", *"aeiou"):
        return word[:-1] + "ies"
    if word.endswith(("s", "x", "z", "ch", "sh")):
        return word + "es"
    return word + "s"


def counted(count: Any, word: str, plural: str | None = None) -> str:
    """``count`` as every page writes numbers (``number``), then ``word`` in the form the
    number takes: ``1 part``, ``0 parts``, ``2 parts``, ``1,204 messages``. A sequence or
    set counts its items. ``word`` may carry the plural after a comma (``"child,children"``,
    the template filter's one argument)."""
    if isinstance(count, (list, tuple, set, frozenset, dict)):
        count = len(count)
    if plural is None and "," in word:
        word, plural = (part.strip() for part in word.split(",", 1))
    one = count in (1, "1") or (isinstance(count, float) and count == 1.0)
    return f"{number(count)} {word if one else (plural or plural_of(word))}"


def _float(value: float) -> str:
    """Three significant digits, never an exponent: ``0.000076`` (not ``7.6e-05``) and
    ``1,000`` (not ``1e+03`` for 999.7); the smallest shown step is 10⁻⁸."""
    if not math.isfinite(value):
        return str(value)
    size = abs(value)
    if size >= 999.5 or size < 5e-9:
        return f"{value:,.0f}" if size >= 999.5 else "0"
    decimals = min(max(2 - math.floor(math.log10(size)), 0), 8)
    text = f"{value:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def usd(value: Any, places: int = 4) -> str:
    """``-0.0003`` -> ``-$0.0003`` (the sign before the dollar sign); None -> ``—``."""
    if value is None or value == "":
        return MISSING
    amount = round(float(value), places)
    sign = "-" if amount < 0 else ""
    return f"{sign}${abs(amount):,.{places}f}"


def utc_text(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def time_element(moment: datetime | None) -> SafeString | str:
    """A ``<time>`` element with the UTC text (see the module docstring)."""
    if moment is None:
        return MISSING
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    text = utc_text(moment)
    iso = moment.astimezone(UTC).isoformat(timespec="seconds")
    return format_html('<time datetime="{}" title="{}">{}</time>', iso, text, text)
