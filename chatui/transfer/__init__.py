"""Moving chats in and out of chatui: exporters, importers of other apps' files.

Every importer turns a source file into chatui export documents (the shape
`store.transfer` reads and writes), so one code path checks and writes them,
in one transaction. Importers are imported lazily by the command line; this
package imports neither textual nor litellm.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .common import ImportFormatError, Rejected

__all__ = ["IMPORTERS", "ImportFormatError", "Rejected", "load_documents"]

IMPORTERS: dict[str, tuple[str, str]] = {
    "chatgpt": ("chatui.transfer.chatgpt", "load_chatgpt"),
    "chatui": ("chatui.transfer.chatui_json", "load_chatui"),
    "pi": ("chatui.transfer.pi", "load_pi"),
    "llm": ("chatui.transfer.llm_logs", "load_llm"),
}
"""`--from` name → (module, function) turning a file into export documents."""


def __getattr__(name: str) -> object:
    # `chatui` builds its parser (IMPORTERS) on every start, the app's included: the
    # importers' shared module (and the store's export format) load on first use.
    if name in ("ImportFormatError", "Rejected"):
        from . import common

        return getattr(common, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def load_documents(
    path: Path, source: str, rejected: list[Rejected] | None = None
) -> list[dict[str, Any]]:
    """Read `path` as a `source` file and return chatui export documents.

    Args:
        rejected: when given, conversations that cannot be read are listed here
            (each with its reason) and the rest returned: a partial import.

    Raises:
        ImportFormatError: the file cannot be read as that format (one line,
            naming the file and the problem); without `rejected`, also one bad
            conversation.
    """
    module, name = IMPORTERS[source]
    loader: Callable[..., list[dict[str, Any]]] = getattr(import_module(module), name)
    if source == "chatui":  # documents are checked one by one when imported
        return loader(path)
    return loader(path, rejected)
