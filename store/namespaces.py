"""What a session owns outside its messages: provider data under its namespaces.

Built-in providers key their rows by a namespace. A session's own is its id
(the default writable blocks, the cached prompt, loaded skills); chat-scoped
providers of an application use `"{session_id}/{label}"`. `SessionManager`
copies both on fork and deletes both on purge, inside its transaction.
"""

from __future__ import annotations

from .db import Store, scope_token

__all__ = ["copy_namespaces", "delete_namespaces", "namespace_range"]

_OWNED = "namespace = ? OR (namespace >= ? AND namespace < ?)"


def namespace_range(session_id: str) -> tuple[str, str]:
    """[low, high) holding every `"{session_id}/…"` namespace."""
    # "0" is the character after "/", so the range is exactly that prefix;
    # unlike LIKE it uses the primary-key index and has no wildcards ("_", "%").
    return session_id + "/", session_id + "0"


def _owned(session_id: str) -> tuple[str, str, str]:
    return (session_id, *namespace_range(session_id))


def delete_namespaces(store: Store, session_id: str) -> None:
    """Remove the session's blocks, skills, search entries, prompt and skill marks."""
    store.execute(
        f"DELETE FROM search_entries_fts WHERE rowid IN "
        f"(SELECT rowid FROM search_entries WHERE {_OWNED})",
        _owned(session_id),
    )
    for table in ("search_entries", "context_blocks", "skills", "prompts", "loaded_skills"):
        store.execute(f"DELETE FROM {table} WHERE {_OWNED}", _owned(session_id))


def copy_namespaces(store: Store, old: str, new: str, stamp: str) -> None:
    """Copy the blocks, skills and search entries of session `old` to session `new`.

    The cached prompt and loaded-skill marks are not copied: a fork renders
    its own prompt and has loaded nothing yet.
    """
    # "{old}…" becomes "{new}…": the namespace with its prefix swapped.
    renamed = "? || substr(namespace, ?)"
    args = (new, len(old) + 1, stamp, *_owned(old))
    store.execute(
        f"INSERT INTO context_blocks (namespace, label, content, updated_at) "
        f"SELECT {renamed}, label, content, ? FROM context_blocks WHERE {_OWNED}",
        args,
    )
    store.execute(
        f"INSERT INTO skills (namespace, key, content, description, updated_at) "
        f"SELECT {renamed}, key, content, description, ? FROM skills WHERE {_OWNED}",
        args,
    )
    rows = store.query(
        f"SELECT namespace, key, content FROM search_entries WHERE {_OWNED} ORDER BY rowid",
        _owned(old),
    )
    for namespace, key, content in rows:
        copied = new + namespace[len(old) :]
        cursor = store.execute(
            "INSERT INTO search_entries (namespace, key, content, updated_at) VALUES (?, ?, ?, ?)",
            (copied, key, content, stamp),
        )
        store.execute(
            "INSERT INTO search_entries_fts (rowid, content, scope) VALUES (?, ?, ?)",
            (cursor.lastrowid, content, scope_token(copied)),
        )
