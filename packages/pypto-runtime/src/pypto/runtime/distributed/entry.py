"""The plan of a multi-chip program as an artifact-store entry, beside its per-rank artifacts.

A compiled distributed program is one store entry (``<store>/v1/ready/<key>/``), written and
read by the same machinery as a single-chip entry (:class:`~pypto.runtime.artifact_runtime.
ArtifactRuntime`: per-key lock, private build, staging, fsync, manifest written last, no-replace
publish; a lookup validates the manifest and never writes). It holds one file, ``plan.json``
(:meth:`DistributedPlan.entry_json`): ``schema``, ``kind: "distributed"``, ``world_size``,
``device_ids``, platform, runtime, the host parameters, windows, launches and callbacks (the L3
entry), and ``program_keys``, the ArtifactKey of each per-device program, whose artifacts are
entries of their own: the plan names them by key, never by path.

The entry's key is a SHA-256 over that JSON, so it covers the plan and the per-rank keys, and
through them all a single-chip key covers (toolchain, sources, specialisation, contract,
platform, runtime, invalidating settings). Compiling traces the host body (no per-device
compile), restores or compiles each per-rank artifact, then obtains the plan entry: a hit when
another process (or an earlier run) published it. Loading an entry (:func:`load_plan`) requires
every per-rank artifact to be a valid store entry, else :class:`MissingStoreEntry` names the
key.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path

from pypto.ir import plan_key as ir_plan_key
from pypto.runtime._fs import read_regular
from pypto.runtime.artifact_runtime import Obtained, default_runtime
from pypto.runtime.distributed.plan import DistributedPlan, RankProgram
from pypto.runtime.manifest import InvalidEntry, Manifest

__all__ = ["PLAN_FILE", "MissingStoreEntry", "load_plan", "obtain_plan", "plan_key", "read_plan"]

PLAN_FILE = "plan.json"


class MissingStoreEntry(InvalidEntry, FileNotFoundError):
    """A distributed entry, or a per-rank artifact it names by key, is not a valid store entry."""


def _dumps(plan: DistributedPlan) -> str:
    return json.dumps(plan.entry_json(), indent=1, sort_keys=True)


def plan_key(plan: DistributedPlan) -> str:
    """The store key of ``plan``: ``pypto.ir.plan_key`` of its entry JSON (the per-rank keys included)."""
    return ir_plan_key(plan.entry_json())


def _no_binaries(path: Path) -> None:
    """A distributed entry has no binaries of its own (its per-rank entries do): READY as written."""


def obtain_plan(plan: DistributedPlan, programs: Sequence[RankProgram]) -> tuple[DistributedPlan, Obtained]:
    """Restore or compile every per-rank artifact of ``plan`` (store hits compile nothing), then
    obtain the plan's own entry; returns the plan with its artifact directories and the entry.
    Per-rank entries come first, so a published plan entry names only keys that were stored."""
    dirs = tuple(str(p.obtain()) for p in programs)
    text = _dumps(plan)
    key = plan_key(plan)

    def generate(path: Path) -> None:
        (path / PLAN_FILE).write_text(text, encoding="utf-8")

    got = default_runtime().obtain(key, generate=generate, build=_no_binaries)
    stored = read_plan(got.path, got.manifest, key)
    if stored.entry_json() != plan.entry_json():
        raise InvalidEntry(
            f"distributed entry {key}: {got.path / PLAN_FILE} holds another plan than the one its key was "
            "computed from; run `python -m pypto.runtime cache verify --fix` and compile again"
        )
    return dataclasses.replace(plan, programs=dirs), got


def read_plan(path: Path, manifest: Manifest | None, key: str) -> DistributedPlan:
    """The plan of entry ``path`` (``key``), read without following a symlink and checked
    against the manifest validated for it."""
    try:
        data = read_regular(path / PLAN_FILE)
    except FileNotFoundError:
        raise InvalidEntry(
            f"store entry {key} ({path}) has no {PLAN_FILE}: it is not a distributed program"
        ) from None
    if manifest is not None:
        manifest.check(PLAN_FILE, data)
    try:
        return DistributedPlan.from_json(json.loads(data))
    except (ValueError, KeyError, TypeError) as exc:
        raise InvalidEntry(f"distributed entry {key}: {path / PLAN_FILE}: {exc}") from None


def load_plan(path: Path, manifest: Manifest, key: str) -> DistributedPlan:
    """The plan of a validated distributed entry with each per-rank artifact resolved to its
    store entry. Raises MissingStoreEntry naming the first key that is missing or invalid."""
    plan = read_plan(path, manifest, key)
    rt = default_runtime()
    dirs = []
    for i, k in enumerate(plan.program_keys):
        rt.last_invalid.pop(k, None)  # an earlier lookup's reason is not this one's
        got = rt.lookup(k)
        if got is None:
            why = rt.last_invalid.get(k)
            ranks = sorted({d.rank for d in plan.dispatches if d.program == i})
            raise MissingStoreEntry(
                f"distributed entry {key} ({plan.name}): the artifact of program {i} (ranks {ranks}), key "
                f"{k}, is {'invalid (' + why + ')' if why else 'not'} in the store at {rt.store.root}; "
                f"compile the host program again to rebuild it"
            )
        dirs.append(str(got.path))
    return dataclasses.replace(plan, programs=tuple(dirs))
