"""The op reference page (docs/reference/ops.md) against the op table it is rendered from.

The committed page must be exactly what ``pypto.ir.ops.reference.render()`` writes now, so a
change to an op's signature, doc, forms, dtypes or type rule that is not regenerated fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import pypto.language as pl
from pypto.ir.dtypes import DataType
from pypto.ir.ops import LANGUAGE, OPS, infer, reference
from pypto.ir.types import MemorySpace

HERE = Path(__file__).resolve().parent
REGENERATE = reference.COMMAND


def _page() -> Path:
    for parent in HERE.parents:
        if (parent / "noxfile.py").is_file() and (parent / "docs").is_dir():
            return parent / "docs" / "reference" / "ops.md"
    pytest.skip("not run from the source tree: docs/reference/ops.md is not here")


def _section(text: str, name: str) -> str:
    match = re.search(rf"^### `pl\.{name}`\n(.*?)(?=^##)", text + "\n##", re.S | re.M)
    assert match, f"no section for pl.{name}"
    return match.group(1)


def _tutorial(page: Path) -> Path:
    return page.parents[1] / "tutorial"


def test_committed_page_is_the_rendered_table() -> None:
    page = _page()
    assert page.is_file(), f"{page} is missing; write it with `{REGENERATE}`"
    assert page.read_text(encoding="utf-8") == reference.render([_tutorial(page)], page.parent), (
        f"{page} differs from the op table or the tutorial; regenerate it with `{REGENERATE}`"
    )


def test_examples_from_programs_are_their_first_calling_line(tmp_path: Path) -> None:
    (tmp_path / "a_step.py").write_text(
        "# pl.add(x, y) in a comment is not an example\nz = pl.add(x, 1.0)\nw = pl.tile.add(z, z)\n"
        "q = pl.nonexistent(z)\n"
    )
    (tmp_path / "b_step.py").write_text("out = pl.add(a, b)\nm = pl.row_max(t)\n")
    found = reference.usages([tmp_path])
    assert found == {
        "add": (tmp_path / "a_step.py", "z = pl.add(x, 1.0)"),
        "row_max": (tmp_path / "b_step.py", "m = pl.row_max(t)"),
    }
    page = reference.render([tmp_path], tmp_path / "reference")
    assert "**Example** ([a_step.py](../a_step.py)): `z = pl.add(x, 1.0)`" in _section(page, "add")
    assert "**Example** (" not in _section(page, "sub")


def test_the_committed_page_shows_the_tutorials_calls() -> None:
    page = _page()
    text = page.read_text(encoding="utf-8")
    for name, (path, code) in reference.usages([_tutorial(page)]).items():
        assert f"**Example** ([{path.name}](../tutorial/{path.name})): `{code}`" in _section(text, name)
        assert re.search(rf"\bpl\.(tile\.)?{name}\(", code)


def test_every_pl_op_and_every_form_has_its_section() -> None:
    text = reference.render()
    # pl.aic_initialize_pipe & co. are pl.system's functions under a second name (their section
    # is pl.system's)
    exported = sorted(
        n
        for n in dir(pl)
        if getattr(getattr(pl, n), "__pypto_op__", None) and getattr(pl, n) is not getattr(pl.system, n, None)
    )
    assert len(exported) > 40
    headings = re.findall(r"^### `pl\.(\w+)`$", text, re.M)
    assert sorted(headings) == exported
    for name in exported:
        section = _section(text, name)
        for ir in LANGUAGE[getattr(pl, name).__pypto_op__].ir_ops:
            assert f"- `{ir}` (" in section, f"pl.{name}: form {ir} missing"
    assert "pl.view" not in text  # not a pl function


def test_groups_follow_the_table_order() -> None:
    text = reference.render()
    groups = re.findall(r"^## (.+)$", text, re.M)
    want: list[str] = []
    for op in LANGUAGE.values():
        if op.public and op.group not in want:
            want.append(op.group)
    assert groups == want


def test_facts_come_from_the_table_and_the_rules() -> None:
    text = reference.render()
    exp = _section(text, "exp")
    floats = ", ".join(d.value for d in DataType if d.is_float)
    assert f"dtypes: {floats}; memory spaces: Vec" in exp  # the table's FLOAT and VEC
    assert "INT32" not in exp
    # probed from the rule: a move starts from Vec, Mat or Acc, never from Left or Right
    move = _section(text, "move")
    assert "memory spaces: Vec, Mat, Acc<br>\n" in move
    assert "**`pl.tile` form:** yes, `pl.tile.move`" in move
    assert "**`pl.tile` form:** no" in _section(text, "create_tensor")
    assert "runs in the orchestration" in _section(text, "dim")
    # the typing line is the rule's result
    assert "-> Tile[[16, 1], FP32, Vec]`" in _section(text, "row_sum")
    assert "-> Tile[[16, 64], FP32, Acc]`" in _section(text, "matmul")
    assert (
        "pl.load(tensor, offsets, shapes, valid_shape=None, target_memory=pl.MemorySpace.Vec, clamp=False)"
        in text
    )


def test_examples_are_the_calls_the_doc_writes() -> None:
    text = reference.render()
    assert "**Example:** `pl.read(cfg, [0])`" in _section(text, "read")
    assert "**Example:**" not in _section(text, "add")  # its doc has none: none is invented
    assert reference._examples("see ``pl.tile.fillpad`` or ``pl.write(t, [0], v)``") == [
        "pl.write(t, [0], v)"
    ]


def test_samples_are_accepted_by_the_rules() -> None:
    for name, spec in OPS.items():
        group = next(op.group for op in LANGUAGE.values() if name in op.ir_ops)
        smp = reference.sample(spec, group)
        assert smp is not None, f"{name} has no sample operands for its typing line"
        infer(name, *smp)


def test_probes_reject_what_the_rule_rejects() -> None:
    spec = OPS["tile.matmul"]
    left_only = reference._probe_spaces(spec, reference.SAMPLES["tile.matmul"])
    assert left_only == [MemorySpace.Left]
    assert reference._probe_dtypes(
        OPS["tile.exp"], reference.sample(OPS["tile.exp"], "element-wise") or ([], {})
    ) == [d for d in DataType if d.is_float]


def test_main_writes_the_page(tmp_path: Path) -> None:
    out = tmp_path / "sub" / "ops.md"
    assert reference.main([str(out)]) == 0
    assert out.read_text(encoding="utf-8") == reference.render()
    printed: list[str] = []
    assert reference.main([], write=printed.append) == 0
    assert printed == [reference.render()]


def test_check_fails_on_a_stale_page(tmp_path: Path) -> None:
    page = tmp_path / "ops.md"
    said: list[str] = []
    assert reference.main(["--check", str(page)], write=said.append) == 1  # missing
    assert reference.main([str(page)]) == 0
    assert reference.main(["--check", str(page)], write=said.append) == 0
    page.write_text(reference.render().replace("Element-wise e**x.", "Element-wise 2**x."), encoding="utf-8")
    assert reference.main(["--check", str(page)], write=said.append) == 1
    assert len(said) == 2
    assert f"regenerate it (from the repository root): {reference.COMMAND}" in said[-1]
    with pytest.raises(SystemExit):
        reference.main(["--check"])
