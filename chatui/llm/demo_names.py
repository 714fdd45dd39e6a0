"""The offline demo model's names: what the app asks at every start (`is_demo`)
without loading the demo's replies, regexes and provider (`demo`, loaded with
LiteLLM)."""

from __future__ import annotations

__all__ = ["DEMO_CONTEXT_WINDOW", "DEMO_MODEL", "DEMO_PROVIDER"]

DEMO_MODEL = "demo"
"""What the user types (`--model demo`) for the offline demo model."""
DEMO_PROVIDER = "chatui-demo"
DEMO_CONTEXT_WINDOW = 32_768
