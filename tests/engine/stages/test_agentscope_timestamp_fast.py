"""``agentscope.as_timestamp`` formats the common ISO shapes by slicing: the same text as
``datetime.fromisoformat`` + ``strftime`` on every shape, valid or not."""

from __future__ import annotations

import random
from datetime import datetime

from ctxlab.engine.stages import agentscope


def _through_datetime(value: str) -> str:
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return value
    return moment.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


EDGES = [
    "2024-02-29T23:59:59Z",  # leap day
    "2023-02-29T10:00:00Z",  # no such day
    "2024-13-01T00:00:00Z",
    "2024-01-01T24:00:00Z",
    "2024-01-01T23:60:00Z",
    "2024-01-01T23:59:60Z",
    "0999-01-01T00:00:00Z",  # strftime prints the year unpadded
    "2024-01-01T00:00:00.5Z",
    "2024-01-01T00:00:00.123Z",
    "2024-01-01T00:00:00.123456",
    "2024-01-01T00:00:00.1234567Z",
    "2024-01-01T00:00:00+00:00",
    "2024-01-01T00:00:00+05:00",  # kept as written, not converted
    "2024-01-01 00:00:00",
    "\u0662\u0660\u0662\u0664-01-01T00:00:00Z",  # Arabic-Indic digits
    "2024-01-01T00:00:00ZZ",
    "2024-01-01",
    "garbage",
]


def test_as_timestamp_equals_datetime_on_edges_and_random_shapes() -> None:
    rnd = random.Random(16)
    cases = list(EDGES)
    for _ in range(5000):
        year = rnd.choice(["0000", "0001", "0999", "1000", "2024", "9999"])
        fields = [rnd.randint(0, 13), rnd.randint(0, 32), rnd.randint(0, 25)]
        fields += [rnd.randint(0, 61), rnd.randint(0, 61)]
        month, day, hour, minute, second = (f"{v:02d}" for v in fields)
        frac = rnd.choice(["", ".1", ".12", ".123", ".1234", ".123456", ".1234567"])
        zone = rnd.choice(["", "Z", "+00:00", "-00:00", "+01:00"])
        cases.append(f"{year}-{month}-{day}T{hour}:{minute}:{second}{frac}{zone}")
    agentscope.as_timestamp.cache_clear()
    for value in cases:
        assert agentscope.as_timestamp(value) == _through_datetime(value), value
    assert agentscope.as_timestamp("2024-05-06T07:08:09.123456Z") == "2024-05-06 07:08:09.123"
    assert agentscope.as_timestamp(None) == agentscope.as_timestamp("") == ""
