"""The tutorial's programs (docs/tutorial/step*.py) print as kernel-language text
(``Program.as_python()``) that ``pl.parse`` reads back to the same IR.

Each step's ``main`` runs with a recording executor installed behind ``@pl.jit`` calls: it
specialises each call's function on the call's arguments (nothing is compiled or run) and
returns the call's Out arguments, so ``main`` goes on until its first number check; the step's
other ``@pl.jit`` functions of the same signature are specialised on that call's arguments
(the tutorial shows alternatives of one computation side by side). Step 8 runs step 6's
program with traces on; step 9's program is registered as a torch operator, so it is
specialised directly on arrays of the shapes its ``main`` passes.
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("pypto.runtime", reason="the tutorial steps import pypto.runtime")

import pypto.language as pl  # noqa: E402
from pypto.ir import Program, set_jit_executor  # noqa: E402

TUTORIAL = Path(__file__).resolve().parents[2] / "docs" / "tutorial"
BY_MAIN = [f"step0{i}" for i in range(1, 8)]


def _load(stem: str) -> ModuleType:
    path = next(TUTORIAL.glob(f"{stem}_*.py"))
    if str(TUTORIAL) not in sys.path:
        sys.path.insert(0, str(TUTORIAL))  # steps import earlier steps by name
    spec = importlib.util.spec_from_file_location(f"_tutorial_{stem}", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _recorded_programs(stem: str) -> Iterator[tuple[str, Program]]:
    module = _load(stem)
    seen: list[tuple[str, Program]] = []
    calls: list[tuple[Any, tuple[Any, ...], dict[str, Any]]] = []

    def record(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        kwargs = {k: v for k, v in kwargs.items() if k != "config"}
        spec = fn.specialize(*args, **kwargs)
        seen.append((fn.__name__, spec.program))
        calls.append((fn, args, kwargs))
        bound = dict(zip(fn.param_names, args, strict=False)) | kwargs
        outs = [bound[p.name] for p in spec.params if p.direction.writes]
        return outs[0] if len(outs) == 1 else tuple(outs)

    previous = set_jit_executor(record)
    try:
        with contextlib.suppress(Exception):  # its number checks fail: nothing ran
            module.main()
    finally:
        set_jit_executor(previous)
    called = {id(fn) for fn, _, _ in calls}
    for fn in vars(module).values():
        if not isinstance(fn, pl.JITFunction) or id(fn) in called:
            continue
        for other, args, kwargs in calls:
            if other.param_names == fn.param_names:
                seen.append((fn.__name__, fn.specialize(*args, **kwargs).program))
                break
    return iter(seen)


def _check(program: Program) -> None:
    from pypto.ir.nodes import structural_equal

    text = program.as_python()
    back = pl.parse(text)
    assert isinstance(back, Program)
    assert structural_equal(program, back), f"the text does not parse back to the same IR:\n{text}"
    assert back.as_python() == text


@pytest.mark.parametrize("stem", BY_MAIN)
def test_tutorial_programs_print_and_parse_back(stem: str) -> None:
    programs = list(_recorded_programs(stem))
    module = sys.modules.get(f"_tutorial_{stem}")
    jit_names = {k for k, v in vars(module).items() if isinstance(v, pl.JITFunction)} if module else set()
    assert jit_names, f"{stem}: no @pl.jit function"
    assert {name for name, _ in programs} >= jit_names, f"{stem}: not every @pl.jit function was specialised"
    for _, program in programs:
        _check(program)


def test_the_torch_operator_step_prints_and_parses_back() -> None:
    pytest.importorskip("torch", reason="step 9 registers a torch operator")
    module = _load("step09")
    rows, hidden = module.ROWS, module.HIDDEN

    def z(*shape: int) -> Any:
        return np.zeros(shape, dtype=np.float32)

    spec = module.add_layer_norm.specialize(
        z(rows, hidden), z(rows, hidden), z(hidden), z(hidden), 1e-5, z(rows, hidden)
    )
    _check(spec.program)
