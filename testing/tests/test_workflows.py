"""The GitHub Actions pipelines: generated from the layering table, and every command they run works.

Each workflow under ``.github/workflows`` is parsed, and every line of every ``run:`` step is
matched against the commands below; a line that matches none fails the test, so a new command
must be taught here how it is checked. The cheap commands run here: ``nox -l`` (through nox, in
this repository), the release's tag/version/CHANGELOG check, the release's import check, the
path-filter checker.

The heavy ones are checked, not re-run: a pipeline's ``python -m nox -s NAME`` must name a
session that ``nox -l`` lists with the ``ci`` tag, and every ci session runs in exactly one
pipeline. ``.ci/run`` (``nox -t ci``) runs each of those sessions once on every submission,
which is the run that decides whether the pipeline's step can pass: running them again inside
this test would double CI's time (it must stay within ~25 minutes on two cores) and prove
nothing more. Likewise ``scripts/setup-host`` (Debian packages; ``.ci/run`` runs it first) and
the release's ``pip install``/``python -m build``/``twine``/clean-venv steps (network installs
and a full native build) are checked for what they name: the package folder, its build
backend, the project wheels its declared dependencies need.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from pypto_testing import workflows as wf
from pypto_testing.layering import LAYERS

REPO = Path(__file__).resolve().parents[2]
WHEELS = [layer.wheel for layer in LAYERS]
LAYER = {layer.wheel: layer for layer in LAYERS}


def _pyproject(wheel: str) -> dict[str, Any]:
    return wf.pyproject(REPO, LAYER[wheel])


def _declared_closure(wheel: str) -> set[str]:
    """The wheel and every project wheel its pyproject dependencies pull in (not from layering)."""
    seen: set[str] = set()
    todo = [wheel]
    while todo:
        w = todo.pop()
        if w in seen:
            continue
        seen.add(w)
        todo += [r.name for r in map(Requirement, _pyproject(w).get("dependencies", [])) if r.name in LAYER]
    return seen


def _needs_torch(wheel: str) -> bool:
    return any(
        Requirement(r).name == "torch"
        for w in _declared_closure(wheel)
        for r in _pyproject(w)["dependencies"]
    )


@pytest.fixture(scope="module")
def nox_sessions() -> dict[str, dict[str, Any]]:
    """``nox -l --json`` of this repository, run through nox: every session, by name."""
    proc = subprocess.run(
        [sys.executable, "-m", "nox", "-l", "--json", "-k", "not __no_such_session__"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return {entry["session"]: entry for entry in json.loads(proc.stdout)}


@pytest.fixture(scope="module")
def ci_sessions(nox_sessions: dict[str, dict[str, Any]]) -> tuple[str, ...]:
    return tuple(name for name, entry in nox_sessions.items() if "ci" in entry["tags"])


@pytest.fixture(scope="module")
def workflows() -> dict[str, dict[Any, Any]]:
    """Every committed workflow, parsed, by file name."""
    files = sorted((REPO / wf.WORKFLOWS).glob("*.y*ml"))
    assert files, "no workflows under .github/workflows"
    return {p.name: yaml.safe_load(p.read_text(encoding="utf-8")) for p in files}


def _on(workflow: dict[Any, Any]) -> dict[str, Any]:
    on = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true
    assert isinstance(on, dict)
    return on


def _pipelines(workflows: dict[str, dict[Any, Any]]) -> dict[str, dict[Any, Any]]:
    return {name: w for name, w in workflows.items() if "pull_request" in _on(w)}


def _releases(workflows: dict[str, dict[Any, Any]]) -> dict[str, dict[Any, Any]]:
    return {name: w for name, w in workflows.items() if "tags" in (_on(w).get("push") or {})}


# ---------------------------------------------------------------------------------------------
# Generated from the one table


def test_committed_workflows_are_the_generated_ones(ci_sessions: tuple[str, ...]) -> None:
    problems = wf.stale(REPO, wf.generate(REPO, ci_sessions))
    assert not problems, "run scripts/gen-workflows:\n" + "\n".join(problems)


def test_generator_check_cli_agrees() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pypto_testing.workflows", "--root", str(REPO), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_stale_workflow_is_reported(tmp_path: Path, ci_sessions: tuple[str, ...]) -> None:
    files = wf.generate(REPO, ci_sessions)
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    assert wf.stale(tmp_path, files) == []
    edited = tmp_path / wf.WORKFLOWS / "pypto-torch.yml"
    edited.write_text(edited.read_text().replace('- "packages/pypto-ir/**"\n', "", 1))
    (tmp_path / wf.WORKFLOWS / "by-hand.yml").write_text("name: by hand\n")
    (tmp_path / wf.WORKFLOWS / "stack.yml").unlink()
    assert wf.stale(tmp_path, files) == [
        ".github/workflows/pypto-torch.yml: differs from the generated one",
        ".github/workflows/stack.yml: missing",
        ".github/workflows/by-hand.yml: not generated (add it to pypto_testing.workflows)",
    ]


def test_a_new_ci_session_changes_the_stack_pipeline(ci_sessions: tuple[str, ...]) -> None:
    """A ci session that no pipeline owns runs in the whole-stack one (so regenerating is needed)."""
    with_new = {p.name: p for p in wf.pipelines(REPO, (*ci_sessions, "mutation"))}
    assert "mutation" in [job.session for job in with_new[wf.STACK].jobs]


def test_table_order_is_bottom_up_and_matches_declared_dependencies() -> None:
    """Each wheel may import only wheels before it in the table, exactly those it declares."""
    deps = wf.layer_dependencies(REPO)
    for index, wheel in enumerate(WHEELS):
        assert set(deps[wheel]) <= set(WHEELS[:index]), f"{wheel} imports a wheel above it"
        assert set(wf.closure(wheel, deps)) == _declared_closure(wheel), (
            f"{wheel}: the layering table and the pyproject dependencies disagree"
        )
        assert wf.needs_torch(REPO, LAYER[wheel]) == _needs_torch(wheel)


# ---------------------------------------------------------------------------------------------
# Path filters follow the layering


def _expected_pipelines(changed_wheel: str) -> set[str]:
    above = set(WHEELS[WHEELS.index(changed_wheel) :])
    tools = {t.name for t in wf.TOOLS if any(changed_wheel in wf.stack_below(n) for n in t.needs)}
    return above | tools | {wf.STACK}


@pytest.mark.parametrize("wheel", WHEELS)
def test_a_package_change_runs_its_pipeline_and_those_above(
    wheel: str, workflows: dict[str, dict[Any, Any]]
) -> None:
    changed = [f"{wf.package_folder(LAYER[wheel])}/src/some_module.py"]
    run = {str(w["name"]) for w in _pipelines(workflows).values() if wf.triggers(w, changed)}
    assert run == _expected_pipelines(wheel)


def test_layering_examples(workflows: dict[str, dict[Any, Any]]) -> None:
    def run(path: str) -> set[str]:
        return {str(w["name"]) for w in _pipelines(workflows).values() if wf.triggers(w, [path])}

    everything = {*WHEELS, "cann-probe", wf.STACK}
    assert run("packages/simpler-native/src/core/chip/chip.cpp") == everything
    assert run("packages/pypto-torch/src/pypto/torch/__init__.py") == {"pypto-torch", wf.STACK}
    assert run("tools/cann-probe/meson.build") == {"cann-probe", wf.STACK}
    assert run("testing/src/pypto_testing/layering.py") == everything
    assert run("noxfile.py") == everything
    assert run("docs/pypto-ir.md") == {wf.STACK}
    assert run(".github/workflows/pypto-ir.yml") == {"pypto-ir", wf.STACK}


def test_affected_cli() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pypto_testing.workflows",
            "--root",
            str(REPO),
            "affected",
            "packages/pypto-torch/x.py",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["pypto-torch", wf.STACK]


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("packages/a/**", "packages/a/x/y.py", True),
        ("packages/a/**", "packages/ab/x.py", False),
        ("noxfile.py", "noxfile.py", True),
        ("noxfile.py", "sub/noxfile.py", False),
        ("*.md", "README.md", True),
        ("*.md", "docs/a.md", False),
        ("a/?.py", "a/.py", True),
    ],
)
def test_glob_like_github(pattern: str, path: str, matches: bool) -> None:
    assert bool(wf.glob_regex(pattern).match(path)) is matches


# ---------------------------------------------------------------------------------------------
# Sessions, Python versions, the torch index


def _nox_steps(workflow: dict[Any, Any]) -> Iterator[tuple[str, dict[str, Any], str]]:
    for job_id, job in workflow["jobs"].items():
        for step in job["steps"]:
            for line in str(step.get("run", "")).splitlines():
                m = re.fullmatch(r"python -m nox -s (\S+)", line.strip())
                if m:
                    yield job_id, job, shlex.split(m.group(1))[0]


def _pythons(job: dict[str, Any]) -> list[str]:
    matrix = job.get("strategy", {}).get("matrix", {}).get("python")
    if matrix:
        assert job["container"] == "python:${{ matrix.python }}-bookworm"
        return [str(v) for v in matrix]
    m = re.fullmatch(r"python:(\d+\.\d+)-bookworm", job["container"])
    assert m, job["container"]
    return [m.group(1)]


def test_pipelines_run_each_ci_session_once(
    workflows: dict[str, dict[Any, Any]],
    nox_sessions: dict[str, dict[str, Any]],
    ci_sessions: tuple[str, ...],
) -> None:
    ran: list[str] = []
    for name, workflow in _pipelines(workflows).items():
        for _, job, session in _nox_steps(workflow):
            assert session in nox_sessions, f"{name}: nox has no session {session!r}"
            assert "ci" in nox_sessions[session]["tags"], f"{name}: {session} is not run by `nox -t ci`"
            assert len(job["steps"]) == 3, f"{name}: one nox session per job"
            ran.append(session)
    assert sorted(ran) == sorted(ci_sessions), "every ci session runs in exactly one pipeline"


@pytest.mark.parametrize("wheel", WHEELS)
def test_package_pipeline_uses_its_python_versions(wheel: str, workflows: dict[str, dict[Any, Any]]) -> None:
    spec = SpecifierSet(_pyproject(wheel).get("requires-python", ""))
    admitted = [v for v in wf.CPYTHONS if spec.contains(v)]
    jobs = {session: job for _, job, session in _nox_steps(workflows[f"{wheel}.yml"])}
    assert _pythons(jobs[f"tests-{wheel}"]) == admitted
    for session, job in jobs.items():
        assert all(spec.contains(v) for v in _pythons(job)), f"{wheel}: {session} on a Python it excludes"


def test_single_version_jobs_use_a_python_every_package_admits(workflows: dict[str, dict[Any, Any]]) -> None:
    for workflow in workflows.values():
        for job in workflow["jobs"].values():
            for version in _pythons(job):
                for wheel in WHEELS:
                    assert SpecifierSet(_pyproject(wheel).get("requires-python", "")).contains(version)


def test_torch_jobs_use_the_cpu_index(workflows: dict[str, dict[Any, Any]]) -> None:
    def torch_wanted(file: str) -> bool:
        name = file.removesuffix(".yml").removeprefix("release-")
        return name == wf.STACK or (name in LAYER and _needs_torch(name))

    assert any(torch_wanted(f) for f in workflows)
    for file, workflow in workflows.items():
        for job_id, job in workflow["jobs"].items():
            env = job.get("env", {})
            if torch_wanted(file):
                assert env.get("PIP_INDEX_URL") == "https://download.pytorch.org/whl/cpu", f"{file}:{job_id}"
                assert env.get("PIP_EXTRA_INDEX_URL") == "https://pypi.org/simple", f"{file}:{job_id}"
            else:
                assert "PIP_INDEX_URL" not in env, f"{file}:{job_id} installs no torch"


def test_actions_are_pinned_by_commit(workflows: dict[str, dict[Any, Any]]) -> None:
    for file, workflow in workflows.items():
        for job in workflow["jobs"].values():
            for step in job["steps"]:
                if "uses" in step:
                    assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", step["uses"]), (
                        f"{file}: {step['uses']}"
                    )


# ---------------------------------------------------------------------------------------------
# Every command of every workflow: run here when cheap, checked for what it names otherwise


def _run_here(cmd: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cmd,
        cwd=REPO,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _release_wheel(file: str) -> str:
    wheel = file.removeprefix("release-").removesuffix(".yml")
    assert wheel in LAYER, f"{file}: releases no wheel of the layering table"
    return wheel


def _check_setup_host(file: str, step: dict[str, Any], m: re.Match[str], ctx: dict[str, Any]) -> None:
    path = REPO / "scripts" / "setup-host"
    assert path.is_file()
    assert os.access(path, os.X_OK)


def _check_nox(file: str, step: dict[str, Any], m: re.Match[str], ctx: dict[str, Any]) -> None:
    session = shlex.split(m.group("session"))[0]
    assert session in ctx["nox"], f"{file}: nox has no session {session!r}"
    assert "ci" in ctx["nox"][session]["tags"], f"{file}: {session} is not a ci session"


def _check_release_tag(file: str, step: dict[str, Any], m: re.Match[str], ctx: dict[str, Any]) -> None:
    wheel = m.group("wheel")
    assert wheel == _release_wheel(file)
    assert step["env"]["TAG"] == "${{ github.ref_name }}"
    env = {k: str(v) for k, v in step["env"].items() if k != "TAG"}
    cmd = [sys.executable, *shlex.split(m.group(0))[1:]]
    version = _pyproject(wheel)["version"]
    ok = _run_here([*cmd[:-1], f"{wheel}-v{version}"], env)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    for tag in (f"{wheel}-v{version}.post1", f"other-v{version}", f"{wheel}-{version}"):
        bad = _run_here([*cmd[:-1], tag], env)
        assert bad.returncode == 1, (tag, bad.stdout, bad.stderr)
        assert "does not release" in bad.stdout, (tag, bad.stdout)


def _check_build(file: str, step: dict[str, Any], m: re.Match[str], ctx: dict[str, Any]) -> None:
    wheel = _release_wheel(file)
    assert m.group("folder") == wf.package_folder(LAYER[wheel])
    assert (
        "build-backend"
        in wf.tomllib.loads((REPO / m.group("folder") / "pyproject.toml").read_text())["build-system"]
    )


def _check_dep_wheels(file: str, step: dict[str, Any], m: re.Match[str], ctx: dict[str, Any]) -> None:
    wheel = _release_wheel(file)
    folders = m.group("folders").split()
    assert set(folders) == {wf.package_folder(LAYER[w]) for w in _declared_closure(wheel) - {wheel}}


def _check_import(file: str, step: dict[str, Any], m: re.Match[str], ctx: dict[str, Any]) -> None:
    wheel = _release_wheel(file)
    code = m.group("code")
    modules = re.findall(r"import ([\w.]+)", code)
    assert set(modules) == set(wf.owned_modules(REPO, LAYER[wheel]))
    if any(importlib.util.find_spec(module) is None for module in modules):
        pytest.skip(f"{wheel} is not installed in this session (the `tests` session has every wheel)")
    ctx["imports"].append(code)  # run together at the end: one interpreter, one torch import


def _static(file: str, step: dict[str, Any], m: re.Match[str], ctx: dict[str, Any]) -> None:
    """Checked by its pattern only: an install or a build that needs the network (see the docstring)."""


Check = Callable[[str, dict[str, Any], re.Match[str], dict[str, Any]], None]
COMMANDS: list[tuple[str, Check]] = [
    (r"scripts/setup-host", _check_setup_host),
    (r"python -m nox -s (?P<session>\S+)", _check_nox),
    (r'python -m pypto_testing\.workflows check-release (?P<wheel>[\w-]+) "\$TAG"', _check_release_tag),
    (r"python -m pip install build twine", _static),
    (r"python -m build --outdir dist (?P<folder>[\w/.-]+)", _check_build),
    (r"python -m twine check --strict dist/\*", _static),
    (r"python -m pip wheel --no-deps --wheel-dir deps (?P<folders>[\w/. -]+)", _check_dep_wheels),
    (r"python -m venv /tmp/clean", _static),
    (r"/tmp/clean/bin/python -m pip install( --find-links deps)? dist/\*\.whl", _static),
    (r"/tmp/clean/bin/python -m pip check", _static),
    (r'/tmp/clean/bin/python -I -c "(?P<code>[^"]+)"', _check_import),
]


def _run_lines(workflows: dict[str, dict[Any, Any]]) -> Iterator[tuple[str, dict[str, Any], str]]:
    for file, workflow in workflows.items():
        for job in workflow["jobs"].values():
            for step in job["steps"]:
                for line in str(step.get("run", "")).splitlines():
                    if line.strip():
                        yield file, step, line.strip()


def test_every_command_is_known_and_cheap_ones_run_here(
    workflows: dict[str, dict[Any, Any]], nox_sessions: dict[str, dict[str, Any]]
) -> None:
    seen: set[str] = set()
    skipped: list[str] = []
    ctx: dict[str, Any] = {"nox": nox_sessions, "imports": []}
    for file, step, line in _run_lines(workflows):
        for pattern, check in COMMANDS:
            m = re.fullmatch(pattern, line)
            if m:
                seen.add(pattern)
                try:
                    check(file, step, m, ctx)
                except pytest.skip.Exception as e:
                    skipped.append(f"{file}: {e}")
                break
        else:
            pytest.fail(f"{file}: no check for the command {line!r}: add one to COMMANDS")
    assert seen == {p for p, _ in COMMANDS}, "a COMMANDS entry that no workflow uses"
    releases = {_release_wheel(f) for f in _releases(workflows)}
    assert releases == set(WHEELS), "every wheel has a release pipeline"
    if ctx["imports"]:
        proc = _run_here([sys.executable, "-I", "-c", "; ".join(ctx["imports"])])
        assert proc.returncode == 0, proc.stderr
    if skipped:  # every other check ran: report what could not be imported in this session
        pytest.skip("; ".join(skipped))


@pytest.mark.parametrize("wheel", WHEELS)
def test_release_runs_on_its_tags(wheel: str, workflows: dict[str, dict[Any, Any]]) -> None:
    on = _on(workflows[f"release-{wheel}.yml"])
    assert on == {"push": {"tags": [f"{wheel}-v*"]}}


# ---------------------------------------------------------------------------------------------
# CHANGELOGs


@pytest.mark.parametrize("wheel", WHEELS)
def test_changelog_has_the_pyproject_version(wheel: str) -> None:
    assert wf.check_changelog(REPO, LAYER[wheel]) is None


def test_check_changelogs_cli() -> None:
    proc = _run_here([sys.executable, "-m", "pypto_testing.workflows", "check-changelogs"])
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_changelog_versions() -> None:
    text = "# Changelog\n\n## Unreleased\n\n- x\n\n## 0.2.0\n\n- y\n\n## [0.1.0] - 2026-01-01\n###  0.0.1\n"
    assert wf.changelog_versions(text) == ["0.2.0", "0.1.0"]


def test_missing_changelog_entry_is_reported(tmp_path: Path) -> None:
    layer = LAYER["pypto-ir"]
    folder = tmp_path / wf.package_folder(layer)
    folder.mkdir(parents=True)
    (folder / "pyproject.toml").write_text('[project]\nname = "pypto-ir"\nversion = "0.3.0"\n')
    assert "does not exist" in str(wf.check_changelog(tmp_path, layer))
    (folder / "CHANGELOG.md").write_text("# Changelog\n\n## Unreleased\n\n- 0.3.0 is coming\n\n## 0.2.0\n")
    assert "no '## 0.3.0' entry" in str(wf.check_changelog(tmp_path, layer))
    assert "no '## 0.3.0' entry" in str(wf.check_release(tmp_path, "pypto-ir", "pypto-ir-v0.3.0"))
    (folder / "CHANGELOG.md").write_text("# Changelog\n\n## 0.3.0\n\n- x\n")
    assert wf.check_release(tmp_path, "pypto-ir", "pypto-ir-v0.3.0") is None
    assert "not a wheel" in str(wf.check_release(tmp_path, "pypto", "pypto-v0.3.0"))
