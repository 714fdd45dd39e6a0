"""Start-up: garbage collection held off until the first screen is drawn.

`chatui.cli` imports the store (peewee and ~40 modules) before it knows whether it
runs a command or the app. Importing Textual, the store and the widgets, then composing
the first screen, allocates a few hundred thousand objects that live as long as the
app; the collector walked them about 300 times before the first full frame (~65 ms on
the 2-core bench machine, one full collection ~30 ms of it) and freed almost nothing.
`pause()` is called first, before those imports, and `resume()` once the first screen
is on the terminal (the app) or before any other command runs (the CLI): everything
alive then is frozen (moved out of the collector's sight, as `gc.freeze()` documents for
long-lived start-up objects) so later collections only walk what the session allocates.
"""

from __future__ import annotations

import gc

__all__ = ["pause", "paused", "resume"]

_paused = False


def pause() -> None:
    """Stop automatic collection until `resume()` (no-op if it is already off)."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def paused() -> bool:
    """True between `pause()` and `resume()`."""
    return _paused


def resume() -> None:
    """Freeze what start-up allocated and collect automatically again (only if
    `pause()` turned collection off: a caller's own `gc.disable()` is kept). Code is
    compiled as Python does again (`compile_cache`, installed by `chatui.cli.main`)."""
    global _paused
    from . import compile_cache

    compile_cache.finish()
    if not _paused:
        return
    _paused = False
    gc.freeze()
    gc.enable()
