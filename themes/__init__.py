"""chatui's bundled theme files (`*.toml`); `chatui.tui.theming` loads and validates them."""

from pathlib import Path

__all__ = ["THEMES_DIR"]

THEMES_DIR = Path(__file__).parent
