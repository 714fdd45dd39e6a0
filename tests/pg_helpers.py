"""A PostgreSQL schema of one's own for tests outside `conftest.BOTH_ENGINES`,
and a PostgreSQL server of one's own for tests that stop it.

`pg_url` (registered in conftest) is `conftest.postgres_schema()` as a
fixture: skipped with the reason when no server answers (a failure under
CHATUI_REQUIRE_POSTGRES=1), dropped after the test.

`pg_cluster` (registered in conftest) is a throw-away server: `initdb` in a temp
folder and `pg_ctl start` on a free port, from the machine's PostgreSQL programs
(skipped without them, a failure under CHATUI_REQUIRE_POSTGRES=1), one per test
module, with a new database for each test. A test stops and starts it at will;
the shared server's other tests never notice.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import POSTGRES_URL, REQUIRE_POSTGRES, postgres_schema

__all__ = ["SERVER", "Cluster", "pg_cluster", "pg_cluster_server", "pg_url"]

SERVER = POSTGRES_URL
"""The test server, for the connections a test makes itself (to end backends)."""


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A URL whose tables live in a new, empty schema (dropped after the test)."""
    with postgres_schema() as url:
        yield url


# -- a server of the test's own, to stop and start -------------------------------------

PG_BIN_DIRS = ("/usr/lib/postgresql/15/bin", "/usr/lib/postgresql/16/bin", "/usr/local/pgsql/bin")
"""Where the machine's PostgreSQL programs are looked for (after CHATUI_PG_BIN and PATH)."""


def _pg_bin() -> Path | None:
    """The folder holding initdb and pg_ctl, or None."""
    given = os.environ.get("CHATUI_PG_BIN")
    found = shutil.which("initdb")
    for folder in [given, *([str(Path(found).parent)] if found else []), *PG_BIN_DIRS]:
        if folder and (Path(folder) / "initdb").is_file() and (Path(folder) / "pg_ctl").is_file():
            return Path(folder)
    return None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Cluster:
    """A throw-away PostgreSQL server (initdb in a temp folder, a free port): a test may
    stop and start it. Run as the `postgres` user when the tests run as root
    (PostgreSQL refuses root)."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin = bin_dir
        self.dir = Path(tempfile.mkdtemp(prefix="chatui-pg-"))
        self.data = self.dir / "data"
        self.port = _free_port()
        self.admin_url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self.url = self.admin_url
        """The database a test uses (`pg_cluster` makes one for each test)."""
        self._as: list[str] = []
        if os.geteuid() == 0:  # initdb and postgres refuse to run as root
            shutil.chown(self.dir, "postgres")
            self._as = ["runuser", "-u", "postgres", "--"]

    def _run(self, program: str, *args: str) -> None:
        done = subprocess.run(
            [*self._as, str(self.bin / program), *args],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if done.returncode != 0:
            log = self.dir / "server.log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise RuntimeError(f"{program} {args[0]} failed: {done.stderr.strip()}\n{tail}")

    def init(self) -> None:
        self._run(
            "initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres",
            "-E", "UTF8", "--locale=C", "--no-sync",
        )  # fmt: skip

    def start(self) -> None:
        """Start the server; returns once it accepts connections."""
        options = (
            f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c full_page_writes=off"
        )
        self._run(
            "pg_ctl", "start", "-D", str(self.data), "-l", str(self.dir / "server.log"),
            "-o", options, "-w", "-t", "60",
        )  # fmt: skip

    def stop(self, mode: str = "fast") -> None:
        """Stop the server ("fast": every client's connection is ended, as a shutdown does)."""
        self._run("pg_ctl", "stop", "-D", str(self.data), "-m", mode, "-w", "-t", "60")

    @property
    def running(self) -> bool:
        return (self.data / "postmaster.pid").exists()

    def remove(self) -> None:
        if self.running:
            with contextlib.suppress(Exception):
                self.stop("immediate")
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def pg_cluster_server() -> Iterator[Cluster]:
    """One throw-away server for a test module (initdb takes seconds); see `pg_cluster`."""
    bin_dir = _pg_bin()
    if bin_dir is None:
        problem = "no initdb/pg_ctl (set CHATUI_PG_BIN to PostgreSQL's bin folder)"
        if REQUIRE_POSTGRES:
            pytest.fail(f"{problem}; CHATUI_REQUIRE_POSTGRES=1 needs them")
        pytest.skip(problem)
    cluster = Cluster(bin_dir)
    try:
        cluster.init()
        cluster.start()
        yield cluster
    finally:
        cluster.remove()


@pytest.fixture
def pg_cluster(pg_cluster_server: Cluster) -> Cluster:
    """A PostgreSQL server of the test's own module, running (started again if an
    earlier test left it stopped), that the test may stop and start (see `Cluster`);
    its `url` names a new database of this test's own.

    Skipped with the reason when the machine has no initdb/pg_ctl; a failure under
    CHATUI_REQUIRE_POSTGRES=1 (CI), as the other PostgreSQL tests.
    """
    import psycopg

    cluster = pg_cluster_server
    if not cluster.running:
        cluster.start()
    name = f"t_{uuid.uuid4().hex[:16]}"  # the test's own database: no chat of another's
    with psycopg.connect(cluster.admin_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    cluster.url = f"postgresql://postgres@127.0.0.1:{cluster.port}/{name}"
    return cluster
