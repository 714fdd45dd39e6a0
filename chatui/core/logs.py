"""The app's log file, with secrets scrubbed on the way in.

The log lives in the data folder (0600). Anything that looks like a key —
the value of any `*_API_KEY`/`*_TOKEN`/`*_SECRET` environment variable, or a
string shaped like a provider key — is replaced before a record is written,
so a provider error quoting a request cannot leak a key into the file; a
database URL's password (`postgresql://user:password@host`) is shown as `***`.
"""

from __future__ import annotations

import logging
from pathlib import Path

from store import redact_urls_in

from ..llm.errors import redact as _redact_keys
from . import paths

__all__ = ["redact", "setup_logging"]


def redact(text: str) -> str:
    """`text` without API keys and without database URL passwords."""
    return redact_urls_in(_redact_keys(text))


class _RedactingFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = redact(record.getMessage())
        record.args = None
        if record.exc_info:
            formatter = logging.Formatter()
            record.exc_text = redact(formatter.formatException(record.exc_info))
            record.exc_info = None
        return True


def setup_logging(path: Path | None = None, level: int = logging.INFO) -> Path | None:
    """Send chatui's (and LiteLLM's) log records to the private log file.

    Returns the path, or None when the file cannot be opened (logging is then off).
    """
    path = path or paths.log_file()
    try:
        paths.ensure_private_dir(path.parent)
        handler = logging.FileHandler(path, encoding="utf-8", delay=False)
        paths.make_private(path)
    except OSError:
        return None
    handler.addFilter(_RedactingFilter())
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "_chatui", False)]:
        root.removeHandler(old)
    handler._chatui = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(level)
    for noisy in ("LiteLLM", "litellm", "httpx", "httpcore", "openai", "asyncio"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    return path
