"""Every ```python block in docs/*.md runs as written, each in a fresh interpreter.

README.md's blocks are run (with result checks) by test_readme.py and are skipped here, so no
block runs twice.

Rules the documents follow:

- A ```python block is a complete program: it imports and defines what it uses. It runs as a
  script written to a file (kernels are parsed from their source file) in a fresh interpreter,
  with ``PYPTO_CACHE_DIR`` set to a store shared by the whole test (kernels compile once).
- It checks what it computed (``assert``) and prints it, then a line starting ``ok:`` (the
  last block of a ``continued`` run does).
- A block that builds on the block before it is marked ``<!-- continued -->`` on the line right
  before its fence: it runs after that block, in the same process. Program-mode and kernel-mode
  (pypto.torch) blocks never share a process (the mode gate).
- A block that cannot run by nature (needs an NPU, shows a session) is ```text / ```bash, or a
  ```python block marked ``<!-- not-run: reason -->`` right before its fence; the reason is
  required.
- With kernels compiled against the official pto-isa headers, a block that uses BF16 is skipped
  (their ``bfloat16_t`` is a placeholder type below C++23, docs/pto-isa-backends.md).
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pypto_testing.scripts import run_python_file

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted((ROOT / "docs").glob("*.md"))

_FENCE = re.compile(r"^```(\S*)\s*$")
_NOT_RUN = re.compile(r"^<!--\s*not-run:\s*(.*?)\s*-->$")
_CONTINUED = re.compile(r"^<!--\s*continued\s*-->$")


@dataclass
class Script:
    """Blocks of one document that run in order in one process."""

    doc: Path
    lines: list[int] = field(default_factory=list)  # first line of each block (1-based)
    blocks: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.doc.name}:{self.lines[0]}"

    def source(self) -> str:
        parts = [
            f"# {self.doc.name} line {line}\n{code}"
            for line, code in zip(self.lines, self.blocks, strict=True)
        ]
        return "\n".join(parts)


def collect(doc: Path) -> list[Script]:
    """The runnable ```python blocks of ``doc``, grouped into scripts."""
    lines = doc.read_text().splitlines()
    scripts: list[Script] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m or not m.group(1):
            i += 1
            continue
        lang, start = m.group(1), i
        i += 1
        body: list[str] = []
        while i < len(lines) and lines[i].rstrip() != "```":
            body.append(lines[i])
            i += 1
        if i == len(lines):
            raise AssertionError(f"{doc.name}:{start + 1}: unclosed ``` fence")
        i += 1
        if lang not in ("python", "py", "python3"):
            continue
        prev = lines[start - 1].strip() if start else ""  # a marker is the line right before
        not_run = _NOT_RUN.match(prev)
        if not_run:
            assert not_run.group(1), f"{doc.name}:{start + 1}: <!-- not-run: --> needs a reason"
            continue
        code = "\n".join(body) + "\n"
        if _CONTINUED.match(prev):
            assert scripts, f"{doc.name}:{start + 1}: continued block with none before"
            scripts[-1].lines.append(start + 2)
            scripts[-1].blocks.append(code)
        else:
            scripts.append(Script(doc, [start + 2], [code]))
    return scripts


def run_script(script: Script, workdir: Path, cache_dir: Path) -> subprocess.CompletedProcess[str]:
    path = workdir / (re.sub(r"\W", "_", script.name) + ".py")
    path.write_text(script.source())
    return run_python_file(path, workdir, cache_dir)


SCRIPTS = [script for doc in DOCS for script in collect(doc)]


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("doc_snippets_cache")


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_doc_block_runs(script: Script, tmp_path: Path, cache_dir: Path) -> None:
    pytest.importorskip("pypto.runtime", reason="the whole stack is installed only in the `tests` session")
    from simpler import toolchain

    if toolchain.kernel_toolchain().pto_backend == "pto-isa" and re.search(r"bfloat16|BF16", script.source()):
        pytest.skip(
            "official CPU backend: bfloat16_t is a _Float16 placeholder here (docs/pto-isa-backends.md)"
        )
    proc = run_script(script, tmp_path, cache_dir)
    assert proc.returncode == 0, f"{script.name} failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}"
    ok = re.search(r"^ok: ", proc.stdout, flags=re.M)
    assert ok, f"{script.name} printed no 'ok: ...' line after its check:\n{proc.stdout[-2000:]}"
    assert proc.stdout[: ok.start()].strip(), f"{script.name} printed nothing of what it computed"


def test_collector_and_runner(tmp_path: Path) -> None:
    """The rules above, on a made-up document: markers honoured, a broken block fails."""
    doc = tmp_path / "doc.md"
    doc.write_text(
        "text\n\n```python\nx = 1\n```\n\n<!-- continued -->\n```python\nassert x == 1\n```\n\n"
        "<!-- not-run: needs an NPU -->\n```python\nimport torch_npu\n```\n\n"
        "```bash\nfalse\n```\n\n```python\nprint(undefined_name)\n```\n"
    )
    scripts = collect(doc)
    assert [s.lines for s in scripts] == [[4, 9], [22]]
    assert run_script(scripts[0], tmp_path, tmp_path / "cache").returncode == 0
    broken = run_script(scripts[1], tmp_path, tmp_path / "cache")
    assert broken.returncode != 0
    assert "NameError: name 'undefined_name'" in broken.stderr
    doc.write_text("<!-- not-run: -->\n```python\npass\n```\n")
    with pytest.raises(AssertionError, match="needs a reason"):
        collect(doc)


def test_every_doc_block_is_collected() -> None:
    """Each ```python fence in docs/ is run or marked not-run (nothing slips past the parser)."""
    for doc in DOCS:
        text = doc.read_text()
        fences = len(re.findall(r"^```python\s*$", text, flags=re.M))
        not_run = len(re.findall(r"^<!--\s*not-run:.*-->\s*\n```python", text, flags=re.M))
        assert sum(len(s.blocks) for s in collect(doc)) == fences - not_run, doc.name
