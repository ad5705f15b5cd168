"""``pl.parse`` and ``pl.loads``: kernel-language programs and functions from source text.

The text is ordinary kernel-language Python: one ``@pl.function`` or one ``@pl.program`` class
(plus whatever plain Python it needs, such as ``M = pl.dynamic("M")``), as written by hand or
printed by ``Function.as_python()`` / ``Program.as_python()``. It runs as a module of its own
in which ``pl`` is already bound, so ``import pypto.language as pl`` may be left out; the
parser reads the function bodies from the text itself (registered with :mod:`linecache` under
the file name errors show), so a parse needs no file on disk and errors point into the text.
"""

from __future__ import annotations

import itertools
import linecache
import os
import threading
from typing import Any

from pypto.ir.nodes import Function, Program

__all__ = ["loads", "parse"]

_counter = itertools.count(1)
_lock = threading.Lock()


def parse(code: str, *, filename: str | None = None) -> Function | Program:
    """The IR of the one ``@pl.function`` or ``@pl.program`` defined in ``code``.

    A text with one ``@pl.program`` gives that Program (standalone ``@pl.function`` helpers it
    calls belong to it); otherwise the text must define exactly one ``@pl.function``, which
    is parsed now and returned as a Function.

    Args:
        code: Kernel-language source text.
        filename: The name errors and spans show (default ``<pl.parse-N>``).

    Raises:
        TypeError: ``code`` is not a string.
        SyntaxError: ``code`` is not valid Python.
        ValueError: ``code`` defines no ``@pl.function``/``@pl.program``, or more than one.
        KernelError: a function body is not valid kernel language.
    """
    if not isinstance(code, str):
        raise TypeError(
            f"pl.parse(code): expected a str of kernel-language source, got {type(code).__name__}"
        )
    import pypto.language as pl
    from pypto.language.decorators import DSLFunction

    with _lock:
        name = filename or f"<pl.parse-{next(_counter)}>"
        lines = code.splitlines(keepends=True)
        # inspect.getsource reads the function bodies from here (the text has no file)
        linecache.cache[name] = (len(code), None, lines, name)
    compiled = compile(code, name, "exec")  # SyntaxError propagates, positioned in the text
    namespace: dict[str, Any] = {"pl": pl, "__name__": "__pl_parse__", "__file__": name}
    exec(compiled, namespace)
    found = [(k, v) for k, v in namespace.items() if isinstance(v, (DSLFunction, Program))]
    programs = [(k, v) for k, v in found if isinstance(v, Program)]
    if len(programs) == 1:
        return programs[0][1]
    if len(programs) > 1:
        raise ValueError(
            f"pl.parse(code): expected one @pl.program, found {len(programs)}: "
            f"{', '.join(k for k, _ in programs)}; parse each program's text on its own"
        )
    if not found:
        raise ValueError(
            "pl.parse(code): expected one @pl.function (or one @pl.program class) in the code, found none"
        )
    if len(found) > 1:
        raise ValueError(
            f"pl.parse(code): expected one @pl.function, found {len(found)}: {', '.join(k for k, _ in found)}; "
            "put them in a @pl.program class, or parse each on its own"
        )
    fn = found[0][1]
    assert isinstance(fn, DSLFunction)
    return fn.ir


def loads(path: str | os.PathLike[str]) -> Function | Program:
    """``pl.parse`` of the text of the file at ``path`` (spans name that file).

    Raises:
        FileNotFoundError: no file at ``path``.
        and what :func:`parse` raises.
    """
    path = os.fspath(path)
    with open(path, encoding="utf-8") as f:
        code = f.read()
    return parse(code, filename=path)
