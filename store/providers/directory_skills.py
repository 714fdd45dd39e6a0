"""`DirectorySkillProvider`: each `*.md` file in a folder is a loadable skill.

Security invariant: a key names a file directly inside the folder. Keys with
path separators, `..`, NUL or a leading dot are refused, and so is any file
whose real path (after symlinks) lies outside the folder.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import UnknownSkillError
from .sqlite_skills import listing

__all__ = ["DirectorySkillProvider"]

_KEY = re.compile(r"^[\w][\w .-]*$", re.UNICODE)
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")


def _split_front_matter(text: str) -> tuple[dict[str, str], str]:
    if not text.startswith("---\n"):
        return {}, text
    end = text.find("\n---", 4)
    if end == -1:
        return {}, text
    meta = {}
    for line in text[4:end].splitlines():
        if ":" in line:
            name, value = line.split(":", 1)
            meta[name.strip().lower()] = value.strip().strip("\"'")
    body = text[end + 4 :]
    return meta, body[1:] if body.startswith("\n") else body


def _description(text: str) -> str | None:
    meta, body = _split_front_matter(text)
    if meta.get("description"):
        return meta["description"]
    for line in body.splitlines():
        if match := _HEADING.match(line.strip()):
            return match.group(1)
    return None


class DirectorySkillProvider:
    """Skills from Markdown files; `set` writes `<key>.md` (with front matter)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser()

    def _file(self, key: str) -> Path:
        if not isinstance(key, str) or not _KEY.match(key) or ".." in key or key != key.strip():
            raise UnknownSkillError(
                f"invalid skill key {key!r}: use a file name without folders or '..'"
            )
        root = self.path.resolve()
        candidate = self.path / f"{key}.md"
        if candidate.exists() and not candidate.resolve().is_relative_to(root):
            raise UnknownSkillError(f"skill {key!r} points outside {self.path}")
        return candidate

    def _keys(self) -> list[Path]:
        if not self.path.is_dir():
            return []
        root = self.path.resolve()
        return sorted(
            p for p in self.path.glob("*.md") if p.is_file() and p.resolve().is_relative_to(root)
        )

    async def get(self) -> str | None:
        """One `- key: description` line per readable `*.md` file, or None."""
        items = []
        for file in self._keys():
            try:
                text = file.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue  # unreadable skills are left out of the listing
            items.append((file.stem, _description(text)))
        return listing(items)

    async def load(self, key: str) -> str:
        """The document without its front matter; `UnknownSkillError` for a bad or missing key."""
        file = self._file(key)
        if not file.is_file():
            raise UnknownSkillError(f"no skill {key!r} in {self.path}")
        try:
            text = file.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise UnknownSkillError(f"skill {key!r} is not UTF-8 text") from exc
        return _split_front_matter(text)[1]

    async def set(self, key: str, content: str, description: str | None = None) -> None:
        """Write `<key>.md`, with the description as front matter."""
        file = self._file(key)
        if not isinstance(content, str):
            raise TypeError("skill content must be a string")
        if file.is_symlink():
            raise UnknownSkillError(f"skill {key!r} is a symlink; refusing to write through it")
        self.path.mkdir(parents=True, exist_ok=True)
        text = content
        if description:
            clean = description.replace("\n", " ").strip()
            text = f"---\ndescription: {clean}\n---\n{content}"
        file.write_text(text, encoding="utf-8")

    def __repr__(self) -> str:
        return f"DirectorySkillProvider({str(self.path)!r})"
