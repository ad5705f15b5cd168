"""Mutation testing of the checks that guard the stack's trust boundaries (``nox -s mutation``).

Two kinds of mutants, one report:

- Python, with mutmut (a maintained mutation tool): pypto-torch's validators (``_validation.py``)
  and pypto-runtime's artifact store (``_fs.py``, ``trust.py``, ``manifest.py``, ``store.py``,
  ``artifact_runtime.py``), each against its own package's tests. Each target is copied into a
  scratch project under ``--out`` (mutmut mutates copies, never the tree), and mutmut runs only
  the tests that execute a mutated function. ``--budget`` bounds each target's time; mutmut
  keeps the verdicts it reached. A survivor that no input can tell from the original is listed
  in its target's ``equivalent`` (``PyEquivalent``, with the reason) and reported as such.
- C++, scripted: ``CPP_MUTANTS`` below, small text replacements in the kernel-mode wire headers
  (ChipTensor admission and extent arithmetic, kernel-entry admission, the header check order).
  Each is applied to a copy of the headers, the C++ wire tests are rebuilt against the copy and
  run; the mutant is killed when a test fails (a mutant that does not compile is reported as
  such, not as killed).

Usage (the nox session installs mutmut and the packages, then runs this)::

    python testing/mutation/run_mutation.py --out build/mutation [--only cpp|torch|store]

Writes ``<out>/summary.json`` and prints a Markdown summary (docs/mutation.md records a run).
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NATIVE = ROOT / "packages" / "simpler-native"
WIRE_TESTS = NATIVE / "tests" / "cpp" / "wire"

# ----------------------------------------------------------------------------- C++ mutants


@dataclass(frozen=True)
class CppMutant:
    name: str
    header: str  # under simpler/wire/
    old: str  # must occur exactly once in the header
    new: str
    what: str
    equivalent: str = ""  # why no input can tell the mutant from the original (reviewed by hand)


# (shape - 1) * stride for u32 shape >= 1 and u32 stride is at most (2^32 - 2)(2^32 - 1) < 2^64:
# the multiply can overflow only for shape 0, an empty tensor, which both functions settle
# before the product matters (semantics returns Ok for it, chip_tensor_extent returns false).
_MUL_CANNOT_OVERFLOW = (
    "(shape - 1) * stride < 2^64 for every nonempty u32 shape and stride; shape 0 is decided first"
)


_W = "simpler/wire/"
CPP_MUTANTS: tuple[CppMutant, ...] = (
    # chip_tensor.hpp: check_chip_tensor_semantics, the codec's verdict on every descriptor.
    CppMutant(
        "ct-extent-mul",
        "chip_tensor.hpp",
        "bad |= __builtin_mul_overflow(shape - 1, stride, &term);",
        "(void)__builtin_mul_overflow(shape - 1, stride, &term);",
        "extent: (shape - 1) * stride overflow not checked",
        _MUL_CANNOT_OVERFLOW,
    ),
    CppMutant(
        "ct-extent-add",
        "chip_tensor.hpp",
        "bad |= __builtin_add_overflow(extent, term, &extent);",
        "(void)__builtin_add_overflow(extent, term, &extent);",
        "extent: running sum overflow not checked",
    ),
    CppMutant(
        "ct-extent-init",
        "chip_tensor.hpp",
        "std::uint64_t extent = 1;",
        "std::uint64_t extent = 0;",
        "extent one element short",
    ),
    CppMutant(
        "ct-zero-stride",
        "chip_tensor.hpp",
        "bad |= stride == 0;",
        "(void)0;",
        "zero stride accepted for a nonempty tensor",
    ),
    CppMutant(
        "ct-empty-skip",
        "chip_tensor.hpp",
        "if (empty) return InvocationStatus::Ok;",
        "(void)empty;",
        "empty tensors checked like nonempty ones",
    ),
    CppMutant(
        "ct-null-addr",
        "chip_tensor.hpp",
        "bad |= t.buffer.addr == 0;",
        "(void)0;",
        "null address accepted",
    ),
    CppMutant(
        "ct-offset-add",
        "chip_tensor.hpp",
        "bad |= __builtin_add_overflow(t.start_offset, extent, &end);",
        "(void)__builtin_add_overflow(t.start_offset, extent, &end);",
        "start_offset + extent overflow not checked",
    ),
    CppMutant(
        "ct-bits-mul",
        "chip_tensor.hpp",
        "bad |= __builtin_mul_overflow(end, static_cast<std::uint64_t>(dtype_bits(t.dtype)), &end_bits);",
        "(void)__builtin_mul_overflow(end, static_cast<std::uint64_t>(dtype_bits(t.dtype)), &end_bits);",
        "elements * bits overflow not checked",
    ),
    CppMutant(
        "ct-backing-off-by-one",
        "chip_tensor.hpp",
        "bad |= end_bits > size_bits;",
        "bad |= end_bits > size_bits + 8;",
        "one byte past the backing accepted",
    ),
    CppMutant(
        "ct-backing-strict",
        "chip_tensor.hpp",
        "bad |= end_bits > size_bits;",
        "bad |= end_bits >= size_bits;",
        "an exactly fitting tensor refused",
    ),
    CppMutant(
        "ct-addr-wrap",
        "chip_tensor.hpp",
        "bad |= __builtin_add_overflow(t.buffer.addr, end_bits / 8 + (end_bits % 8 != 0), &last);",
        "(void)__builtin_add_overflow(t.buffer.addr, end_bits / 8 + (end_bits % 8 != 0), &last);",
        "address range wrap not checked",
    ),
    CppMutant(
        "ct-device-only",
        "chip_tensor.hpp",
        "if (t.address_space != static_cast<std::uint8_t>(AddressSpace::DEVICE)) return InvocationStatus::InvalidTensor;",
        "(void)0;",
        "host descriptors accepted in a packet",
    ),
    CppMutant(
        "ct-dtype",
        "chip_tensor.hpp",
        "if (!is_known_dtype(t.dtype)) return InvocationStatus::InvalidTensor;",
        "(void)0;",
        "unknown dtype accepted",
    ),
    CppMutant(
        "ct-rank",
        "chip_tensor.hpp",
        "if (t.ndims < 1 || t.ndims > kMaxTensorDims) return InvocationStatus::InvalidTensor;",
        "if (t.ndims < 1 || t.ndims > kMaxTensorDims + 1) return InvocationStatus::InvalidTensor;",
        "rank 6 accepted",
    ),
    # chip_tensor.hpp: helpers used by the chip (dependency regions) and the error messages.
    CppMutant(
        "ct-helper-extent-mul",
        "chip_tensor.hpp",
        "        if (__builtin_mul_overflow(static_cast<std::uint64_t>(t.shapes[i] - 1), static_cast<std::uint64_t>(t.strides[i]), &term))\n            return false;",
        "        (void)__builtin_mul_overflow(static_cast<std::uint64_t>(t.shapes[i] - 1), static_cast<std::uint64_t>(t.strides[i]), &term);",
        "chip_tensor_extent: multiply overflow not checked",
        _MUL_CANNOT_OVERFLOW,
    ),
    CppMutant(
        "ct-helper-extent-add",
        "chip_tensor.hpp",
        "if (__builtin_add_overflow(e, term, &e)) return false;",
        "(void)__builtin_add_overflow(e, term, &e);",
        "chip_tensor_extent: add overflow not checked",
    ),
    CppMutant(
        "ct-canonical-bookkeeping",
        "chip_tensor.hpp",
        "if (t.owner_task_id != 0 || t.version != 0 || t.manual_dep != 0 || t.is_contiguous != 0 || t.extent_elem_cache != 0)\n        return false;",
        "(void)0;",
        "bookkeeping fields allowed in packet bytes",
    ),
    CppMutant(
        "ct-canonical-unused-dims",
        "chip_tensor.hpp",
        "if (t.shapes[i] != 0 || t.strides[i] != 0) return false;",
        "(void)0;",
        "unused dimensions allowed to be nonzero",
    ),
    CppMutant(
        "ct-span-round-up",
        "chip_tensor.hpp",
        "    return end_bits / 8 + (end_bits % 8 != 0);\n}",
        "    return end_bits / 8;\n}",
        "span of sub-byte tensors rounded down",
    ),
    # kernel_entry_admission.hpp
    CppMutant(
        "ke-name-length",
        "kernel_entry_admission.hpp",
        "bytes > kMaxCallableNameBytes",
        "bytes > kMaxCallableNameBytes + 1",
        "a 128-byte name accepted",
    ),
    CppMutant(
        "ke-name-leading-digit",
        "kernel_entry_admission.hpp",
        "(digit && i > 0)",
        "digit",
        "a name may start with a digit",
    ),
    CppMutant(
        "ke-align-pow2",
        "kernel_entry_admission.hpp",
        "if (r.alignment == 0 || (r.alignment & (r.alignment - 1)) != 0) return false;",
        "if (r.alignment == 0) return false;",
        "alignment need not be a power of two",
    ),
    CppMutant(
        "ke-offset-aligned",
        "kernel_entry_admission.hpp",
        "if (r.offset % r.alignment != 0 || r.size == 0) return false;",
        "if (r.size == 0) return false;",
        "misaligned region accepted",
    ),
    CppMutant(
        "ke-empty-region",
        "kernel_entry_admission.hpp",
        "if (r.offset % r.alignment != 0 || r.size == 0) return false;",
        "if (r.offset % r.alignment != 0) return false;",
        "empty region accepted",
    ),
    CppMutant(
        "ke-region-wrap",
        "kernel_entry_admission.hpp",
        "if (__builtin_add_overflow(r.offset, r.size, &end)) return false;",
        "end = r.offset + r.size;",
        "offset + size wrap not checked",
    ),
    CppMutant(
        "ke-region-end",
        "kernel_entry_admission.hpp",
        "return end <= blob_bytes;",
        "return end <= blob_bytes + 1;",
        "region one byte past the blob accepted",
    ),
    CppMutant(
        "ke-child-count",
        "kernel_entry_admission.hpp",
        "if (d.child_count > static_cast<std::size_t>(kMaxKernelChildren)) return InvocationStatus::InvalidCounts;",
        "(void)0;",
        "more than 64 children not refused up front",
    ),
    CppMutant(
        "ke-func-id-range",
        "kernel_entry_admission.hpp",
        "if (c.func_id < 0 || c.func_id >= kMaxKernelChildren) return InvocationStatus::InvalidCounts;",
        "if (c.func_id < 0 || c.func_id > kMaxKernelChildren) return InvocationStatus::InvalidCounts;",
        "func_id 64 accepted",
    ),
    CppMutant(
        "ke-duplicate-func-id",
        "kernel_entry_admission.hpp",
        "if (seen & bit) return InvocationStatus::InvalidCounts;",
        "(void)0;",
        "duplicate func_ids accepted",
    ),
    CppMutant(
        "ke-child-name",
        "kernel_entry_admission.hpp",
        "if (!is_canonical_callable_name(c.name, c.name_bytes)) return InvocationStatus::InvalidSignature;",
        "(void)0;",
        "child names not checked",
    ),
    CppMutant(
        "ke-child-signature",
        "kernel_entry_admission.hpp",
        "        s = derive_invocation_counts(c.signature, c.signature_length, 0, &child);\n        if (s != InvocationStatus::Ok) return s;",
        "        (void)derive_invocation_counts(c.signature, c.signature_length, 0, &child);",
        "child signatures not checked",
    ),
    CppMutant(
        "ke-child-region",
        "kernel_entry_admission.hpp",
        "if (!is_valid_blob_region(c.binary, d.blob_bytes)) return InvocationStatus::InvalidSize;",
        "(void)0;",
        "child binary regions not checked",
    ),
    CppMutant(
        "ke-top-region",
        "kernel_entry_admission.hpp",
        "if (!is_valid_blob_region(d.binary, d.blob_bytes)) return InvocationStatus::InvalidSize;",
        "(void)0;",
        "the callable's binary region not checked",
    ),
    CppMutant(
        "ke-null-children",
        "kernel_entry_admission.hpp",
        "if (counts == nullptr || (d.children == nullptr && d.child_count != 0))",
        "if (counts == nullptr)",
        "null children with a count accepted",
    ),
    # prepared_view.hpp: the documented order of the header checks.
    CppMutant(
        "pv-header-limits",
        "prepared_view.hpp",
        "if (!invocation_counts_in_limits(h.tensor_count, h.scalar_count)) return InvocationStatus::InvalidCounts;",
        "(void)0;",
        "count limits checked only against the view (after the generation)",
    ),
    CppMutant(
        "pv-stale-generation",
        "prepared_view.hpp",
        "h.generation != view.slot_generation",
        "false",
        "stale generation accepted",
    ),
)

# Test executables in the order they are tried (the cheapest likely killer first); a mutant is
# killed by the first that fails.
WIRE_TEST_ORDER = ("codec", "admission", "entry_admission", "vectors", "transport", "cache")


def _run(cmd: list[str], cwd: Path | None = None, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)


def _cxx() -> str:
    return os.environ.get("CXX") or shutil.which("g++") or "c++"


def run_cpp(out: Path) -> dict[str, object]:
    work = out / "cpp"
    shutil.rmtree(work, ignore_errors=True)
    (work / "bin").mkdir(parents=True)
    pristine = NATIVE / "src" / "simpler" / "include"
    include = work / "include"
    shutil.copytree(pristine, include)
    cxx = _cxx()
    flags = ["-std=c++17", "-O1", "-w", f"-I{include}", f"-I{WIRE_TESTS}", f"-I{work}"]
    vectors = _run(
        [
            sys.executable,
            str(WIRE_TESTS / "gen_vectors.py"),
            str(NATIVE / "tests" / "data" / "tmr_vectors.json"),
            str(work / "tmr_vectors.hpp"),
        ]
    )
    if vectors.returncode != 0:
        raise SystemExit(f"gen_vectors.py failed:\n{vectors.stderr}")
    main_o = work / "test_main.o"
    built = _run([cxx, *flags, "-c", str(NATIVE / "tests" / "cpp" / "test_main.cpp"), "-o", str(main_o)])
    if built.returncode != 0:
        raise SystemExit(f"test_main.cpp does not compile:\n{built.stderr[-3000:]}")

    def build_and_run(name: str) -> tuple[str, str]:
        exe = work / "bin" / f"test_wire_{name}"
        b = _run([cxx, *flags, str(WIRE_TESTS / f"test_{name}.cpp"), str(main_o), "-o", str(exe)])
        if b.returncode != 0:
            return "compile-error", b.stderr[-2000:]
        try:
            r = _run([str(exe)], timeout=120)
        except subprocess.TimeoutExpired:
            return "timeout", ""
        return ("pass" if r.returncode == 0 else "fail"), r.stdout[-2000:]

    t0 = time.monotonic()
    for name in WIRE_TEST_ORDER:  # baseline: every test passes on the pristine headers
        verdict, log = build_and_run(name)
        if verdict != "pass":
            raise SystemExit(f"baseline: test_wire_{name} {verdict} on unmutated headers:\n{log}")
    results = []
    for m in CPP_MUTANTS:
        target = include / "simpler" / "wire" / m.header
        original = target.read_text()
        if original.count(m.old) != 1:
            raise SystemExit(f"mutant {m.name}: {m.old!r} occurs {original.count(m.old)} times in {m.header}")
        target.write_text(original.replace(m.old, m.new))
        status, killer, log = "survived", "", ""
        try:
            for name in WIRE_TEST_ORDER:
                verdict, log = build_and_run(name)
                if verdict == "compile-error" and name == WIRE_TEST_ORDER[0]:
                    status = "compile-error"
                    break
                if verdict in ("fail", "timeout"):
                    status, killer = "killed", f"test_wire_{name}"
                    break
        finally:
            target.write_text(original)
        if status == "survived" and m.equivalent:
            status = "equivalent"
        results.append(
            {
                "name": m.name,
                "header": _W + m.header,
                "what": m.what,
                "status": status,
                "killed_by": killer,
                "equivalent": m.equivalent,
            }
        )
        print(f"  C++ mutant {m.name:28} {status:14} {killer}", flush=True)
    killed = sum(r["status"] == "killed" for r in results)
    survived = sum(r["status"] == "survived" for r in results)
    equivalent = sum(r["status"] == "equivalent" for r in results)
    return {
        "mutants": results,
        "killed": killed,
        "survived": survived,
        "equivalent": equivalent,
        "total": killed + survived,  # equivalent mutants and ones that do not compile excluded
        "compile_errors": len(results) - killed - survived - equivalent,
        "seconds": round(time.monotonic() - t0, 1),
    }


# ----------------------------------------------------------------------------- Python (mutmut)


@dataclass(frozen=True)
class PyEquivalent:
    """A surviving mutmut mutant that no input can tell from the original (reviewed by hand).

    ``mutant`` is mutmut's name without the module (``x_<function>__mutmut_<n>``; numbered
    per function, so an edit elsewhere in the file keeps it). ``added`` is text of the line
    the mutant adds: a survivor counts as equivalent only while ``mutmut show`` still shows
    it, so an entry left stale by an edit of its function is reported as a survivor again.
    """

    mutant: str
    added: str
    why: str


@dataclass(frozen=True)
class PyTarget:
    name: str
    package: str  # folder under packages/
    files: tuple[str, ...]  # relative to the package
    tests: tuple[str, ...]  # relative to the package
    # groups of mutmut mutant-name patterns (fnmatch), run in order; empty: every mutant of `files`
    groups: tuple[tuple[str, ...], ...] = ()
    equivalent: tuple[PyEquivalent, ...] = ()


# Every _SimpleCData subclass has ``_type_`` (ctypes refuses to define one without it), so the
# getattr default of _from_ctypes is never used.
_CTYPES_HAS_TYPE = "every ctypes._SimpleCData subclass defines _type_; the default is never read"
TORCH_EQUIVALENT = (
    PyEquivalent("x__from_ctypes__mutmut_4", '"_type_", None)', _CTYPES_HAS_TYPE),
    PyEquivalent("x__from_ctypes__mutmut_7", '"_type_", )', _CTYPES_HAS_TYPE),
    PyEquivalent("x__from_ctypes__mutmut_11", '"_type_", "XXXX")', _CTYPES_HAS_TYPE),
    PyEquivalent("x__from_ctypes__mutmut_31", "ok = None", "`not ok` is the only use: None and False agree"),
    PyEquivalent(
        "x_check_scalar__mutmut_39",
        "if type(None) is int:",
        "the int fast path skipped: operator.index gives an int the same value and verdict",
    ),
    PyEquivalent(
        "x_check_scalar__mutmut_61",
        "if type(None) is float:",
        "the float fast path skipped: float() of a float is the same value",
    ),
    PyEquivalent(
        "x_check_scalar__mutmut_71", "overflow = None", "`if overflow` is the only use: None and False agree"
    ),
    PyEquivalent(
        "x_check_tensor_signature__mutmut_21",
        "strict=None)",
        "zip strictness: the rank check just before makes the lengths equal",
    ),
    PyEquivalent(
        "x_check_tensor_signature__mutmut_24",
        "zip(shape, sizes, )",
        "zip strictness: the rank check just before makes the lengths equal",
    ),
    PyEquivalent(
        "x_check_tensor_signature__mutmut_25",
        "strict=False)",
        "zip strictness: the rank check just before makes the lengths equal",
    ),
)

# ArtifactRuntime._record keeps only the key, path and manifest of the Obtained it is given.
_RECORD_READS = "_record reads only key, path and manifest: the state and origin passed to it are unused"
STORE_EQUIVALENT = (
    PyEquivalent(
        "x__walk__mutmut_5",
        "entry.stat(follow_symlinks=None)",
        "DirEntry.stat's follow_symlinks is a bool parameter: None is read as False",
    ),
    PyEquivalent(
        "xǁArtifactStoreǁ_created_by_store__mutmut_9",
        "item.stat(follow_symlinks=None)",
        "DirEntry.stat's follow_symlinks is a bool parameter: None is read as False",
    ),
    *(
        PyEquivalent(f"xǁArtifactRuntimeǁvalidated__mutmut_{n}", added, _RECORD_READS)
        for n, added in (
            (23, "Obtained(key, path, None,"),
            (24, "state, None, found[1]"),
            (31, '"XXhitXX"'),
            (32, '"HIT"'),
        )
    ),
    PyEquivalent(
        "x_prune_private_roots__mutmut_18",
        "item.stat(follow_symlinks=None)",
        "DirEntry.stat's follow_symlinks is a bool parameter: None is read as False",
    ),
)


PY_TARGETS: dict[str, PyTarget] = {
    "torch": PyTarget(
        "pypto-torch validators",
        "pypto-torch",
        ("src/pypto/torch/_validation.py",),
        (
            "tests/test_validation_bounds.py",
            "tests/test_interop.py",
            "tests/test_interop_plan.py",
            "tests/test_registration.py",
        ),
        equivalent=TORCH_EQUIVALENT,
    ),
    "store": PyTarget(
        "pypto-runtime artifact store",
        "pypto-runtime",
        (
            "src/pypto/runtime/_fs.py",
            "src/pypto/runtime/trust.py",
            "src/pypto/runtime/manifest.py",
            "src/pypto/runtime/store.py",
            "src/pypto/runtime/artifact_runtime.py",
        ),
        (
            "tests/test_store_fs_checks.py",
            "tests/test_store_entry_checks.py",
            "tests/test_store.py",
            "tests/test_store_trust.py",
        ),
        # The trust checks (issue 12), in two groups run in this order within the budget: first
        # the boundary itself (ownership and type checks, no-follow opens, the entry walk, lookup),
        # then what a valid entry must satisfy (the no-replace publish, the manifest comparison,
        # the load-time re-check, store-created-only deletion). The rest of the store (locking,
        # stats, CLI helpers) is left out to keep the session bounded.
        (
            tuple(
                f"pypto.runtime.{name}__mutmut_*"
                for name in (
                    "trust.x_ownership_problem",
                    "trust.x_check_dir",
                    "_fs.x_open_regular",
                    "_fs.x_read_regular",
                    "manifest.x__walk",
                    "store.x_check_key",
                    "store.xǁArtifactStoreǁcheck",
                    "store.xǁArtifactStoreǁlookup",
                )
            ),
            tuple(
                f"pypto.runtime.{name}__mutmut_*"
                for name in (
                    "_fs.x_publish_dir",
                    "_fs.x_remove_tree",
                    "manifest.xǁManifestǁcheck",
                    "manifest.xǁManifestǁsha256_of",
                    "manifest.x__safe_relpath",
                    "manifest.x__read_entry_file",
                    "manifest.x__entry_sha256",
                    "manifest.x_validate_entry",
                    "store.xǁArtifactStoreǁpublish",
                    "store.xǁArtifactStoreǁ_created_by_store",
                    "artifact_runtime.xǁArtifactRuntimeǁvalidated",
                    "artifact_runtime.x__copy_validated",
                    "artifact_runtime.x_prune_private_roots",
                )
            ),
        ),
        equivalent=STORE_EQUIVALENT,
    ),
}


def _mutmut(args: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    """Run mutmut in its own process group: on timeout the whole group (its fork server and
    workers) is killed, not only the main process."""
    cmd = [sys.executable, "-m", "mutmut", *args]
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    with subprocess.Popen(
        cmd,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    ) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            raise subprocess.TimeoutExpired(cmd, timeout, out, err) from None
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # leftover workers of a finished run
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def _shows_added_line(name: str, added: str, work: Path) -> bool:
    """Whether ``mutmut show name`` adds a line containing ``added`` (the reviewed mutant)."""
    shown = _mutmut(["show", name], work, 120).stdout
    return any(ln.startswith("+ ") and added in ln for ln in shown.splitlines())


def run_python(
    target: PyTarget, out: Path, budget: float, max_children: int, groups: list[int] | None = None
) -> dict[str, object]:
    """Run mutmut over ``target`` (only the given 1-based ``groups`` of a grouped target)."""
    if groups and target.groups:
        target = replace(target, groups=tuple(target.groups[g - 1] for g in groups))
    pkg = ROOT / "packages" / target.package
    work = out / target.package
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    shutil.copytree(pkg / "src", work / "src", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(pkg / "tests", work / "tests", ignore=shutil.ignore_patterns("__pycache__"))
    lines = ["[mutmut]", "source_paths = src"]
    lines += ["only_mutate ="] + [f"    {f}" for f in target.files]
    lines += ["pytest_add_cli_args_test_selection ="] + [f"    {t}" for t in target.tests]
    lines += ["pytest_add_cli_args =", "    -p", "    no:cacheprovider", "    -q", "    -x"]
    lines += ["process_isolation = forkserver", "forkserver_warmup = collect", "timeout_multiplier = 5.0"]
    (work / "setup.cfg").write_text("\n".join(lines) + "\n")
    t0 = time.monotonic()
    timed_out = False
    log = ""
    for patterns in target.groups or ((),):
        for _attempt in range(2):  # a stats run that fails (a flaky test, a tree mid-edit) is retried once
            left = budget - (time.monotonic() - t0)
            try:
                run = _mutmut(["run", "--max-children", str(max_children), *patterns], work, max(left, 1.0))
                log += run.stdout[-4000:] + run.stderr[-4000:]
            except subprocess.TimeoutExpired as exc:
                timed_out = True
                log += f"stopped after the {budget:.0f} s budget\n" + str(exc.stdout or "")[-2000:]
                break
            if "failed to collect stats" not in run.stdout + run.stderr:
                break
        if timed_out:
            break
    (work / "mutmut-run.log").write_text(log)
    return collect_python(target, work, round(time.monotonic() - t0, 1), timed_out)


def collect_python(target: PyTarget, work: Path, seconds: float, timed_out: bool) -> dict[str, object]:
    """The verdicts of a mutmut run in ``work`` (also usable on a finished scratch project)."""
    stats = _mutmut(["export-cicd-stats"], work, 300)
    data: dict[str, object] = {}
    stats_file = work / "mutants" / "mutmut-cicd-stats.json"
    if stats_file.exists():
        data = json.loads(stats_file.read_text())
    results = _mutmut(["results", "--all", "true"], work, 300)
    patterns = [p for group in target.groups for p in group]
    reviewed = {e.mutant: e for e in target.equivalent}
    by_status: dict[str, int] = {}  # the selected mutants (every one when no groups are given)
    survivors: list[str] = []
    equivalent: list[dict[str, str]] = []
    for ln in results.stdout.splitlines():
        m = re.match(r"\s*(\S+): (.+)$", ln)
        if not m or (patterns and not any(fnmatch.fnmatch(m.group(1), p) for p in patterns)):
            continue
        name, status = m.group(1), m.group(2)
        if status == "survived":
            entry = reviewed.get(name.rsplit(".", 1)[-1])
            if entry is not None and _shows_added_line(name, entry.added, work):
                status = "equivalent"
                equivalent.append({"name": name, "why": entry.why})
            else:
                survivors.append(f"{name}: survived")
        by_status[status] = by_status.get(status, 0) + 1
    return {
        "target": target.name,
        "files": list(target.files),
        "tests": list(target.tests),
        "stats": data,
        "by_status": by_status,
        "survivors": survivors,
        "equivalent": equivalent,
        "timed_out": timed_out,
        "seconds": seconds,
        "stats_error": "" if stats.returncode == 0 else stats.stderr[-1000:],
    }


# ----------------------------------------------------------------------------- report


def _rate(killed: int, total: int) -> str:
    return f"{killed}/{total} ({100.0 * killed / total:.0f}%)" if total else "0/0"


def summarize(report: dict[str, object]) -> str:
    out = ["| target | killed / tested | survived | not run | time |", "|---|---|---|---|---|"]
    for key in ("torch", "cpp", "store"):
        r = report.get(key)
        if not isinstance(r, dict):
            continue
        if key == "cpp":
            out.append(
                f"| C++ wire headers | {_rate(int(r['killed']), int(r['total']))} | {r['survived']} | "
                f"{r['equivalent']} equivalent, {r['compile_errors']} do not compile | {r['seconds']} s |"
            )
            continue
        s = r["by_status"] if isinstance(r["by_status"], dict) else {}
        killed = int(s.get("killed", 0)) + int(s.get("timeout", 0))
        survived = int(s.get("survived", 0))
        equivalent = int(s.get("equivalent", 0))
        not_run = sum(
            int(v) for k, v in s.items() if k not in ("killed", "timeout", "survived", "equivalent")
        )
        budget = " (budget reached)" if r["timed_out"] else ""
        out.append(
            f"| {r['target']} | {_rate(killed, killed + survived)} | {survived} | "
            f"{equivalent} equivalent, {not_run} not checked | {r['seconds']} s{budget} |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--out", type=Path, default=ROOT / "build" / "mutation")
    ap.add_argument("--only", choices=("torch", "cpp", "store"), action="append")
    ap.add_argument("--budget", type=float, default=330.0, help="seconds per Python target")
    ap.add_argument("--max-children", type=int, default=2)
    ap.add_argument(
        "--group",
        type=int,
        action="append",
        choices=(1, 2),
        help="only this group of the store's functions (1: the boundary, 2: entry validity); "
        "two runs with their own --out can go side by side",
    )
    args = ap.parse_args(argv)
    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    wanted = args.only or ["torch", "cpp", "store"]  # the store last: its modules change most often
    report: dict[str, object] = {}
    summary_path = out / "summary.json"
    if summary_path.exists():
        report = json.loads(summary_path.read_text())
    for key in ("torch", "cpp", "store"):
        if key not in wanted:
            continue
        print(f"== {key}", flush=True)
        report[key] = (
            run_cpp(out)
            if key == "cpp"
            else run_python(PY_TARGETS[key], out, args.budget, args.max_children, args.group)
        )
        summary_path.write_text(json.dumps(report, indent=2) + "\n")
    print(summarize(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
