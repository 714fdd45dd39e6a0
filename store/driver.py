"""psycopg loads when PostgreSQL is used, not when `store` is imported.

Why: peewee imports psycopg (and its C extension) at import time if it is
installed — 0.3 s on an idle laptop, 0.8 s on a loaded CI box — and a SQLite
user would pay that on every start of the app. `defer()` runs before peewee
is first imported (importing this module runs it; `store/__init__.py`
imports it first) and makes that one
import fail, which peewee treats as "psycopg is not installed";
`load_psycopg()` (the PostgreSQL engine calls it) imports it for real when a PostgreSQL store opens and hands
peewee the names its import would have set. Import peewee after psycopg (or
use psycopg without `store`) and both are simply no-ops.

peewee also imports `hashlib` and `calendar` at import time for one use each (a long
index's name, a timestamp field's value): `hashlib`'s OpenSSL set-up alone is ~6 M
instructions, `calendar` ~2 M, of the app's start (issue 23). `defer()` hands peewee a
module object of each that imports the real one when first used (nothing else in the
app's start imports them).
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

__all__ = ["EngineError", "defer", "load_psycopg"]

_ON_FIRST_USE = ("calendar",)
"""Modules peewee imports at import time and uses later, if ever."""


class _OnFirstUse(ModuleType):
    """Stands in for a module in peewee's namespace: the first attribute read imports
    the real module (from then on in `sys.modules`, as any import leaves it)."""

    def __getattr__(self, name: str) -> Any:
        import importlib

        return getattr(importlib.import_module(self.__name__), name)


def defer() -> None:
    """Keep peewee's first import from importing psycopg, hashlib and calendar (no-op
    once peewee is loaded)."""
    if "peewee" in sys.modules or "psycopg" in sys.modules:
        return
    later = [name for name in _ON_FIRST_USE if name not in sys.modules]
    sys.modules["psycopg"] = None  # type: ignore[assignment]  # "import psycopg" → ImportError
    sys.modules.update({name: _OnFirstUse(name) for name in later})
    try:
        import peewee  # noqa: F401
    finally:
        del sys.modules["psycopg"]
        for name in later:
            if isinstance(sys.modules.get(name), _OnFirstUse):
                del sys.modules[name]  # the next `import` loads the real one


def load_psycopg() -> None:
    """Import psycopg and give peewee what its own import would have set."""
    import peewee
    import psycopg
    from psycopg.pq import TransactionStatus
    from psycopg.types.json import Json, Jsonb

    if peewee.psycopg is not None:  # type: ignore[attr-defined]
        return
    peewee.psycopg = psycopg  # type: ignore[attr-defined]
    peewee.TransactionStatus = TransactionStatus  # type: ignore[attr-defined]
    peewee.Json_pg3 = Json  # type: ignore[attr-defined]
    peewee.Jsonb_pg3 = Jsonb  # type: ignore[attr-defined]
    adapter = peewee.Psycopg3Adapter
    adapter.txn_idle = TransactionStatus.IDLE
    adapter.txn_inerror = TransactionStatus.INERROR
    adapter.txn_unknown = TransactionStatus.UNKNOWN


defer()

# What an engine's own errors (SQLite's, psycopg's) pass through the store as: peewee's
# `DatabaseError`, named here so that callers import it from `store` (a module importing
# peewee itself before `store` loads psycopg on every start of the app).
from peewee import DatabaseError as EngineError  # noqa: E402  # after defer(): the point
