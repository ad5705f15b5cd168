"""``_compile_to_files``: passes + codegen + metadata into one artifact directory.

It returns the lowered IR and the build metadata and wraps nothing for execution: the runtime
builds the sources with ``simpler.toolchain`` and loads them. The directory layout and every
metadata field are described in docs/pypto-ir.md.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pypto.ir.analysis.return_lineage import definitions, entry_aliases, root_param
from pypto.ir.codegen import generate_kernel, generate_orchestration
from pypto.ir.contract import RUNTIMES, Contract, check_lowered_abi, parse_platform, validate_kernel_contract
from pypto.ir.errors import CompileError, KernelError
from pypto.ir.metadata import META_FILE, ArtifactMetadata, KernelInfo, OrchestrationInfo, write_metadata
from pypto.ir.nodes import (
    BinOp,
    Call,
    CallFunc,
    For,
    Function,
    If,
    Program,
    Scope,
    Stmt,
    Var,
    expr_children,
    stmt_exprs,
    walk_stmts,
)
from pypto.ir.param_info import ParamDirection, ParamInfo
from pypto.ir.passes import nz_layout, ssa
from pypto.ir.pipeline import lower
from pypto.ir.platforms import check_kernel_buffers
from pypto.ir.types import FunctionType, ScalarType, TensorType

__all__ = ["CompileResult", "_compile_to_files", "signature_of"]


@dataclass(frozen=True)
class CompileResult:
    """What ``_compile_to_files`` produced."""

    program: Program  # the lowered IR
    metadata: ArtifactMetadata
    output_dir: Path
    files: tuple[Path, ...]  # every file written, compiled_meta.json last


def signature_of(program: Program, name: str | None = None) -> tuple[ParamInfo, ...]:
    """ParamInfo signature of a program function (the entry by default)."""
    fn = program.functions[name or program.entry]
    out = []
    for p in fn.params:
        t = p.var.type
        if isinstance(t, TensorType):
            out.append(ParamInfo(ssa.base_name(p.name), p.direction, t.static_shape, t.dtype, t.layout))
        elif isinstance(t, ScalarType):
            out.append(ParamInfo(ssa.base_name(p.name), ParamDirection.IN, None, t.dtype))
        else:
            raise CompileError(
                f"parameter {p.name!r} of {fn.name!r} has type {t}, which no signature can carry"
            )
    return tuple(out)


def host_tensor_access(program: Program) -> tuple[str, ...]:
    """Orchestration statements that read or write tensor data on the host (outside pl.at)."""
    found: list[str] = []

    def visit(body: tuple[Stmt, ...]) -> None:
        for s in body:
            if isinstance(s, Scope):
                continue  # on-core work
            for e in stmt_exprs(s):
                for c in _calls(e):
                    if c.op in ("tensor.read", "tensor.write"):
                        where = f" at {c.span}" if c.span is not None else ""
                        found.append(f"pl.{c.op.split('.')[1]}({c.args[0]}){where}")
            if isinstance(s, For):
                visit(s.body)
            elif isinstance(s, If):
                visit(s.then_body)
                visit(s.else_body)

    for f in program.funcs:
        if f.func_type is FunctionType.Orchestration:
            visit(f.body)
    return tuple(found)


def check_host_access(program: Program) -> None:
    """Host reads/writes in the orchestration run when the orchestration reaches them, not in
    task order: reject reads of tensors a kernel writes and writes to tensors a kernel uses."""
    for f in program.funcs:
        if f.func_type is not FunctionType.Orchestration:
            continue
        defs = definitions(f.body)
        touched: dict[object, set[str]] = {}
        for s in walk_stmts(f.body):
            for e in stmt_exprs(s):
                if isinstance(e, CallFunc):
                    for a, d in zip(e.args, e.directions, strict=False):
                        if isinstance(a, Var):
                            key = _root_key(f, a, program, defs)
                            touched.setdefault(key, set()).add(d.value)
        for s in walk_stmts(f.body):
            for e in stmt_exprs(s):
                for c in _calls(e):
                    if c.op not in ("tensor.read", "tensor.write") or not isinstance(c.args[0], Var):
                        continue
                    uses = touched.get(_root_key(f, c.args[0], program, defs), set())
                    bad = uses - {"In"} if c.op == "tensor.read" else uses
                    if bad:
                        verb = "reads" if c.op == "tensor.read" else "writes"
                        raise KernelError(
                            f"pl.{c.op.split('.')[1]} on {c.args[0]} {verb} it on the host, but kernels of this "
                            f"orchestration use it ({', '.join(sorted(uses))}); host access is not ordered with "
                            "tasks: read only inputs no kernel writes, write only tensors no kernel uses",
                            c.span,
                        )


def _root_key(fn: Function, v: Var, program: Program, defs: dict[str, object]) -> object:
    idx = root_param(fn, v, program, defs)
    return ("param", idx) if idx is not None else ("value", v.name)


def _calls(e: object) -> list[Call]:
    out: list[Call] = []
    if isinstance(e, Call):
        out.append(e)
    if isinstance(e, (Call, BinOp, CallFunc)):
        for c in expr_children(e):
            out.extend(_calls(c))
    return out


def _write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _compile_to_files(
    program: Program | Any,
    output_dir: str | os.PathLike[str],
    *,
    contract: Contract | str,
    platform: str,
    runtime: str = "tensormap_and_ringbuffer",
    supplied: tuple[bool, ...] | None = None,
    entry: str | None = None,
) -> CompileResult:
    """Lower ``program``, generate its C++ and write the artifact directory.

    Args:
        program: An IR ``Program`` (or anything with a ``.program``, e.g. a Specialization).
        output_dir: Created if missing; must not already hold ``compiled_meta.json``.
        contract: ``Contract.PROGRAM`` or ``Contract.KERNEL`` (or their names).
        platform: ``a2a3sim``, ``a5sim``, ``a2a3`` or ``a5``.
        runtime: ``tensormap_and_ringbuffer`` or ``host_build_graph``.
        supplied: KERNEL only: per logical parameter, whether the caller supplies it.
        entry: The orchestration to compile, for a program with several (default: the
            program's entry). Only the kernels it calls are generated.

    Returns:
        The lowered IR, the metadata written and the files.
    """
    if not isinstance(program, Program):
        program = getattr(program, "program", program)
    if not isinstance(program, Program):
        raise TypeError(
            f"_compile_to_files(program): expected a pypto.ir Program, got {type(program).__name__}"
        )
    contract = Contract.parse(contract)
    platform = parse_platform(platform)
    orchestrations = [f.name for f in program.funcs if f.func_type is FunctionType.Orchestration]
    if entry is not None:
        if entry not in orchestrations:
            raise ValueError(
                f"entry: expected one of the program's orchestrations {orchestrations}, got {entry!r}"
            )
        program = Program(program.name, program.funcs, entry)
        orchestrations = [entry]
    if runtime not in RUNTIMES:
        raise ValueError(f"runtime: expected one of {', '.join(RUNTIMES)}, got {runtime!r}")
    out = Path(output_dir)
    if (out / META_FILE).exists():
        raise FileExistsError(f"{out / META_FILE} already exists; compile into a fresh directory")

    original = ssa.run(program)  # aliases come from the original IR, in SSA form
    raw_aliases = entry_aliases(original)
    params = signature_of(program)
    if contract is Contract.KERNEL:
        aliases = validate_kernel_contract(
            entries=orchestrations,
            chips=1,
            params=params,
            return_aliases=raw_aliases,
            supplied=supplied,
            runtime=runtime,
            host_tensor_access=host_tensor_access(program),
        )
    else:
        for k, a in enumerate(raw_aliases):
            if a is None:
                raise CompileError(
                    f"{program.entry}: return value {k} is not one of the function's tensor parameters; "
                    "return the Out/InOut tensors the kernels wrote (e.g. `return c`)"
                )
        aliases = tuple(a for a in raw_aliases if a is not None)

    lowered = lower(program).program
    check_host_access(lowered)
    entry_fn = lowered.entry_function
    try:
        lowered_params = nz_layout.lower_signature(signature_of(lowered))
    except ValueError as exc:
        raise CompileError(str(exc)) from None
    if contract is Contract.KERNEL:
        check_lowered_abi(params, lowered_params)

    called = {e.callee for s in walk_stmts(entry_fn.body) for e in stmt_exprs(s) if isinstance(e, CallFunc)}
    kernels = [f for f in lowered.funcs if f.func_type.is_kernel and f.name in called]
    func_ids = {k.name: i for i, k in enumerate(kernels)}
    texts: dict[str, str] = {}  # everything is generated before the first file is written
    infos: list[KernelInfo] = []
    for kfn in kernels:
        src = generate_kernel(kfn)
        rel = f"kernels/{kfn.name}.cpp"
        texts[rel] = src.text
        kparams = tuple(
            ParamInfo(
                ssa.base_name(p.name),
                p.direction,
                p.var.type.static_shape,
                p.var.type.dtype,
                p.var.type.layout,
            )
            if isinstance(p.var.type, TensorType)
            else ParamInfo(ssa.base_name(p.name), ParamDirection.IN, None, p.var.type.dtype)  # type: ignore[union-attr]
            for p in src.params
        )
        # The platform's on-chip buffers must hold every tile the kernel declares.
        usage = check_kernel_buffers(kfn.name, platform, src.tiles, span=kfn.span)
        infos.append(
            KernelInfo(
                kfn.name,
                func_ids[kfn.name],
                src.core_type.value,
                rel,
                src.entry,
                kparams,
                tuple((space.value, n) for space, n in usage.items()),
            )
        )
    orch = generate_orchestration(entry_fn, lowered, func_ids)
    orel = f"orchestration/{entry_fn.name}.cpp"
    texts[orel] = orch.text
    texts["ir/lowered.txt"] = str(lowered) + "\n"

    meta = ArtifactMetadata(
        name=program.name,
        entry=entry_fn.name,
        contract=contract,
        platform=platform,
        runtime=runtime,
        params=params,
        lowered_params=lowered_params,
        return_count=len(entry_fn.returns),
        return_aliases=aliases,
        orchestration=OrchestrationInfo(
            orel, orch.func_name, orch.needs_name, orch.tensor_count, orch.scalar_count
        ),
        kernels=tuple(infos),
    )
    files: list[Path] = []
    try:
        for rel, text in texts.items():
            _write_text(out / rel, text)
            files.append(out / rel)
        files.append(write_metadata(out, meta))  # last: its presence means the directory is complete
    except BaseException:
        for f in files:
            f.unlink(missing_ok=True)
        raise
    return CompileResult(lowered, meta, out, tuple(files))
