"""A PostgreSQL database of one's own for a test: a fresh schema, dropped afterwards.

The server is `CHATUI_TEST_POSTGRES_URL` (default: the local test server).
Tests that need it use the `pg_url` fixture (imported into their module) and
are skipped, saying so, when no server answers.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from urllib.parse import quote

import pytest

SERVER = os.environ.get("CHATUI_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")


def server_answers() -> bool:
    try:
        import psycopg

        with psycopg.connect(SERVER, connect_timeout=2):
            return True
    except Exception:
        return False


needs_postgres = pytest.mark.skipif(
    not server_answers(), reason=f"no PostgreSQL server answers at {SERVER}"
)


def schema_url(schema: str) -> str:
    """`SERVER` with its tables in `schema`."""
    joiner = "&" if "?" in SERVER else "?"
    return f"{SERVER}{joiner}options={quote(f'-csearch_path={schema}')}"


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A URL whose tables live in a new, empty schema (dropped after the test)."""
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(SERVER, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        yield schema_url(schema)
    finally:
        with psycopg.connect(SERVER, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")
