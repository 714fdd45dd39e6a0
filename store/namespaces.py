"""What a session owns outside its messages: provider data under its namespaces.

Built-in providers key their rows by a namespace. A session's own is its id
(the default writable blocks, the cached prompt, loaded skills); chat-scoped
providers of an application use `"{session_id}/{label}"`. `SessionManager`
copies both on fork and deletes both on purge, inside its transaction.
A fork copies the history of a block's writes only along the path it copies
(`copy_block_writes`): the memory of the branch, not of its siblings.
"""

from __future__ import annotations

from typing import Any

from peewee import Value, fn

from .db import Store, scope_token
from .schema import (
    BlockWriteRow,
    ContextBlockRow,
    EntryIndexRow,
    LoadedSkillRow,
    PromptRow,
    SearchEntryRow,
    SkillRow,
)
from .text_prep import index_tokens

__all__ = [
    "copy_block_writes",
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


_TABLES = (ContextBlockRow, SkillRow, PromptRow, LoadedSkillRow, BlockWriteRow)


def index_entry(store: Store, rowid: int, namespace: str, content: str) -> None:
    """Write the search row of the `search_entries` row `rowid` (inside the caller's write)."""
    store.run(
        EntryIndexRow.insert(
            rowid=rowid, content=index_tokens(content), scope=scope_token(namespace)
        )
    )


def delete_namespaces(store: Store, session_id: str) -> None:
    """Remove the session's blocks, skills, search entries, prompt and skill marks."""
    owned = SearchEntryRow.select(SearchEntryRow.rowid).where(
        owned_by(SearchEntryRow.namespace, session_id)
    )
    store.run(EntryIndexRow.delete().where(EntryIndexRow.rowid.in_(owned)))
    store.run(SearchEntryRow.delete().where(owned_by(SearchEntryRow.namespace, session_id)))
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

    b = ContextBlockRow
    store.run(
        b.insert_from(
            b.select(renamed(b.namespace), b.label, b.content, Value(stamp)).where(
                owned_by(b.namespace, old)
            ),
            [b.namespace, b.label, b.content, b.updated_at],
        )
    )
    k = SkillRow
    store.run(
        k.insert_from(
            k.select(renamed(k.namespace), k.key, k.content, k.description, Value(stamp)).where(
                owned_by(k.namespace, old)
            ),
            [k.namespace, k.key, k.content, k.description, k.updated_at],
        )
    )
    e = SearchEntryRow
    rows = store.rows(
        e.select(e.namespace, e.key, e.content).where(owned_by(e.namespace, old)).order_by(e.rowid)
    )
    for namespace, key, content in rows:
        copied = new + namespace[len(old) :]
        rowid = store.run(e.insert(namespace=copied, key=key, content=content, updated_at=stamp))
        index_entry(store, rowid, copied, content)


def copy_block_writes(store: Store, old: str, new: str, id_map: dict[str, str]) -> None:
    """Copy the writes of session `old`'s blocks made on no message or on a copied one.

    `id_map` maps the copied messages' ids to their copies'. The copies' newest
    content (`context_blocks`) becomes the newest copied write still live, so a
    shared read of the fork sees the branch it was made from.
    """
    w = BlockWriteRow
    rows = store.rows(
        w.select(
            w.namespace, w.label, w.content, w.message_id, w.origin, w.written_at, w.reverted_at
        )
        .where(owned_by(w.namespace, old))
        .order_by(w.seq)
    )
    newest: dict[tuple[str, str], str] = {}
    for namespace, label, content, message_id, origin, written_at, reverted_at in rows:
        if message_id is not None and message_id not in id_map:
            continue  # made on a branch the fork does not copy
        copied = new + namespace[len(old) :]
        store.run(
            w.insert(
                namespace=copied,
                label=label,
                content=content,
                session_id=new,
                message_id=id_map.get(message_id) if message_id is not None else None,
                origin=origin,
                written_at=written_at,
                reverted_at=reverted_at,
            )
        )
        if reverted_at is None:
            newest[(copied, label)] = content
    b = ContextBlockRow
    for (namespace, label), content in newest.items():
        store.run(b.update(content=content).where(b.namespace == namespace, b.label == label))
