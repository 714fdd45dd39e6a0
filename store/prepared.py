"""Hot-path queries: built once with peewee's query builder, compiled once per dialect.

Why: peewee renders a query's SQL on every execution. For the store's hot
paths that costs more than the statement itself (measured on a 130-message
chat, SQLite file, loaded 2-core machine: `get_message` 0.29 ms built per
call against 0.014 ms raw; a 130-message history 8.8 ms against 1.1 ms;
append 2.9 ms against 0.25 ms; prepared: 0.015, 1.16 and 0.23 ms, as raw).
A `Prepared` query is written with the
builder (so each engine gets its own dialect) over `Slot` placeholders,
rendered to SQL the first time it runs on a kind of database, and from then
on only its parameters change.

A query the engines need shaped differently (not just spelled differently)
takes a keyword-only `engine` argument: it is built once per engine with
"sqlite" or "postgres" there.

    _BY_ID = Prepared(lambda sid, mid: M.select(M.content).where(M.session_id == sid, M.id == mid))
    rows = _BY_ID.rows(store, session_id, message_id)
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from peewee import Node

if TYPE_CHECKING:
    from .db import Store

__all__ = ["Prepared", "Slot"]


class Slot(Node):
    """A parameter of a prepared query: the `index`-th argument at run time."""

    def __init__(self, index: int) -> None:
        super().__init__()
        self.index = index

    def __sql__(self, ctx: Any) -> Any:
        # Added as a bound parameter as is (no field converter): the value
        # given at run time goes through the driver, as any parameter does.
        ctx._values.append(self)
        return ctx.literal(ctx.state.param or "?")


class Prepared:
    """A query built by `build(*slots)`; run it with the values of its slots."""

    def __init__(self, build: Callable[..., Any], *, arity: int | None = None) -> None:
        self.build = build
        # `arity` for a `build(*values)`; otherwise one slot per positional parameter of
        # `build`, read with its first compilation (`_shape`): ~30 queries are made when
        # `store` is imported and a few run before the app's first frame (issue 23).
        self.arity = arity
        self.per_engine = False
        self._compiled: dict[type, tuple[str, list[Any]]] = {}
        self._lock = threading.Lock()

    def _shape(self) -> int:
        """Read `build`'s parameters (once): the slots' count."""
        parameters = inspect.signature(self.build).parameters
        self.per_engine = "engine" in parameters
        if self.arity is None:
            positional = [p for p in parameters.values() if p.kind is not p.KEYWORD_ONLY]
            self.arity = len(positional)
        return self.arity

    def sql(self, store: Store) -> tuple[str, list[Any]]:
        """The statement in `store`'s dialect and its parameter template."""
        kind = type(store.db)
        compiled = self._compiled.get(kind)
        if compiled is None:
            with self._lock:
                slots = [Slot(i) for i in range(self._shape())]
                if self.per_engine:
                    query = self.build(*slots, engine=store.engine_name)
                else:
                    query = self.build(*slots)
                sql, params = store.db.get_sql_context().sql(query).query()
                compiled = self._compiled[kind] = (sql, list(params))
        return compiled

    def _params(self, template: list[Any], values: Sequence[Any]) -> list[Any]:
        if len(values) != self.arity:
            raise TypeError(f"this query takes {self.arity} values, not {len(values)}")
        return [values[p.index] if isinstance(p, Slot) else p for p in template]

    def run(self, store: Store, *values: Any) -> Any:
        """Execute; the driver's cursor (`rowcount`; new ids come back through RETURNING)."""
        sql, template = self.sql(store)
        return store.execute(sql, self._params(template, values))

    def rows(self, store: Store, *values: Any) -> list[tuple[Any, ...]]:
        """Execute a select; its rows."""
        sql, template = self.sql(store)
        return store.query(sql, self._params(template, values))
