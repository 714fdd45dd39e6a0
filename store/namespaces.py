"""What a session owns outside its messages: provider data under its namespaces.

Built-in providers key their rows by a namespace. A session's own is its id
(the default writable blocks, the cached prompt, loaded skills); chat-scoped
providers of an application use `"{session_id}/{label}"`. `SessionManager`
copies both on fork and deletes both on purge, inside its transaction.
"""

from __future__ import annotations

from typing import Any

from peewee import Value, fn

from .db import Store, scope_token
from .schema import ContextBlock, EntryIndex, LoadedSkill, Prompt, SearchEntry, Skill
from .text_prep import prepare

__all__ = [
    "copy_namespaces",
    "delete_namespaces",
    "index_entry",
    "namespace_range",
    "owned_by",
]


def namespace_range(session_id: str) -> tuple[str, str]:
    """[low, high) holding every `"{session_id}/…"` namespace."""
    # "0" is the character after "/", so the range is exactly that prefix;
    # unlike LIKE it uses the primary-key index and has no wildcards ("_", "%").
    return session_id + "/", session_id + "0"


def owned_by(column: Any, session_id: str) -> Any:
    """`column` is the session's own namespace or one of its `"{id}/…"` ones."""
    low, high = namespace_range(session_id)
    return (column == session_id) | ((column >= low) & (column < high))


_TABLES = (ContextBlock, Skill, Prompt, LoadedSkill)


def index_entry(store: Store, rowid: int, namespace: str, content: str) -> None:
    """Write the search row of the `search_entries` row `rowid` (inside the caller's write)."""
    store.run(
        EntryIndex.insert(rowid=rowid, content=prepare(content), scope=scope_token(namespace))
    )


def delete_namespaces(store: Store, session_id: str) -> None:
    """Remove the session's blocks, skills, search entries, prompt and skill marks."""
    owned = SearchEntry.select(SearchEntry.rowid).where(owned_by(SearchEntry.namespace, session_id))
    store.run(EntryIndex.delete().where(EntryIndex.rowid.in_(owned)))
    store.run(SearchEntry.delete().where(owned_by(SearchEntry.namespace, session_id)))
    for table in _TABLES:
        store.run(table.delete().where(owned_by(table.namespace, session_id)))


def copy_namespaces(store: Store, old: str, new: str, stamp: str) -> None:
    """Copy the blocks, skills and search entries of session `old` to session `new`.

    The cached prompt and loaded-skill marks are not copied: a fork renders
    its own prompt and has loaded nothing yet.
    """

    def renamed(column: Any) -> Any:
        # "{old}…" becomes "{new}…": the namespace with its prefix swapped.
        return Value(new).concat(fn.substr(column, len(old) + 1))

    b = ContextBlock
    store.run(
        b.insert_from(
            b.select(renamed(b.namespace), b.label, b.content, Value(stamp)).where(
                owned_by(b.namespace, old)
            ),
            [b.namespace, b.label, b.content, b.updated_at],
        )
    )
    k = Skill
    store.run(
        k.insert_from(
            k.select(renamed(k.namespace), k.key, k.content, k.description, Value(stamp)).where(
                owned_by(k.namespace, old)
            ),
            [k.namespace, k.key, k.content, k.description, k.updated_at],
        )
    )
    e = SearchEntry
    rows = store.rows(
        e.select(e.namespace, e.key, e.content).where(owned_by(e.namespace, old)).order_by(e.rowid)
    )
    for namespace, key, content in rows:
        copied = new + namespace[len(old) :]
        rowid = store.run(e.insert(namespace=copied, key=key, content=content, updated_at=stamp))
        index_entry(store, rowid, copied, content)
