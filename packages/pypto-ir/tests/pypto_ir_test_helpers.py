"""Helpers shared by the pypto-ir tests, imported by name (conftest.py puts this folder on
sys.path, since --import-mode=importlib does not)."""

from __future__ import annotations

import importlib.util
import inspect
import itertools
import linecache
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import pypto.language as pl
from pypto.ir.errors import KernelError


class HostArray:
    """A tensor-like argument (``.shape``, ``.dtype``) as numpy or torch would pass it, for
    specialising a ``@pl.jit`` function without allocating data."""

    def __init__(self, shape: tuple[int, ...], dtype: str = "float32") -> None:
        self.shape = shape
        self.dtype = dtype


def tile_op_on_itself(op: Callable[..., Any]) -> pl.JITFunction:
    """A kernel that stores ``op(t, t)`` for ``t``, a [16, 32] tile of its input: for the
    checks a tile op makes of its operands."""

    @pl.jit
    def on_itself(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [16, 32])
            pl.store(op(t, t), [0, 0], out)
        return out

    return on_itself


def rejected_at_line(build: Callable[[], object], marker: str, message: str) -> None:
    """``build()`` raises a KernelError that names the file and line of ``build``'s source (or
    of its ``source`` attribute) holding ``marker`` (its decorators left out), and says
    ``message``."""
    with pytest.raises(KernelError) as info:
        build()
    msg = str(info.value)
    source = getattr(build, "source", build)
    lines, first = inspect.getsourcelines(source)
    body = next(i for i, text in enumerate(lines) if text.lstrip().startswith(("def ", "class ")))
    line = first + next(i for i, text in enumerate(lines) if i >= body and marker in text)
    assert f"{inspect.getsourcefile(source)}:{line}:" in msg, msg
    assert message in msg, msg


_generated = itertools.count()


def load_source(text: str, folder: Path) -> types.ModuleType:
    """Write ``text`` to a new file in ``folder`` and import it as a module, as a user's kernel
    file is imported (the parser reads a kernel's source lines from its file)."""
    path = folder / f"generated_{next(_generated)}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


class Rejections:
    """The programs a test module expects rejected, each registered with the marker of its
    offending line and the message (``@rejects("marker", "message")`` on a function that builds
    the program); ``rejects.test()`` is the module's parametrized test over them, one case per
    program, through :func:`rejected_at_line`."""

    def __init__(self) -> None:
        self.cases: list[Any] = []

    def __call__(self, marker: str, message: str) -> Callable[[Callable[[], object]], Callable[[], object]]:
        def register(build: Callable[[], object]) -> Callable[[], object]:
            self.cases.append(pytest.param(build, marker, message, id=build.__name__))
            return build

        return register

    def test(self) -> Callable[[Callable[[], object], str, str], None]:
        @pytest.mark.parametrize(("build", "marker", "message"), self.cases)
        def test_rejected_at_the_line(build: Callable[[], object], marker: str, message: str) -> None:
            rejected_at_line(build, marker, message)

        return test_rejected_at_the_line


def scope_kernel(lines: list[str], name: str, **names: object) -> pl.JITFunction:
    """``k(a, out)``: a ``@pl.jit`` kernel whose CORE_GROUP scope runs ``lines``, defined from
    text registered as file ``name`` (so that the parser reads it and errors name it), with
    ``pl`` and ``names`` in its module scope: for one kernel written once with the line under
    test varied."""
    body = "".join(f"        {line}\n" for line in lines)
    src = (
        "@pl.jit\ndef k(a: pl.Tensor, out: pl.Out[pl.Tensor]):\n"
        f"    with pl.at(level=pl.Level.CORE_GROUP):\n{body}    return out\n"
    )
    linecache.cache[name] = (len(src), None, src.splitlines(True), name)
    scope: dict[str, object] = {"pl": pl, **names}
    exec(compile(src, name, "exec"), scope)
    return scope["k"]  # type: ignore[return-value]
