"""`StoreSkillProvider`: loadable documents kept in the store."""

from __future__ import annotations

from ..clock import iso, now
from ..db import Store
from ..errors import UnknownSkillError

__all__ = ["StoreSkillProvider", "listing"]


def listing(items: list[tuple[str, str | None]]) -> str | None:
    """`- key: description` lines, or None when there is nothing to list."""
    if not items:
        return None
    return "\n".join(f"- {key}: {desc}" if desc else f"- {key}" for key, desc in items)


class StoreSkillProvider:
    """Skills under a namespace: listed in the prompt, loaded whole on demand."""

    def __init__(self, store: Store, namespace: str) -> None:
        self.store = store
        self.namespace = namespace

    async def get(self) -> str | None:
        """One `- key: description` line per skill, or None."""
        return listing(
            [
                (r[0], r[1])
                for r in self.store.query(
                    "SELECT key, description FROM skills WHERE namespace = ? ORDER BY key",
                    (self.namespace,),
                )
            ]
        )

    async def load(self, key: str) -> str:
        """The whole document; `UnknownSkillError` if there is none."""
        rows = self.store.query(
            "SELECT content FROM skills WHERE namespace = ? AND key = ?", (self.namespace, key)
        )
        if not rows:
            raise UnknownSkillError(f"no skill {key!r}")
        return rows[0][0]

    async def set(self, key: str, content: str, description: str | None = None) -> None:
        """Add or replace a skill."""
        if not isinstance(key, str) or not key.strip():
            raise ValueError("a skill key must be a non-empty string")
        if not isinstance(content, str):
            raise TypeError("skill content must be a string")
        with self.store.write():
            self.store.execute(
                "INSERT INTO skills (namespace, key, content, description, updated_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (namespace, key) DO UPDATE SET "
                "content = excluded.content, description = excluded.description, "
                "updated_at = excluded.updated_at",
                (self.namespace, key, content, description, iso(now())),
            )
