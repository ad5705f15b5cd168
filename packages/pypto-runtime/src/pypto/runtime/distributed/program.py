"""``DistributedCompiledProgram``: what ``host_fn.compile(..., config=RunConfig(distributed_config=...))``
returns, and the host compiler that ``pypto.runtime`` installs for ``@pl.jit.host``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pypto.ir import DistributedCompiledProgram as _CompiledBase
from pypto.ir import DistributedConfig, Program
from pypto.language.interface import HostFunction
from pypto.runtime import mode_gate
from pypto.runtime.distributed.call_args import bind_host_args, with_outputs
from pypto.runtime.distributed.entry import MissingStoreEntry, load_plan, obtain_plan
from pypto.runtime.distributed.plan import DistributedPlan, plan_host
from pypto.runtime.distributed.worker import DistributedWorker

__all__ = ["DistributedCompiledProgram", "compile_host"]


class DistributedCompiledProgram(_CompiledBase):
    """A compiled multi-chip program: its plan, a store entry (``output_dir/plan.json``, ``key``),
    and the per-rank artifacts it names by key.

    Call it to run once (ranks start and stop around the call), or :meth:`prepare` a
    :class:`DistributedWorker` that keeps the ranks running across dispatches.
    """

    def __init__(
        self,
        plan: DistributedPlan,
        output_dir: Path,
        config: DistributedConfig,
        sub_workers: dict[str, Any] | None = None,
        key: str | None = None,
    ) -> None:
        self.plan = plan
        self.output_dir = output_dir
        self.distributed_config = config
        # the host-level SubWorkers of a @pl.program (HostLevelFunction by name): their Python
        # bodies run on the sub-worker processes; a program reloaded by from_dir has none
        self.sub_workers: dict[str, Any] = dict(sub_workers or {})
        self.key = key

    def __repr__(self) -> str:
        return (
            f"DistributedCompiledProgram({self.plan.name!r}, world_size={self.plan.world_size}, "
            f"output_dir={str(self.output_dir)!r})"
        )

    def __fspath__(self) -> str:
        return str(self.output_dir)

    @property
    def world_size(self) -> int:
        return self.plan.world_size

    def _check_config(self, config: Any) -> None:
        dc = getattr(config, "distributed_config", None)
        if dc is not None and tuple(dc.device_ids) != self.plan.device_ids:
            raise ValueError(
                f"{self.plan.name}(config=...): compiled for device_ids {list(self.plan.device_ids)}, "
                f"got distributed_config.device_ids {list(dc.device_ids)}"
            )
        for field in ("platform", "runtime"):
            want, got = getattr(self.plan, field), getattr(config, field, None)
            if got is not None and got != want:
                raise ValueError(
                    f"{self.plan.name}(config=...): compiled for {field} {want!r}, got RunConfig({field}={got!r}); "
                    f"compile again for {got!r} or pass a RunConfig with {field}={want!r}"
                )

    @property
    def required_callbacks(self) -> tuple[str, ...]:
        """The runtime-bound SubWorkers (``...`` bodies) that ``prepare(callbacks=)`` must bind."""
        return self.plan.required_callbacks

    def prepare(
        self,
        config: Any = None,
        *,
        extra_compiled: list[Any] | tuple[Any, ...] = (),
        callbacks: dict[str, Any] | None = None,
        sub_worker_overrides: dict[str, Any] | None = None,
        persistent: bool = False,
        reset_persistent_windows: bool | None = None,
    ) -> DistributedWorker:
        """Start the ranks; the returned worker runs dispatches (``worker(*args)``, or
        ``worker.run(compiled, *args)``) until it is closed. ``extra_compiled``: more programs
        for the same devices, run on the same worker (``worker.run(other, *args)``);
        ``callbacks``: SubWorker implementations by name, called as ``fn(args)``: required for
        the runtime-bound ones (``...`` bodies; a missing one is a ValueError here), and replacing
        the Python body of any other. ``sub_worker_overrides``: upstream's deprecated name for
        ``callbacks`` (a DeprecationWarning; ``callbacks`` wins on a name in both).
        ``persistent=True, reset_persistent_windows=False`` (upstream's keywords) keeps the
        windows' contents from one dispatch to the next instead of zeroing them
        (``DistributedWorker.reset_windows``)."""
        mode_gate.claim_program(f"{self.plan.name}.prepare() (distributed)")
        if sub_worker_overrides is not None:
            import warnings

            warnings.warn(
                "prepare(sub_worker_overrides=...) is deprecated; pass callbacks=... instead",
                DeprecationWarning,
                stacklevel=2,
            )
            callbacks = {**sub_worker_overrides, **(callbacks or {})}
        self._check_config(config)
        for name, value in (
            ("persistent", persistent),
            ("reset_persistent_windows", reset_persistent_windows),
        ):
            if value is not None and not isinstance(value, bool):
                raise TypeError(f"prepare({name}=...): expected True or False, got {value!r}")
        worker = DistributedWorker(
            [self, *extra_compiled],
            timeout=self.distributed_config.timeout,
            aic_threads=getattr(config, "aic_threads", None) or 1,
            aiv_threads=getattr(config, "aiv_threads", None) or 1,
            callbacks=callbacks,
            data_path=self.data_path(config),
        )
        worker.reset_windows = not (persistent and reset_persistent_windows is False)
        return worker

    def data_path(self, config: Any = None) -> str:
        """The data path a worker prepared with ``config`` uses: ``config``'s
        ``distributed_config.data_path``, else the compiled one's, else ``PYPTO_DIST_DATA_PATH``
        (under torchrun's launcher, ``process_group`` when that is not set)."""
        from pypto.runtime.distributed.launch import default_data_path

        dc = getattr(config, "distributed_config", None)
        for chosen in (getattr(dc, "data_path", None), self.distributed_config.data_path):
            if chosen is not None:
                return str(chosen)
        return default_data_path()

    def __call__(
        self, *args: Any, config: Any = None, callbacks: dict[str, Any] | None = None, **kwargs: Any
    ) -> Any:
        """Run once; omitted ``pl.Out`` tensors are allocated (zeros) and returned (one, or a
        tuple in parameter order), else None."""
        # Before any host tensor is allocated or moved to shared memory (the mode gate).
        mode_gate.claim_program(f"{self.plan.name}() (one-shot distributed run)")
        kwargs, returned = with_outputs(self.plan, args, kwargs)
        bind_host_args(self.plan, args, kwargs)  # a wrong call fails before any rank starts
        with self.prepare(config, callbacks=callbacks) as worker:
            worker(*args, **kwargs)
        return returned

    @classmethod
    def from_dir(
        cls, path: str | Path, config: DistributedConfig | None = None
    ) -> DistributedCompiledProgram:
        """Reload a compiled program from its entry directory (``output_dir``): the entry is
        validated against its manifest and every per-rank artifact must be a valid entry of the
        store (else :class:`~pypto.runtime.distributed.entry.MissingStoreEntry` names its key)."""
        from pypto.runtime._fs import read_regular
        from pypto.runtime.manifest import MANIFEST_NAME, InvalidEntry, Manifest, validate_entry

        root = Path(path)
        try:
            key = Manifest.loads(read_regular(root / MANIFEST_NAME)).key
        except FileNotFoundError:
            raise InvalidEntry(f"{root}: no {MANIFEST_NAME}; not a compiled distributed program") from None
        manifest = validate_entry(root, key=key)
        plan = load_plan(root, manifest, key)
        return cls(plan, root, config or DistributedConfig(device_ids=plan.device_ids), key=key)

    @classmethod
    def load(cls, key: str, config: DistributedConfig | None = None) -> DistributedCompiledProgram:
        """The compiled program of store entry ``key`` (``compiled.key``), validated with its
        per-rank artifacts. Raises MissingStoreEntry (a FileNotFoundError) naming a missing key."""
        from pypto.runtime.artifact_runtime import default_runtime

        rt = default_runtime()
        rt.last_invalid.pop(key, None)  # an earlier lookup's reason is not this one's
        got = rt.lookup(key)
        if got is None:
            why = rt.last_invalid.get(key)
            raise MissingStoreEntry(
                f"distributed entry {key}: {'invalid (' + why + ')' if why else 'not'} in the store at "
                f"{rt.store.root}; compile the host program again"
            )
        assert got.manifest is not None  # a store hit carries its validated manifest
        plan = load_plan(got.path, got.manifest, got.key)
        return cls(plan, got.path, config or DistributedConfig(device_ids=plan.device_ids), key=got.key)


def compile_host(
    fn: HostFunction | Program, args: tuple[Any, ...], kwargs: dict[str, Any], config: Any
) -> DistributedCompiledProgram:
    """The host compiler installed for ``@pl.jit.host`` (``fn.compile(*args, config=...)``) and
    for a ``@pl.program`` with a host orchestrator (``pypto.ir.compile(program,
    distributed_config=...)``): the plan becomes a store entry (``pypto.runtime.distributed.entry``)."""
    if isinstance(fn, Program):
        from pypto.ir import Role
        from pypto.runtime.distributed.program_plan import plan_program

        plan, programs = plan_program(fn, config)
        subs = {f.name: f for f in fn.host_funcs if f.role is Role.SubWorker}
    else:
        plan, programs = plan_host(fn, args, kwargs, config)
        subs = None
    plan, got = obtain_plan(plan, programs)
    return DistributedCompiledProgram(plan, got.path, config.distributed_config, subs, got.key)
