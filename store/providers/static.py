"""`StaticProvider`: fixed text, read-only."""

from __future__ import annotations

__all__ = ["StaticProvider"]


class StaticProvider:
    """A read-only block whose content never changes (a soul, instructions)."""

    def __init__(self, text: str) -> None:
        if not isinstance(text, str):
            raise TypeError("StaticProvider needs a string")
        self.text = text

    async def get(self) -> str:
        """The text."""
        return self.text

    def __repr__(self) -> str:
        return f"StaticProvider({self.text[:30]!r})"
