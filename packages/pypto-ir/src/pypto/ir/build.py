"""The state of one compile and the steps that fill it in; ``pipeline.COMPILE`` orders them.

Each step reads what the steps before it produced and fills in its own fields of ``Build``;
nothing is written to disk here (``compile.compile_to_files`` writes the files).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pypto.ir.analysis.host_access import check_host_access, host_tensor_access
from pypto.ir.analysis.return_lineage import entry_aliases
from pypto.ir.analysis.signature import signature_of
from pypto.ir.codegen import KernelSource, OrchestrationSource, generate_kernel, generate_orchestration
from pypto.ir.contract import Contract, check_lowered_abi, validate_kernel_contract
from pypto.ir.errors import CodegenError, PyptoCompileError
from pypto.ir.metadata import ArtifactMetadata, KernelInfo, OrchestrationInfo, attr_json
from pypto.ir.nodes import CallFunc, Function, Program, stmt_exprs, walk_stmts
from pypto.ir.param_info import ParamDirection, ParamInfo
from pypto.ir.passes import nz_layout, ssa
from pypto.ir.platforms import TileAlloc, check_kernel_buffers, get_platform
from pypto.ir.types import TensorType

__all__ = [
    "Build",
    "aliases",
    "buffer_capacity",
    "contract",
    "host_access",
    "kernels",
    "lower_signature",
    "lowered_abi",
    "metadata",
    "orchestration",
]


@dataclass
class Build:
    """One compile: its inputs (first six fields), then what each step produced."""

    program: Program  # the parsed IR, its entry the orchestration to compile
    contract: Contract
    platform: str
    runtime: str
    supplied: tuple[bool, ...] | None
    orchestrations: tuple[str, ...]  # the orchestrations compiled (the entry)
    params: tuple[ParamInfo, ...] = ()  # aliases: the logical signature
    ssa_form: Program | None = None  # aliases: the parsed IR in SSA form (lower's first stage)
    raw_aliases: tuple[int | None, ...] = ()  # aliases: per return, the parameter (or None)
    aliases: tuple[int, ...] = ()  # contract: the validated return aliases
    lowered: Program | None = None  # lower
    lowered_params: tuple[ParamInfo, ...] = ()  # lower_signature
    kernel_sources: dict[str, KernelSource] = field(default_factory=dict)  # kernels, in func_id order
    kernel_infos: list[KernelInfo] = field(default_factory=list)  # buffer_capacity
    orchestration: OrchestrationSource | None = None  # orchestration
    texts: dict[str, str] = field(default_factory=dict)  # relative path -> file text
    meta: ArtifactMetadata | None = None  # metadata

    @property
    def lowered_program(self) -> Program:
        if self.lowered is None:
            raise RuntimeError("the 'lower' step has not run")
        return self.lowered


def target(b: Build) -> None:
    """The platform must be one of :data:`pypto.ir.platforms.PLATFORMS`. An NPU platform (a2a3,
    a5) gets the same PTO-ISA kernel sources as its simulator; building them for the device is
    pypto-runtime's (``pypto.runtime.device_build``)."""
    get_platform(b.platform)


def aliases(b: Build) -> None:
    """A second SSA run, on the original IR: aliases come from the original IR, in SSA form."""
    original = ssa.run(b.program)
    b.ssa_form = original
    b.raw_aliases = entry_aliases(original)
    b.params = signature_of(b.program)


def contract(b: Build) -> None:
    """KERNEL: the contract's checks on the original IR; PROGRAM: every return aliases a parameter."""
    if b.contract is Contract.KERNEL:
        b.aliases = validate_kernel_contract(
            entries=list(b.orchestrations),
            chips=1,
            params=b.params,
            return_aliases=b.raw_aliases,
            supplied=b.supplied,
            runtime=b.runtime,
            host_tensor_access=host_tensor_access(b.program),
        )
        return
    for k, a in enumerate(b.raw_aliases):
        if a is None:
            raise CodegenError(
                f"{b.program.entry}: return value {k} is not one of the function's tensor parameters; "
                "return the Out/InOut tensors the kernels wrote (e.g. `return c`)"
            )
    b.aliases = tuple(a for a in b.raw_aliases if a is not None)


def host_access(b: Build) -> None:
    check_host_access(b.lowered_program)


def lower_signature(b: Build) -> None:
    try:
        b.lowered_params = nz_layout.lower_signature(signature_of(b.lowered_program))
    except ValueError as exc:
        raise PyptoCompileError(str(exc)) from None


def lowered_abi(b: Build) -> None:
    if b.contract is Contract.KERNEL:
        check_lowered_abi(b.params, b.lowered_params)


def _called_kernels(lowered: Program) -> list[Function]:
    entry_fn = lowered.entry_function
    called = {e.callee for s in walk_stmts(entry_fn.body) for e in stmt_exprs(s) if isinstance(e, CallFunc)}
    return [f for f in lowered.funcs if f.func_type.is_kernel and f.name in called]


def kernels(b: Build) -> None:
    """One source per kernel the entry calls (func_id = position); generated before any file is written."""
    for kfn in _called_kernels(b.lowered_program):
        src = generate_kernel(kfn, b.platform)
        b.kernel_sources[kfn.name] = src
        b.texts[f"kernels/{kfn.name}.cpp"] = src.text


def kernel_tiles(kfn: Function, src: KernelSource) -> tuple[TileAlloc, ...]:
    """The storages of ``kfn``'s tiles as its generated source places them (the memory-allocation
    pass, pypto.ir.passes.memory_alloc): padded shapes and live ranges, one per storage."""
    del kfn
    return src.tiles


def buffer_capacity(b: Build) -> None:
    """The platform's on-chip buffers must hold the tiles each kernel has live at the same time."""
    lowered = b.lowered_program
    for func_id, (name, src) in enumerate(b.kernel_sources.items()):
        kfn = lowered.functions[name]
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
        usage = check_kernel_buffers(name, b.platform, kernel_tiles(kfn, src), span=kfn.span)
        b.kernel_infos.append(
            KernelInfo(
                name,
                func_id,
                src.core_type.value,
                f"kernels/{name}.cpp",
                src.entry,
                kparams,
                tuple((space.value, n) for space, n in usage.items()),
                kfn.hints,
                tuple((key, attr_json(v)) for key, v in kfn.attrs),
            )
        )


def orchestration(b: Build) -> None:
    lowered = b.lowered_program
    func_ids = {name: i for i, name in enumerate(b.kernel_sources)}
    b.orchestration = generate_orchestration(lowered.entry_function, lowered, func_ids)
    b.texts[f"orchestration/{lowered.entry}.cpp"] = b.orchestration.text
    b.texts["ir/lowered.txt"] = str(lowered) + "\n"


def metadata(b: Build) -> None:
    lowered = b.lowered_program
    entry_fn = lowered.entry_function
    orch = b.orchestration
    if orch is None:
        raise RuntimeError("the 'orchestration' step has not run")
    b.meta = ArtifactMetadata(
        name=b.program.name,
        entry=entry_fn.name,
        contract=b.contract,
        platform=b.platform,
        runtime=b.runtime,
        params=b.params,
        lowered_params=b.lowered_params,
        return_count=len(entry_fn.returns),
        return_aliases=b.aliases,
        orchestration=OrchestrationInfo(
            f"orchestration/{entry_fn.name}.cpp",
            orch.func_name,
            orch.needs_name,
            orch.tensor_count,
            orch.scalar_count,
        ),
        kernels=tuple(b.kernel_infos),
    )
