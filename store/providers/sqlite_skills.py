"""`StoreSkillProvider`: loadable documents kept in the store."""

from __future__ import annotations

from ..clock import iso, now
from ..db import Store
from ..errors import UnknownSkillError
from ..schema import SkillRow

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
                for r in self.store.rows(
                    SkillRow.select(SkillRow.key, SkillRow.description)
                    .where(SkillRow.namespace == self.namespace)
                    .order_by(SkillRow.key)
                )
            ]
        )

    async def load(self, key: str) -> str:
        """The whole document; `UnknownSkillError` if there is none."""
        rows = self.store.rows(
            SkillRow.select(SkillRow.content).where(
                SkillRow.namespace == self.namespace, SkillRow.key == key
            )
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
            self.store.run(
                SkillRow.insert(
                    namespace=self.namespace,
                    key=key,
                    content=content,
                    description=description,
                    updated_at=iso(now()),
                ).on_conflict(
                    conflict_target=[SkillRow.namespace, SkillRow.key],
                    preserve=[SkillRow.content, SkillRow.description, SkillRow.updated_at],
                )
            )
