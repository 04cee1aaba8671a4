from __future__ import annotations

import pytest

from ctxlab.engine.core.params import Param, parse_assignments, validate

SPECS = (
    Param("ratio", 0.8, "r", "float", min=0.1, max=0.9),
    Param("n", 2, "n", "int", min=1, max=10),
    Param("lang", "zh", "l", "str", choices=("zh", "en")),
    Param("flag", True, "f", "bool"),
    Param("names", ["a"], "names", "list"),
)


def test_validate_defaults() -> None:
    assert validate(SPECS, None) == {
        "ratio": 0.8,
        "n": 2,
        "lang": "zh",
        "flag": True,
        "names": ["a"],
    }


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({"ratio": "0.5"}, ("ratio", 0.5)),
        ({"n": "3"}, ("n", 3)),
        ({"flag": "false"}, ("flag", False)),
        ({"names": "x, y"}, ("names", ["x", "y"])),
        ({"names": '["p"]'}, ("names", ["p"])),
    ],
    ids=["float", "int", "bool", "csv-list", "json-list"],
)
def test_validate_parses_strings(given: dict[str, str], expected: tuple[str, object]) -> None:
    assert validate(SPECS, given)[expected[0]] == expected[1]


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"ratio": 0.95}, "ratio=0.95 is out of range (0.1..0.9)"),
        ({"n": 0}, "n=0 is out of range (1..10)"),
        ({"lang": "fr"}, "lang='fr' is not allowed (one of 'zh', 'en')"),
        ({"n": "x"}, "n='x' is not a valid int"),
        ({"nope": 1}, "unknown parameter 'nope' for strategy 's'"),
    ],
    ids=["above-max", "below-min", "bad-choice", "bad-int", "unknown"],
)
def test_validate_errors_name_the_parameter(given: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        validate(SPECS, given, strategy="s")


def test_parse_assignments() -> None:
    assert parse_assignments(["a=1", "b=x=y"]) == {"a": "1", "b": "x=y"}
    with pytest.raises(ValueError, match="key=value"):
        parse_assignments(["oops"])
