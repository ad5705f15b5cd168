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
from pypto.ir.nodes import Assign, Call, ExprStmt, Function, Program, walk_stmts
from pypto.ir.passes import call_directions, outline_scopes, ssa, tensor_to_tile
from pypto.ir.verifier import VerifyLevel, verify
from pypto_testing.forms import from_source


class HostArray:
    """A tensor-like argument (``.shape``, ``.dtype``) as numpy or torch would pass it, for
    specialising a ``@pl.jit`` function without allocating data."""

    def __init__(self, shape: tuple[int, ...], dtype: str = "float32") -> None:
        self.shape = shape
        self.dtype = dtype


def to_tiles(fn: pl.JITFunction, *args: Any) -> Program:
    """``fn``'s program for ``args`` through SSA, outlining, call directions and the tensor-to-tile
    lowering, verified."""
    prog = call_directions.run(outline_scopes.run(ssa.run(fn.specialize(*args).program)))
    out = tensor_to_tile.run(prog)
    verify(out, VerifyLevel(ssa=True, outlined=True, lowered=True), "tensor_to_tile")
    return out


def call_ops(fn: Function) -> list[str]:
    """The ops of ``fn``'s call statements, in order (nested bodies included)."""
    return [
        s.value.op
        for s in walk_stmts(fn.body)
        if isinstance(s, (Assign, ExprStmt)) and isinstance(s.value, Call)
    ]


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


class TextProgram:
    """A ``@pl.program`` class ``P`` (or a ``@pl.function`` ``f``: then its IR) given as text, defined from the text registered as file
    ``name`` (so that the parser reads it and errors name it), with ``pl`` and ``names`` in its
    module scope: ``TextProgram(...)()`` defines it and is the program."""

    def __init__(self, text: str, name: str, **names: object) -> None:
        self.text = text
        self.name = name
        self.names = names
        self.__name__ = name

    def __call__(self) -> Any:
        linecache.cache[self.name] = (len(self.text), None, self.text.splitlines(True), self.name)
        scope: dict[str, object] = {"pl": pl, **self.names}
        exec(compile(self.text, self.name, "exec"), scope)
        return scope["P"] if "P" in scope else scope["f"].ir  # type: ignore[attr-defined]


def program(
    shape: str,
    name: str | None = None,
    *,
    main: list[str] | None = None,
    kernel: list[str] | None = None,
    ins: tuple[str, ...] = ("x",),
    out: str | None = "y",
    options: str = "",
    dtype: str = "pl.FP32",
    returns: str | None = None,
    **names: object,
) -> TextProgram:
    """A program ``P`` (text file ``name``, by default a new one) whose functions all take the
    tensors ``ins`` (a parameter written ``name: type`` is taken as written) and, unless ``out``
    is None, the output tensor ``out``, all of ``shape`` (such as ``"[16, 8]"``) and ``dtype``,
    and return one of them (or the type ``returns``): an InCore ``k`` running ``kernel`` and an orchestration ``main``
    (declared with ``options``, such as ``", auto_scope=False"``) running ``main``, each left
    out when not given (lines indented as under their ``def``, their own indents kept). For
    one program written once with the lines under test varied."""
    tensor = f"pl.Tensor[{shape}, {dtype}]"
    typed = [n if ":" in n else f"{n}: {tensor}" for n in ins]
    params = ", ".join(typed + ([f"{out}: pl.Out[{tensor}]"] if out else []))
    text = "@pl.program\nclass P:\n"
    for fn, kind, lines in (("k", "InCore", kernel), ("main", f"Orchestration{options}", main)):
        if lines is not None:
            body = "".join(f"        {line}\n" for line in lines)
            text += f"    @pl.function(type=pl.FunctionType.{kind})\n"
            text += f"    def {fn}(self, {params}) -> {returns or tensor}:\n{body}"
    return TextProgram(text, name or f"<program {next(_generated)}>", **names)


def function(
    kind: str, shape: str, lines: list[str], name: str | None = None, *, out: bool = False
) -> TextProgram:
    """A standalone ``@pl.function(type=pl.FunctionType.<kind>)`` ``f(x) -> x`` on an FP32
    tensor of ``shape`` that runs ``lines`` before returning ``x`` (with ``out``: ``f(x, out)``
    returning ``out``, an output tensor of that shape). Calling it parses ``f``."""
    tensor = f"pl.Tensor[{shape}, pl.FP32]"
    params = f"x: {tensor}, out: pl.Out[{tensor}]" if out else f"x: {tensor}"
    body = "".join(f"    {line}\n" for line in [*lines, "return out" if out else "return x"])
    text = f"@pl.function(type=pl.FunctionType.{kind})\ndef f({params}) -> {tensor}:\n{body}"
    return TextProgram(text, name or f"<function {next(_generated)}>")


def task_program(lines: list[str], name: str, options: str = "") -> TextProgram:
    """A program of an InCore kernel ``k(x) -> x`` on a [64] FP32 tensor and an orchestration
    ``main(x)`` (declared with ``options``) running ``lines``: the task-graph frame."""
    return program("[64]", name, kernel=["return x"], main=lines, out=None, options=options)


def rejected_at_line(build: Callable[[], object], marker: str, message: str) -> None:
    """``build()`` raises a KernelError that names the file and line of ``build``'s source (or
    of its ``source`` attribute; a :class:`TextProgram`'s text) holding ``marker`` (its
    decorators left out), and says ``message``."""
    with pytest.raises(KernelError) as info:
        build()
    msg = str(info.value)
    source = getattr(build, "source", build)
    if isinstance(source, TextProgram):
        lines, first, file = source.text.splitlines(True), 1, source.name
    else:
        lines, first = inspect.getsourcelines(source)
        file = inspect.getsourcefile(source)
    body = next(i for i, text in enumerate(lines) if text.lstrip().startswith(("def ", "class ")))
    line = first + next(i for i, text in enumerate(lines) if i >= body and marker in text)
    assert f"{file}:{line}:" in msg, msg
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

    def add(self, build: Callable[[], object], marker: str, message: str, name: str) -> None:
        """Register ``build`` (such as a :class:`TextProgram`) as case ``name``."""
        self.cases.append(pytest.param(build, marker, message, id=name))

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
    return from_source(src, name, **names)["k"]  # type: ignore[no-any-return]
