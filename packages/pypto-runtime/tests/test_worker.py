"""Shared program Workers: registration capacity is handled by replacing the Worker."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator

import pytest

from pypto.runtime import worker


class _Callable:
    def __init__(self, digest: str) -> None:
        self.digest = digest


class _Worker:
    MAX = 2
    made: list[_Worker] = []  # noqa: RUF012 - test recorder

    def __init__(self, **kw: object) -> None:
        self.handles: dict[str, object] = {}
        self.kw = kw
        _Worker.made.append(self)

    def init(self, prewarm: object = None) -> None:
        pass

    def register(self, c: _Callable) -> object:
        if c.digest not in self.handles:
            if len(self.handles) >= _Worker.MAX:
                raise ValueError("at most 2 callables per Worker")
            self.handles[c.digest] = object()
        return self.handles[c.digest]

    def close(self) -> None:
        pass


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, fresh_gate: None) -> Iterator[None]:
    mod = types.ModuleType("simpler")
    mod.Worker = _Worker  # type: ignore[attr-defined]
    mod.MAX_CALLABLES = _Worker.MAX  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "simpler", mod)
    _Worker.made.clear()
    worker.close_shared_workers()
    yield
    worker.close_shared_workers()


@pytest.mark.usefixtures("fake")
def test_full_worker_is_replaced_not_failed() -> None:
    a, b, c = _Callable("a"), _Callable("b"), _Callable("c")
    w1, ha = worker.register_on_shared_worker(a, "a2a3sim")
    w1b, _hb = worker.register_on_shared_worker(b, "a2a3sim")
    assert w1 is w1b
    assert worker.register_on_shared_worker(a, "a2a3sim") == (w1, ha)  # re-registration is free
    w2, _ = worker.register_on_shared_worker(c, "a2a3sim")
    assert w2 is not w1
    assert len(_Worker.made) == 2
    assert worker.shared_worker("a2a3sim") is w2
    # Other platforms get their own Worker.
    w3, _ = worker.register_on_shared_worker(a, "a5sim")
    assert w3 not in (w1, w2)


@pytest.mark.usefixtures("fake")
def test_core_thread_counts_reach_the_worker_and_key_it() -> None:
    a = _Callable("a")
    w_default, _ = worker.register_on_shared_worker(a, "a2a3sim")
    aic, aiv = worker.default_core_threads()
    assert (w_default.kw["aic_threads"], w_default.kw["aiv_threads"]) == (aic, aiv)
    assert min(aic, aiv) >= 1
    # The defaults spelled out are the same Worker; other counts get their own.
    assert worker.register_on_shared_worker(a, "a2a3sim", aic_threads=aic, aiv_threads=aiv)[0] is w_default
    w4, _ = worker.register_on_shared_worker(a, "a2a3sim", aic_threads=1, aiv_threads=aiv + 2)
    assert w4 is not w_default
    assert (w4.kw["aic_threads"], w4.kw["aiv_threads"]) == (1, aiv + 2)
    assert worker.shared_worker("a2a3sim", aic_threads=1, aiv_threads=aiv + 2) is w4


def test_run_config_core_threads_are_checked() -> None:
    from pypto.runtime import RunConfig

    assert (RunConfig().aic_threads, RunConfig().aiv_threads) == (None, None)
    assert RunConfig(aic_threads=0, aiv_threads=3).aiv_threads == 3
    for bad in (
        {"aiv_threads": -1},
        {"aic_threads": True},
        {"aiv_threads": 65},
        {"aic_threads": 0, "aiv_threads": 0},
    ):
        with pytest.raises(ValueError, match="RunConfig"):
            RunConfig(**bad)  # type: ignore[arg-type]


@pytest.mark.usefixtures("fake")
def test_shared_generation_changes_whenever_a_shared_worker_does() -> None:
    g0 = worker.shared_generation()
    w1, _ = worker.register_on_shared_worker(_Callable("a"), "a2a3sim")
    g1 = worker.shared_generation()
    assert g1 != g0
    assert worker.register_on_shared_worker(_Callable("a"), "a2a3sim")[0] is w1
    assert worker.shared_generation() == g1  # reuse: unchanged
    worker.close_shared_workers()
    assert worker.shared_generation() != g1
