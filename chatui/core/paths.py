"""Where chatui keeps its files.

One place knows every location. `CHATUI_HOME` moves all of it (config, data,
logs) under one folder — tests use it, and so can a user with two setups.
Folders are created private (0700) and files we write are 0600: chats are
personal and the config may name providers.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from platformdirs import user_cache_path, user_config_path, user_data_path

__all__ = [
    "APP_NAME",
    "HOME_ENV",
    "cache_dir",
    "compile_cache_file",
    "config_dir",
    "config_file",
    "create_private_file",
    "css_cache_file",
    "data_dir",
    "default_db",
    "ensure_private_dir",
    "log_file",
    "make_private",
    "make_private_db",
    "state_file",
    "write_private",
]

APP_NAME = "chatui"
HOME_ENV = "CHATUI_HOME"


def _home() -> Path | None:
    value = os.environ.get(HOME_ENV, "").strip()
    return Path(value).expanduser() if value else None


def config_dir() -> Path:
    """The folder holding `config.toml` (not created here)."""
    home = _home()
    return home / "config" if home else user_config_path(APP_NAME, appauthor=False)


def data_dir() -> Path:
    """The folder holding the database, state and logs (not created here)."""
    home = _home()
    return home / "data" if home else user_data_path(APP_NAME, appauthor=False)


def cache_dir() -> Path:
    """The folder holding what can be rebuilt at any time (not created here)."""
    home = _home()
    return home / "cache" if home else user_cache_path(APP_NAME, appauthor=False)


def compile_cache_file() -> Path:
    """Code compiled at start-up, kept for the next one (`chatui.compile_cache`)."""
    return cache_dir() / f"compiled-{sys.implementation.cache_tag}.marshal"


def css_cache_file() -> Path:
    """Textual's parsed stylesheets, kept for the next start (`chatui.tui.css_cache`)."""
    return cache_dir() / f"css-{sys.implementation.cache_tag}.pickle"


def config_file() -> Path:
    return config_dir() / "config.toml"


def default_db() -> Path:
    return data_dir() / "chats.db"


def state_file() -> Path:
    """Small UI state the app remembers (theme, last chat); never secrets."""
    return data_dir() / "state.json"


def log_file() -> Path:
    return data_dir() / "chatui.log"


def ensure_private_dir(path: Path) -> Path:
    """Create `path` and any missing parents, each with mode 0700.

    A folder that exists already is never changed: it may be shared (the system's
    temp folder, a project folder) and chmodding it would lock others out.
    """
    missing: list[Path] = []
    step = path
    while not step.exists() and step != step.parent:
        missing.append(step)
        step = step.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            continue  # made meanwhile by someone else: theirs, left as it is
        try:
            folder.chmod(0o700)  # mkdir's mode went through the umask; this one is ours
        except OSError:
            pass  # a filesystem without modes is still usable; the files inside are 0600
    if not path.is_dir():
        raise NotADirectoryError(20, "Not a directory", str(path))
    return path


def make_private(path: Path) -> None:
    """Set a file we wrote to 0600 (best effort: some filesystems ignore modes)."""
    try:
        path.chmod(0o600)
    except OSError:
        pass


def create_private_file(path: Path) -> None:
    """Create `path` empty with mode 0600 unless it exists.

    A database must be private before SQLite first opens it: the -wal and -shm
    files SQLite makes beside it copy the database file's mode.
    """
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass


def make_private_db(path: Path) -> None:
    """0600 for a database file and the -wal/-shm files SQLite keeps beside it."""
    for suffix in ("", "-wal", "-shm"):
        make_private(path.with_name(path.name + suffix))


def write_private(path: Path, text: str) -> None:
    """Write `text` to `path` whole or not at all (temp file + rename), mode 0600.

    Raises:
        OSError: the folder cannot be created or the file cannot be written.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
