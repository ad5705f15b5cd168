"""README.md's examples run as written, print what they computed and pass their own check.

Each ```python block runs as a script (kernels are parsed from their source file) in a fresh
interpreter, in an empty folder; the command-line example (the ```bash block that runs
``pypto-runtime compile``) runs in bash, in an empty folder, with this interpreter's ``python``
and ``pypto-runtime`` first on PATH. An example checks its result itself (an ``assert`` or
``assert_close``) and then prints a line starting ``ok:``; the test asks for that line and for
the computed values printed before it, so an example that computes a wrong result, or prints
nothing, fails.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pypto_testing.scripts import run_python_file

pytest.importorskip("pypto.runtime", reason="the whole stack is installed only in the `tests` session")

README = Path(__file__).resolve().parents[2] / "README.md"
_BLOCK = re.compile(r"^```(\w+)\n(.*?)^```$", re.M | re.S)
_OK = re.compile(r"^ok: ", re.M)


def blocks(lang: str) -> list[str]:
    return [code for kind, code in _BLOCK.findall(README.read_text()) if kind == lang]


PYTHON = blocks("python")
CLI = [code for code in blocks("bash") if "pypto-runtime compile" in code]


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("readme_cache")


def check_output(what: str, proc: subprocess.CompletedProcess[str]) -> None:
    assert proc.returncode == 0, (
        f"{what} failed (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr[-4000:]}"
    )
    ok = _OK.search(proc.stdout)
    assert ok, f"{what} printed no 'ok: ...' line after its check:\n{proc.stdout}"
    assert proc.stdout[: ok.start()].strip(), f"{what} printed nothing of what it computed:\n{proc.stdout}"


def test_readme_has_its_examples() -> None:
    assert len(PYTHON) >= 2, "README.md: the first kernel and the first torch operator"
    assert len(CLI) == 1, "README.md: one command-line example"
    for code in (*PYTHON, *CLI):
        assert "assert" in code, f"a README example does not check its result:\n{code}"


@pytest.mark.parametrize("index", range(len(PYTHON)))
def test_readme_python_example(tmp_path: Path, cache_dir: Path, index: int) -> None:
    script = tmp_path / f"readme_example_{index}.py"
    script.write_text(PYTHON[index])
    check_output(f"README.md's python example {index + 1}", run_python_file(script, tmp_path, cache_dir))


def test_readme_command_line_example(tmp_path: Path, cache_dir: Path) -> None:
    bindir = str(Path(sys.executable).parent)
    env = {**os.environ, "PYPTO_CACHE_DIR": str(cache_dir), "PATH": bindir + os.pathsep + os.environ["PATH"]}
    proc = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", CLI[0]],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    check_output("README.md's command-line example", proc)
    assert (tmp_path / "out.npy").is_file()
    assert any((tmp_path / "trace").iterdir())


def test_check_output_fails_without_ok_or_values() -> None:
    done = subprocess.CompletedProcess[str]([], 0, "values 1 2\nok: fine\n", "")
    check_output("x", done)
    for stdout, rc in (("values 1 2\n", 0), ("ok: fine\n", 0), ("values\nok: fine\n", 1)):
        with pytest.raises(AssertionError):
            check_output("x", subprocess.CompletedProcess[str]([], rc, stdout, ""))
