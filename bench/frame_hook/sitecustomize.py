"""Ends the process at a point of its start-up (bench only: `callgrind_startup.py`).

Python imports `sitecustomize` at start-up from `sys.path`; `bench/callgrind_startup.py`
puts this folder on `PYTHONPATH` and says where to stop, so callgrind counts the
instructions from launch to that point and no further:

- `CHATUI_BENCH_EXIT_AT="mark|mark|..."`: once Textual's driver has been handed frames
  that together showed every mark (`WriterThread.write`, on the app's thread: the
  writer thread itself writes later, and the app went on meanwhile, as far as the next
  layout under valgrind, which made the count jump by ~70 M from run to run). A mark
  is looked for in a frame's text without its escape sequences (a styled word is split
  by them, as the input's placeholder is by its cursor), as a terminal shows it.
- `CHATUI_BENCH_EXIT_AT_CALL="module:Class.method"`: when that method is first called
  (`textual.app:App.run` is the end of the imports, config and database).

Each target is wrapped once its module is imported (a finder on `sys.meta_path`), so
nothing is imported earlier than the program itself imports it.
"""

import os
import sys


def _exit_at_marks(owner, method, marks):  # type: ignore[no-untyped-def]
    original = getattr(owner, method)
    left = set(marks)

    def write(self, text):  # type: ignore[no-untyped-def]
        import re  # imported by then (Textual's modules use it)

        shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)
        left.difference_update([mark for mark in left if mark in shown])
        if not left:
            os._exit(0)
        return original(self, text)

    setattr(owner, method, write)


def _exit_at_call(owner, method):  # type: ignore[no-untyped-def]
    def exit_now(*args, **kwargs):  # type: ignore[no-untyped-def]
        os._exit(0)

    setattr(owner, method, exit_now)


class _WrapOnImport:
    """A finder that calls `wrap(owner, method)` once `target`'s module is imported."""

    def __init__(self, target, wrap):  # type: ignore[no-untyped-def]
        self.module, _, attribute = target.partition(":")
        self.owner, _, self.method = attribute.rpartition(".")
        self.wrap = wrap

    def find_spec(self, name, path, target=None):  # type: ignore[no-untyped-def]
        if name != self.module:
            return None
        import importlib.util

        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        exec_module = spec.loader.exec_module

        def exec_and_wrap(module):  # type: ignore[no-untyped-def]
            exec_module(module)
            self.wrap(getattr(module, self.owner) if self.owner else module, self.method)

        spec.loader.exec_module = exec_and_wrap
        return spec


if os.environ.get("CHATUI_BENCH_EXIT_AT_CALL"):
    sys.meta_path.insert(0, _WrapOnImport(os.environ["CHATUI_BENCH_EXIT_AT_CALL"], _exit_at_call))
elif os.environ.get("CHATUI_BENCH_EXIT_AT"):
    _marks = os.environ["CHATUI_BENCH_EXIT_AT"].split("|")
    sys.meta_path.insert(
        0,
        _WrapOnImport(
            "textual.drivers._writer_thread:WriterThread.write",
            lambda owner, method: _exit_at_marks(owner, method, _marks),
        ),
    )
