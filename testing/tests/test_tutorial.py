"""Every step of the tutorial (docs/tutorial/step*.py) runs as written and checks its result.

Each step is a program that compares its kernel's output with numpy (or torch) and prints
``stepNN ok: max abs err ...`` only when it matches, exiting nonzero otherwise. Each runs in a
fresh interpreter (a step that registers a torch operator needs a kernel-mode process) with
``PYPTO_CACHE_DIR`` set to a store shared by the whole test, from a scratch working directory.
"""

from __future__ import annotations

import re
import subprocess
import textwrap
from pathlib import Path

import pytest

from pypto_testing.scripts import run_python_file

TUTORIAL = Path(__file__).resolve().parents[2] / "docs" / "tutorial"
STEPS = sorted(TUTORIAL.glob("step[0-9][0-9]_*.py"))
_OK = re.compile(r"^(step\d\d) ok: max abs err (\S+)$", re.M)
# README.md quotes the steps in ```python blocks marked as excerpts of their file
_EXCERPT = re.compile(
    r"^<!-- not-run: excerpt of (step\d\d_\w+\.py)\b[^\n]*-->\n```python\n(.*?)^```$", re.M | re.S
)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tutorial_cache")


def run_step(step: Path, workdir: Path, cache_dir: Path) -> subprocess.CompletedProcess[str]:
    return run_python_file(step, workdir, cache_dir)


def check_step(step: Path, proc: subprocess.CompletedProcess[str]) -> float:
    """The step's reported error; fails unless it exited 0 and printed its own ok line."""
    assert proc.returncode == 0, (
        f"{step.name} failed (exit {proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    )
    found = _OK.findall(proc.stdout)
    assert found, f"{step.name} printed no 'stepNN ok: max abs err ...' line:\n{proc.stdout[-2000:]}"
    assert [name for name, _ in found] == [step.name[:6]], f"{step.name} printed {found}"
    return float(found[0][1])


def test_tutorial_has_its_steps() -> None:
    assert len(STEPS) >= 8, [s.name for s in STEPS]
    numbers = [int(s.name[4:6]) for s in STEPS]
    assert numbers == list(range(1, len(STEPS) + 1)), f"steps are not numbered 01..NN: {numbers}"
    readme = (TUTORIAL / "README.md").read_text()
    for step in STEPS:
        assert f"({step.name})" in readme, f"docs/tutorial/README.md does not link {step.name}"


def is_excerpt(block: str, source: str) -> bool:
    """``block`` is a run of whole lines of ``source``, up to a common indentation."""
    want = textwrap.dedent(block).splitlines()
    lines = source.splitlines()
    return any(
        textwrap.dedent("\n".join(lines[i : i + len(want)])).splitlines() == want
        for i in range(len(lines) - len(want) + 1)
    )


def test_readme_quotes_the_steps_verbatim() -> None:
    readme = (TUTORIAL / "README.md").read_text()
    excerpts = _EXCERPT.findall(readme)
    assert len(excerpts) == readme.count("```python"), "every python block is a marked excerpt"
    assert len(excerpts) >= 5, excerpts
    for name, block in excerpts:
        assert is_excerpt(block, (TUTORIAL / name).read_text()), f"README.md quotes {name} wrongly:\n{block}"
    assert not is_excerpt("x = 1\n", "y = 1\n")
    assert not is_excerpt("a\nc\n", "a\nb\nc\n")


@pytest.mark.parametrize("step", STEPS, ids=[s.stem for s in STEPS])
def test_step_runs_and_matches(step: Path, tmp_path: Path, cache_dir: Path) -> None:
    pytest.importorskip("pypto.runtime", reason="the whole stack is installed only in the `tests` session")
    if "import pypto.torch" in step.read_text():
        pytest.importorskip("pypto.torch", reason="a torch operator step needs pypto-torch and torch")
    err = check_step(step, run_step(step, tmp_path, cache_dir))
    assert err < 1e-3, f"{step.name} reported max abs err {err}"  # False for NaN too


def test_a_failing_step_fails(tmp_path: Path) -> None:
    """The checks above reject a step that exits nonzero, or exits 0 without its ok line."""
    bad = tmp_path / "step01_bad.py"
    bad.write_text("import sys\nprint('step01 MISMATCH: max abs err 1.0')\nsys.exit(1)\n")
    with pytest.raises(AssertionError, match="failed \\(exit 1\\)"):
        check_step(bad, run_step(bad, tmp_path, tmp_path / "cache"))
    silent = tmp_path / "step02_silent.py"
    silent.write_text("print('done')\n")
    with pytest.raises(AssertionError, match="printed no"):
        check_step(silent, run_step(silent, tmp_path, tmp_path / "cache"))
