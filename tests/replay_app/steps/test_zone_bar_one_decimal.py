"""The zone bar's percentages (``message_rows.one_decimal``) are Django's
``floatformat(value, 1)``, which they replace for speed (a compare step view draws five
bars of a dozen each): half up, no "-0.0", anything unusual through Django's filter."""

from __future__ import annotations

import random

import pytest
from django.template.defaultfilters import floatformat

from replay_app.steps.message_rows import one_decimal

EDGES = [0, 0.0, -0.0, 1, 5, 100, 0.05, 0.15, 0.25, 2.25, 2.35, 99.95, 99.949999, 100.0,
         -0.04, -0.05, -2.25, 1e-7, 1e14 + 0.05, 123456789.25, 1 / 3, 2 / 3, 33.333,
         float("nan"), float("inf"), 1e300, True, "12.34", None]  # fmt: skip


@pytest.mark.parametrize("value", EDGES)
def test_edges_are_floatformats(value: object) -> None:
    assert one_decimal(value) == str(floatformat(value, 1))  # type: ignore[arg-type]


def test_many_percentages_are_floatformats() -> None:
    rng = random.Random(33)
    values = [100 * rng.randrange(0, 400_000) / rng.randrange(1, 400_000) for _ in range(20_000)]
    values += [round(rng.uniform(0, 150), 3) for _ in range(20_000)]  # the model's rounding
    values += [k / 20 for k in range(0, 4000)]  # every tenth and half-tenth up to 200
    assert [one_decimal(v) for v in values] == [str(floatformat(v, 1)) for v in values]


def test_grouping_settings_take_djangos_filter(settings: pytest.FixtureRequest) -> None:
    settings.USE_THOUSAND_SEPARATOR = True  # type: ignore[attr-defined]
    assert one_decimal(1234567.25) == str(floatformat(1234567.25, 1))
