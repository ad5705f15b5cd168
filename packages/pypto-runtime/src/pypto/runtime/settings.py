"""Every environment variable pypto.runtime reads, declared once, with its type and effect.

Each variable is either *invalidating* (its value can change what an artifact computes, so it
is folded into the artifact key) or *neutral* (it changes where or whether things are stored,
never what is built). Reading a variable that is not declared here is an error, so a new knob
cannot silently change artifacts without entering the key.

Example:
    >>> from pypto.runtime import settings
    >>> settings.get("PYPTO_CACHE") in (True, False)
    True
"""

from __future__ import annotations

import enum
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pypto.ir import DEFAULT_PLATFORM, PLATFORMS
from pypto.runtime.errors import PyptoRuntimeError

__all__ = [
    "SETTINGS",
    "Effect",
    "Setting",
    "SettingsError",
    "cache_dir",
    "cache_enabled",
    "cache_readonly",
    "cache_shared_dir",
    "fault_point",
    "get",
    "invalidating_snapshot",
    "lock_timeout",
    "platform",
    "pto_isa_root",
    "simulate_npu",
]


class SettingsError(PyptoRuntimeError, ValueError):
    """An environment variable is undeclared or holds a value of the wrong form."""


class Effect(enum.Enum):
    INVALIDATING = "invalidating"
    NEUTRAL = "neutral"


