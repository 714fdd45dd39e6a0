"""A callback's parameters counted once per method, not once per call (issue 22).

Textual (8.2) invokes every callback (`call_later`, `call_after_refresh`, `call_next`,
a timer's) through `textual._callback.count_parameters`, which keeps the count on the
callable itself. But `call_later` and its kin hand it a new `functools.partial` of the
callback each time, so the count was taken again on every call: `inspect.signature`
of the bound method (its wrapped function's annotations and defaults read again),
0.02–0.1 ms each, a dozen times a send (`MessagePump.call_next`, the pane's timers…):
CPU taken from a local model on the same cores.

`install()` makes the count a look-up after its first for a bound method of a Python
function (its parameters are its function's less the one it is bound to, whatever it
is bound to) and for a plain function, closures too (a function with neither
`__wrapped__` nor `__signature__` has the parameters its code says: `scroll_end`'s
and `mount`'s closures are new each call). Every other callable is counted as before.
"""

from __future__ import annotations

from collections.abc import Callable
from types import CodeType, FunctionType, MethodType
from typing import Any
from weakref import WeakKeyDictionary

import textual._callback as callback

__all__ = ["install"]

_bound: WeakKeyDictionary[FunctionType, int] = WeakKeyDictionary()
"""A function's count as a bound method (functions come and go: weak)."""
_plain: WeakKeyDictionary[CodeType, int] = WeakKeyDictionary()
"""A plain function's count, by its code."""
_textual_count: Callable[[Callable[..., Any]], int] = callback._count_parameters


def _count_parameters(func: Callable[..., Any]) -> int:
    kind = type(func)
    if kind is MethodType:
        function = func.__func__  # type: ignore[attr-defined]
        if type(function) is FunctionType and _plain_function(function):
            known = _bound.get(function)
            if known is None:
                known = _bound[function] = _textual_count(func)
            return known
    elif kind is FunctionType and _plain_function(func):  # type: ignore[arg-type]
        code = func.__code__
        known = _plain.get(code)
        if known is None:
            known = _plain[code] = _textual_count(func)
        return known
    return _textual_count(func)


def _plain_function(function: FunctionType) -> bool:
    """No signature of its own set on it: its code says its parameters."""
    attributes = function.__dict__
    return "__wrapped__" not in attributes and "__signature__" not in attributes


def install() -> None:
    """Count bound methods' parameters once (idempotent)."""
    callback._count_parameters = _count_parameters
