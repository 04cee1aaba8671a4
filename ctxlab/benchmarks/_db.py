"""A throwaway test database for the bench sections that write rows (not a section itself)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TextIO


def in_test_db(
    measure: Callable[[TextIO], list[dict[str, Any]]], out: TextIO
) -> list[dict[str, Any]]:
    """Create a test database, run ``measure(out)`` in it, and drop it again."""
    from django.db import connection
    from django.test.utils import setup_test_environment, teardown_test_environment

    setup_test_environment()
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    try:
        return measure(out)
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)
        teardown_test_environment()