def _parse_bool(name: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off", ""):
        return False
    raise SettingsError(f"environment variable {name}: expected 0/1 (or true/false), got {raw!r}")


def _parse_path(name: str, raw: str) -> Path | None:
    if not raw.strip():
        return None
    path = Path(raw).expanduser()
    if not path.is_absolute():
        raise SettingsError(f"environment variable {name}: expected an absolute path, got {raw!r}")
    return path


def _parse_seconds(name: str, raw: str) -> float | None:
    if not raw.strip():
        return None
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise SettingsError(f"environment variable {name}: expected a number of seconds > 0, got {raw!r}")
    return value


def _parse_str(name: str, raw: str) -> str | None:
    return raw.strip() or None


def _parse_data_path(name: str, raw: str) -> str | None:
    from pypto.ir import DATA_PATHS

    value = raw.strip()
    if not value:
        return None
    if value not in DATA_PATHS:
        raise SettingsError(
            f"environment variable {name}: expected one of {', '.join(DATA_PATHS)}, got {raw!r}"
        )
    return value


def _parse_platform(name: str, raw: str) -> str | None:
    value = raw.strip()
    if not value:
        return None
    if value not in PLATFORMS:
        raise SettingsError(
            f"environment variable {name}: expected one of {', '.join(PLATFORMS)}, got {raw!r}"
        )
    return value


@dataclass(frozen=True)
class Setting:
    """One environment variable: its effect on artifacts, parser, default and meaning."""

    name: str
    effect: Effect
    parse: Callable[[str, str], Any]
    default: Any
    doc: str


SETTINGS: Mapping[str, Setting] = {
    s.name: s
    for s in (
        Setting(
            "PYPTO_CACHE_DIR",
            Effect.NEUTRAL,
            _parse_path,
            None,
            "Root of the artifact store; default: the user cache directory (platformdirs) / pypto.",
        ),
        Setting(
            "PYPTO_CACHE",
            Effect.NEUTRAL,
            _parse_bool,
            True,
            "0 disables the artifact store: every compile builds in a private directory.",
        ),
        Setting(
            "PYPTO_CACHE_READONLY",
            Effect.NEUTRAL,
            _parse_bool,
            False,
            "1 uses READY entries that exist but never writes to the store (no locks, no publish).",
        ),
        Setting(
            "PYPTO_CACHE_SHARED_DIR",
            Effect.NEUTRAL,
            _parse_path,
            None,
            "Root of a shared read-only store (e.g. a site-wide prebuilt store), consulted after "
            "PYPTO_CACHE_DIR: owned by root or by you, writable by nobody else; only ever read.",
        ),
        Setting(
            "PYPTO_CACHE_LOCK_TIMEOUT",
            Effect.NEUTRAL,
            _parse_seconds,
            600.0,
            "Seconds to wait for another process's per-key store lock before giving up (the "
            "artifact is then built privately, with a warning naming the holder's pid).",
        ),
        Setting(
            "PYPTO_PLATFORM",
            Effect.NEUTRAL,
            _parse_platform,
            None,
            f"The platform used where none is given (pypto.torch.init); default: {DEFAULT_PLATFORM}, the "
            "simulated chip.",
        ),
        Setting(
            "PYPTO_DIST_DATA_PATH",
            Effect.NEUTRAL,
            _parse_data_path,
            "shared_memory",
            "How the ranks of a multi-chip program reach each other's windows when its "
            "DistributedConfig(data_path) is None: shared_memory (one shared segment per window "
            "buffer) or process_group (private windows, cross-rank operations over gloo; forces the "
            "path of ranks that share no memory on one machine).",
        ),
        Setting(
            "PYPTO_SIMULATE_NPU",
            Effect.NEUTRAL,
            _parse_bool,
            False,
            "1 runs a RunConfig that names an NPU platform (a2a3, a5) on that chip's simulator "
            "(a2a3sim, a5sim; device_id is then ignored): scripts written for a device run unchanged "
            "on a machine without one. The run's RunConfig.platform says which platform ran.",
        ),
        Setting(
            "PYPTO_NATIVE_DESCRIBE",
            Effect.NEUTRAL,
            _parse_bool,
            True,
            "0 stops pypto.torch.init on a simulator from loading the native describe_call fast path "
            "on a background thread (building it first, about 25 s of CPU, when this torch has no "
            "cached build); pypto.torch.build_native() still does it on request.",
        ),
        Setting(
            "PYPTO_SKIP_RUNTIME_PIN",
            Effect.NEUTRAL,
            _parse_bool,
            False,
            "1 lets pypto.torch.init accept a simpler-native whose version is missing or outside the "
            "pinned range (the interface checks still run).",
        ),
        Setting(
            "PTO_ISA_ROOT",
            Effect.INVALIDATING,
            _parse_path,
            None,
            "A pto-isa checkout (a directory holding include/pto/pto-inst.hpp): kernels then compile "
            "against its official headers' CPU backend (clang++ >= 17 or g++ >= 14, -std=c++20 "
            "-D__CPU_SIM) instead of simpler's own PTO-ISA implementation; read by simpler.toolchain, "
            "whose identity (in every artifact key) holds the root's path and a digest of its include/.",
        ),
        Setting(
            "PTO_ISA_CXX",
            Effect.INVALIDATING,
            _parse_str,
            None,
            "The compiler for kernels when PTO_ISA_ROOT is set (must be clang++ >= 17 or g++ >= 14); "
            "default: the first such of clang++-21 ... clang++-17, clang++, g++-16 ... g++-14, g++ on PATH.",
        ),
        Setting(
            "ASCEND_HOME_PATH",
            Effect.NEUTRAL,  # an NPU platform's toolchain identity holds the compiler it finds
            _parse_path,
            None,
            "The CANN toolkit a compile for an NPU platform (a2a3, a5) builds its device binaries "
            "with (its bisheng compiler, with PTO_ISA_ROOT's device headers); without one, such a "
            "compile writes the sources and raises DeviceBuildUnavailable. Nothing of the device "
            "path has run on hardware.",
        ),
        Setting(
            "PYPTO_CACHE_FAULT",
            Effect.NEUTRAL,
            _parse_str,
            None,
            "Test only: a promotion step name at which the process kills itself (SIGKILL), or "
            "'enospc:<step>' to fail that step with ENOSPC.",
        ),
    )
}


def get(name: str) -> Any:
    """The parsed value of a declared variable (its default when unset or empty)."""
    try:
        setting = SETTINGS[name]
    except KeyError:
        raise SettingsError(
            f"settings.get({name!r}): not a declared setting; declare it in pypto.runtime.settings "
            f"as invalidating or neutral (declared: {', '.join(sorted(SETTINGS))})"
        ) from None
    raw = os.environ.get(name)
    if raw is None:
        return setting.default
    value = setting.parse(name, raw)
    return setting.default if value is None else value


def invalidating_snapshot() -> dict[str, str]:
    """Raw values of every invalidating variable that is set: material for an artifact key."""
    return {
        name: os.environ[name]
        for name, s in sorted(SETTINGS.items())
        if s.effect is Effect.INVALIDATING and name in os.environ
    }


def cache_dir() -> Path:
    """The store root: PYPTO_CACHE_DIR, else ``<user cache dir>/pypto``."""
    explicit: Path | None = get("PYPTO_CACHE_DIR")
    if explicit is not None:
        return explicit
    import platformdirs

    return Path(platformdirs.user_cache_dir("pypto", appauthor=False))


def cache_enabled() -> bool:
    return bool(get("PYPTO_CACHE"))


def cache_readonly() -> bool:
    return bool(get("PYPTO_CACHE_READONLY"))


def cache_shared_dir() -> Path | None:
    """The shared read-only store root (PYPTO_CACHE_SHARED_DIR), or None."""
    value: Path | None = get("PYPTO_CACHE_SHARED_DIR")
    return value


def lock_timeout() -> float:
    """Seconds to wait for a per-key store lock (PYPTO_CACHE_LOCK_TIMEOUT, default 600)."""
    return float(get("PYPTO_CACHE_LOCK_TIMEOUT"))


def platform() -> str | None:
    """The configured platform (PYPTO_PLATFORM), or None when unset."""
    value: str | None = get("PYPTO_PLATFORM")
    return value


def native_describe() -> bool:
    """Whether pypto.torch.init loads the native describe_call path (PYPTO_NATIVE_DESCRIBE, default on)."""
    return bool(get("PYPTO_NATIVE_DESCRIBE"))


def simulate_npu() -> bool:
    """Whether an NPU platform in a RunConfig runs on its simulator (PYPTO_SIMULATE_NPU)."""
    return bool(get("PYPTO_SIMULATE_NPU"))


def pto_isa_root() -> Path | None:
    """The official PTO-ISA checkout kernels compile against (PTO_ISA_ROOT), or None."""
    value: Path | None = get("PTO_ISA_ROOT")
    return value


def fault_point() -> str | None:
    value: str | None = get("PYPTO_CACHE_FAULT")
    return value
