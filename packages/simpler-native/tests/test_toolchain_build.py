"""simpler.toolchain: host-tuned target in the identity, precompiled preludes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from simpler import toolchain
from simpler.toolchain import _leading_includes, _resolved_target

KERNEL = """// a PTO-ISA kernel: x = exp(x) over a 16 x 16 float tensor
#include <cstdint>
#include <simpler/kernel_prologue.hpp>
#include <pto/pto-inst.hpp>
#include <simpler/kernel_args.hpp>

using namespace pto;
namespace sk = simpler::kernel;
SIMPLER_DEFINE_KERNEL_ABI();

extern "C" __attribute__((visibility("default"))) void kernel_entry(std::int64_t* args) {
    const simpler::ChipTensor& x = sk::tensor_arg(args[0]);
    using G = GlobalTensor<float, Shape<1, 1, 1, 16, 16>, Stride<1, 1, 1, 16, 1>>;
    G g(reinterpret_cast<float*>(x.buffer.addr));
    Tile<TileType::Vec, float, 16, 16, BLayout::RowMajor, 16, 16> t;
    TASSIGN(t, 0x0);
    TLOAD(t, g);
    set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
    wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
    TEXP(t, t);
    set_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
    wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
    TSTORE(g, t);
}
"""


def _kernel_toolchain(cache_dir: Path) -> toolchain.Toolchain:
    """A toolchain with simpler's PTO-ISA headers (KERNEL includes <pto/pto-inst.hpp>)."""
    root = toolchain.pto_include_dir()
    assert root is not None, "simpler's PTO-ISA headers (include_pto) are missing"
    return toolchain.Toolchain(cache_dir=cache_dir, include_roots=(root,), pto_backend="simpler")


def _entries(cache: Path) -> list[Path]:
    root = cache / "pch"
    return sorted(p for p in root.iterdir() if not p.name.startswith(".")) if root.is_dir() else []


def test_default_flags_tune_for_the_host_and_the_identity_records_the_cpu() -> None:
    tc = toolchain.Toolchain()
    assert "-march=native" in tc.flags
    resolved = _resolved_target(tc.compiler, tc.flags)
    assert "native" not in resolved  # the compiler's expansion: a named CPU and its features
    assert resolved.count("-m") > 3 or "-target-cpu" in resolved
    assert os.getcwd() not in resolved
    generic = toolchain.Toolchain(flags=tuple(f for f in tc.flags if f != "-march=native"))
    assert generic.identity() != tc.identity()
    assert _resolved_target(tc.compiler, generic.flags) != resolved


def test_leading_includes() -> None:
    assert _leading_includes(KERNEL) == (
        "#include <cstdint>",
        "#include <simpler/kernel_prologue.hpp>",
        "#include <pto/pto-inst.hpp>",
        "#include <simpler/kernel_args.hpp>",
    )
    assert _leading_includes('#include "local.hpp"\n#include <cstdint>\n') == ()
    assert _leading_includes("\n// c\n#include <a>\nint x;\n#include <b>\n") == ("#include <a>",)
    assert _leading_includes("int x;\n") == ()


def test_precompiled_prelude_gives_the_same_binary_and_is_reused(tmp_path: Path) -> None:
    tc = _kernel_toolchain(cache_dir=tmp_path / "cache")
    plain = tc.compile_shared({"k.cpp": KERNEL})
    assert not (tmp_path / "cache").exists()  # nothing cached unless asked
    first = tc.compile_shared({"k.cpp": KERNEL}, precompile=True)
    (entry,) = _entries(tmp_path / "cache")
    gch = entry / "prelude.hpp.gch"
    assert gch.is_file()
    assert (entry / "prelude.hpp").read_text().splitlines()[1:] == list(_leading_includes(KERNEL))
    stamp = gch.stat().st_mtime_ns
    # another kernel with the same includes: the same entry, not rebuilt
    second = tc.compile_shared(
        {"k2.cpp": KERNEL.replace("RowMajor, 16, 16>", "RowMajor, 8, 8>")}, precompile=True
    )
    assert _entries(tmp_path / "cache") == [entry]
    assert gch.stat().st_mtime_ns == stamp
    assert first == plain
    assert second != first
    assert second == tc.compile_shared({"k2.cpp": KERNEL.replace("RowMajor, 16, 16>", "RowMajor, 8, 8>")})
    # other flags: another entry
    tc.compile_shared({"k.cpp": KERNEL}, precompile=True, extra_flags=["-DSIMPLER_TEST_ONLY=1"])
    assert len(_entries(tmp_path / "cache")) == 2


def test_a_damaged_precompiled_header_falls_back_to_parsing(tmp_path: Path) -> None:
    tc = _kernel_toolchain(cache_dir=tmp_path)
    want = tc.compile_shared({"k.cpp": KERNEL})
    tc.compile_shared({"k.cpp": KERNEL}, precompile=True)
    (entry,) = _entries(tmp_path)
    (entry / "prelude.hpp.gch").write_bytes(b"not a precompiled header")
    assert tc.compile_shared({"k.cpp": KERNEL}, precompile=True) == want
    (entry / "prelude.hpp.gch").write_bytes((entry / "prelude.hpp.gch").read_bytes()[:10])
    assert tc.compile_shared({"k.cpp": KERNEL}, precompile=True) == want


def test_a_shared_cache_directory_is_not_used(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    cache.chmod(0o777)
    tc = _kernel_toolchain(cache_dir=cache)
    assert tc.compile_shared({"k.cpp": KERNEL}, precompile=True) == tc.compile_shared({"k.cpp": KERNEL})
    assert not (cache / "pch").exists()


def test_compile_errors_still_name_the_source_with_a_prelude(tmp_path: Path) -> None:
    tc = _kernel_toolchain(cache_dir=tmp_path)
    bad = KERNEL.replace("TEXP(t, t);", "TEXP(t);")
    with pytest.raises(toolchain.CompileError) as info:
        tc.compile_shared({"bad.cpp": bad}, precompile=True)
    assert "bad.cpp" in info.value.stderr


def test_default_cache_dir_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SIMPLER_CACHE_DIR", str(tmp_path / "a"))
    assert toolchain.Toolchain().cache_dir == tmp_path / "a"
    monkeypatch.delenv("SIMPLER_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert toolchain.Toolchain().cache_dir == tmp_path / "xdg" / "simpler"


def test_precompile_can_be_turned_off(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SIMPLER_PRECOMPILE", "0")
    tc = _kernel_toolchain(cache_dir=tmp_path / "cache")
    tc.compile_shared({"k.cpp": KERNEL}, precompile=True)
    assert not (tmp_path / "cache").exists()


def test_least_recently_used_preludes_are_pruned(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(toolchain, "_PCH_KEEP", 1)
    tc = _kernel_toolchain(cache_dir=tmp_path)
    small = 'extern "C" int f() { return 1; }\n'
    tc.compile_shared({"a.cpp": "#include <cstdint>\n" + small}, precompile=True)
    (first,) = _entries(tmp_path)
    tc.compile_shared({"b.cpp": "#include <climits>\n" + small}, precompile=True)
    (second,) = _entries(tmp_path)
    assert second != first
    assert (second / "prelude.hpp").read_text().endswith("#include <climits>\n")
