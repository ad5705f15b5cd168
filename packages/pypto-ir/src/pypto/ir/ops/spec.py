"""The records of the op table and the registry they are entered in.

Two levels: a ``LangOp`` is one ``pl.*`` function (its signature, doc and the IR ops it
becomes, chosen by the kind of its first operand); an ``OpSpec`` is one IR op (``tile.add``,
``tensor.add``, ...: arity, type rule, and for tile ops the PTO-ISA instruction a kernel calls).
``pypto.ir.ops.table`` enters every op; ``pypto.language`` builds the ``pl`` functions from
``LANGUAGE`` and the kernel emitter writes ``OpSpec.cpp``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pypto.ir.dtypes import DataType
from pypto.ir.types import MemorySpace, ScalarType, TensorType, TileType, Type

__all__ = [
    "LANGUAGE",
    "OPS",
    "REQUIRED",
    "Cpp",
    "LangOp",
    "OpError",
    "OpSpec",
    "Param",
    "Rule",
    "infer",
    "op_for",
]


class OpError(Exception):
    """An op applied to operands it does not accept."""


Rule = Callable[[list[Type], dict[str, Any]], Type]
"""A type rule: the operand types (tuple operands such as offsets left out) and the attributes
-> the result type, or ``OpError`` saying what is wrong and how to fix it."""


@dataclass(frozen=True)
class Cpp:
    """How a kernel writes a tile op: one PTO-ISA instruction ``fn(dst, <operands>..., <tail>)``.

    ``fn`` names a PTO-ISA instruction (``TADD``, ``TROWSUM``, ...; ``pto`` namespace) or, when
    ``helper`` is set, a function of simpler/kernel_args.hpp (``simpler::kernel``, spelled
    ``sk::`` in kernels) written over the public Tile API for an op the ISA has no instruction
    for. ``operands`` are the IR operand positions passed after the destination. ``into``: the
    result is that operand updated (the destination is the operand's storage, or a TMOV copy of
    it). ``scalar_fn``: the instruction used when the last operand is a scalar. ``tail``:
    ``"row_col"`` appends the two entries of the offsets operand, ``"position"`` puts them (an
    element's position, as ``std::int64_t``) right after the destination, ``"count"`` appends the
    last operand, an integer scalar, as ``std::uint32_t`` (TMRGSORT's run length), ``"pad"`` nothing (the pad
    value is the destination tile's ``PadValue``), ``"cmp"`` the ``cmp_type`` attribute as a
    ``CmpMode``, ``"round"`` the ``mode`` attribute as a ``RoundMode``. ``nz_fn``: the
    simpler/kernel_args.hpp function that makes the GM view of an NZ tensor (load/store). ``scalar_like``: the operand
    whose element type a scalar operand takes (default: the result's). ``tmp``: the instruction
    takes a scratch tile, of operand ``tmp_like``'s type (None: the result's), as its argument
    number ``tmp_at`` (None: after all the others; the destination is argument 0); the call's
    operand ``tmp_arg``, when the kernel passes one, is that scratch tile. ``valid``: the destination's
    valid shape: ``"same"`` as the first tile operand, ``"row"`` [rows, 1] of it, ``"col"`` [1,
    cols] of it, ``"matmul"`` [rows of operand 0, cols of operand 1], ``"trans"`` its transpose,
    ``"static"`` the result type's shape, ``"mask"`` a packed predicate mask of it ([rows,
    ceil(cols / 8)] bytes), ``"index"`` that of the second tile operand (a gather's indices),
    ``"pairs"`` [rows, 2 cols] of the first (TSORT32's pairs), ``"rows"`` its rows and the result
    type's columns. ``template``: the attribute that is the instruction's template argument:
    ``"mask_pattern"`` spells ``fn<decltype(dst), <src's type>, MaskPattern::P..>``.
    ``inplace``: the ISA allows the destination to be a source (element-wise instructions).
    """

    fn: str
    operands: tuple[int, ...] = (0,)
    into: int | None = None
    scalar_fn: str | None = None
    tail: Literal["", "row_col", "position", "count", "pad", "cmp", "round"] = ""
    nz_fn: str | None = None
    scalar_like: int | None = None
    tmp: bool = False
    tmp_at: int | None = None
    tmp_like: int | None = 0
    tmp_arg: int | None = None
    valid: Literal["same", "row", "col", "matmul", "trans", "static", "mask", "index", "pairs", "rows"] = (
        "same"
    )
    inplace: bool = False
    helper: bool = False
    template: Literal["", "mask_pattern"] = ""

    @property
    def functions(self) -> tuple[str, ...]:
        """Every instruction or helper this op may call."""
        return tuple(f for f in (self.fn, self.scalar_fn, self.nz_fn) if f)


@dataclass(frozen=True)
class OpSpec:
    """One IR op.

    ``min_args``/``max_args`` count the typed operands (tuple operands such as offsets are not
    counted; ``offsets_at`` is the position of the offsets tuple among the call's arguments).
    ``attrs`` are the attribute names the op reads. ``on_core``: the op is kernel work (it runs
    inside ``pl.at`` or a kernel). ``dtypes``/``spaces``: the element types and memory spaces its
    tile or tensor operands accept, where a family of ops shares one rule that reads them
    (``None``: the rule says).
    """

    name: str
    infer: Rule
    min_args: int
    max_args: int
    cpp: Cpp | None = None
    attrs: tuple[str, ...] = ()
    offsets_at: int | None = None
    on_core: bool = True
    dtypes: frozenset[DataType] | None = None
    spaces: tuple[MemorySpace, ...] | None = None

    @property
    def kind(self) -> str:
        """``tile``, ``tensor`` or ``scalar``: the level the op works at."""
        return self.name.split(".", 1)[0]


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()
"""The default of a parameter that has none."""


@dataclass(frozen=True)
class Param:
    """One parameter of a ``pl.*`` function."""

    name: str
    default: Any = REQUIRED


@dataclass(frozen=True)
class LangOp:
    """One ``pl.*`` function: the surface the parser binds calls against.

    ``forms`` maps the kind of the first operand (``tile``, ``tensor``, ``scalar``) to the IR op
    the call becomes; ``default`` is the IR op when that kind has no form (ops whose form does
    not depend on an operand, such as ``pl.load``). ``public``: the language has a function for
    it (``view`` is the IR op of a tensor window and has none). ``in_pl``: that function is
    ``pl.<name>``; without it the op is spelled only in its level namespaces (``pl.tile.adds``,
    as upstream PyPTO spells it). ``alias``: a second spelling in ``pl.tile`` / ``pl.tensor``
    (``pl.tile.create`` is ``pl.create_tile``). ``group`` orders the reference. ``exported``: the
    name the language exports it under when that differs from ``name`` (the table's key): two
    functions of one name at different levels (``pl.tile.random``, and the tensor form
    ``pl.random`` / ``pl.tensor.random`` entered as ``tensor_random``).
    """

    name: str
    params: tuple[Param, ...]
    doc: str
    forms: Mapping[str, str] = field(default_factory=dict)
    default: str | None = None
    group: str = ""
    public: bool = True
    spelling: str = ""  # how users write it when not ``pl.<name>`` (``pld.system.notify``)
    in_pl: bool = True
    alias: str = ""
    exported: str = ""

    @property
    def public_name(self) -> str:
        """The name of its function in ``pl`` / ``pl.tile`` / ``pl.tensor``."""
        return self.exported or self.name

    @property
    def spelled(self) -> str:
        """How a kernel writes the function: ``pl.add``, its own spelling (``pld.system.notify``),
        or ``pl.tile.adds`` for an op that is not in ``pl`` itself (``pl.tensor.<name>`` when it
        has no tile form)."""
        if self.spelling:
            return self.spelling
        if self.in_pl:
            return f"pl.{self.public_name}"
        return f"pl.tile.{self.public_name}" if self.tile_level else f"pl.tensor.{self.public_name}"

    @property
    def ir_ops(self) -> tuple[str, ...]:
        """Every IR op this function may become."""
        names = list(self.forms.values())
        if self.default is not None and self.default not in names:
            names.append(self.default)
        return tuple(names)

    @property
    def tile_level(self) -> bool:
        """Exported in ``pl.tile`` too: one of its forms works on tiles."""
        return any(n.startswith("tile.") for n in self.ir_ops)

    @property
    def tensor_level(self) -> bool:
        """Exported in ``pl.tensor`` too: one of its forms works on tensors."""
        return any(n.startswith("tensor.") for n in self.ir_ops)


OPS: dict[str, OpSpec] = {}
LANGUAGE: dict[str, LangOp] = {}


def op_for(lang: LangOp, first: Type | None) -> str | None:
    """The IR op a call of ``lang`` becomes when its first operand has type ``first``
    (``None``: no form for that operand)."""
    kind = (
        "tile"
        if isinstance(first, TileType)
        else "tensor"
        if isinstance(first, TensorType)
        else "scalar"
        if isinstance(first, ScalarType)
        else ""
    )
    if kind in lang.forms:
        return lang.forms[kind]
    return lang.default


def infer(name: str, args: list[Type], attrs: dict[str, Any]) -> Type:
    """The result type of IR op ``name`` on operands of types ``args``; ``OpError`` if rejected."""
    spec = OPS.get(name)
    if spec is None:
        raise OpError(f"unknown operator {name!r}")
    if not spec.min_args <= len(args) <= spec.max_args:
        want = str(spec.min_args) if spec.min_args == spec.max_args else f"{spec.min_args} to {spec.max_args}"
        raise OpError(f"pl.{name.split('.', 1)[1]} takes {want} operand(s), got {len(args)}")
    return spec.infer(args, attrs)
