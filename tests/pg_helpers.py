"""A PostgreSQL schema of one's own for tests outside `conftest.BOTH_ENGINES`.

`pg_url` (registered in conftest) is `conftest.postgres_schema()` as a
fixture: skipped with the reason when no server answers (a failure under
CHATUI_REQUIRE_POSTGRES=1), dropped after the test.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .conftest import POSTGRES_URL, postgres_schema

__all__ = ["SERVER", "pg_url"]

SERVER = POSTGRES_URL
"""The test server, for the connections a test makes itself (to end backends)."""


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A URL whose tables live in a new, empty schema (dropped after the test)."""
    with postgres_schema() as url:
        yield url
