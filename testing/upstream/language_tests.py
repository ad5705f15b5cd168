"""Measure this stack's language against upstream PyPTO's language tests.

Runs upstream's ``tests/ut/language`` (plain pytest files, unchanged, from a checkout outside this
repository) against this ``pypto.language`` and records every program they build: each
``@pl.program`` class, each standalone ``@pl.function`` (whose parse is lazy here, so it is
forced) and each ``pl.parse``/``pl.loads`` text. A program built inside ``pytest.raises`` is one
upstream rejects ("invalid"), any other one upstream accepts ("valid"). The ratios are: valid
programs accepted here, invalid programs rejected here. Upstream-only modules the tests import
(``pypto.pypto_core``, parser internals, ...) are stubbed, so a file still imports; a test that
uses them before building its program never reaches it and is not counted. What a test asserts
about upstream's IR objects after building is not checked. Text run by ``exec`` that catches one
of upstream's parser errors itself expects its build to fail (an invalid program); ``pl.parse``
of text from upstream's own printer (a stub here) builds no program and is not counted.

Usage (any working directory)::

    python testing/upstream/language_tests.py --upstream /path/to/pypto [--list rejected|accepted]

Each program is identified by its file and line; one built several times (a parametrized test)
counts once, as accepted only if every build was.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.abc
import importlib.machinery
import json
import shutil
import sys
import tempfile
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

_STUBBED = (
    "pypto.pypto_core",
    "pypto.passes",
    "pypto.language.parser.diagnostics",
    "pypto.language.parser.expr_evaluator",
    "pypto.language.parser.type_resolver",
    "pypto.language.parser.span_tracker",
    "pypto.language.parser.scope_manager",
    "pypto.language.parser.ast_parser",
    "pypto.language.typing.dynamic",
    "pypto.language.op",
    "pypto.ir.utils",
    "pypto.ir.printer",
    "pypto.ir.op",
    "pypto.language.arg_direction",
    "pypto.language.parser.text_parser",
    "pypto.language.parser.source_lookup",
)


class _StubModule(types.ModuleType):
    """An upstream-only module: exception names are exception classes, the rest mocks."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if name.endswith(("Error", "Exception")):
            value: Any = type(name, (Exception,), {})
        elif name.endswith("Warning"):
            value = type(name, (Warning,), {})
        else:
            value = mock.MagicMock(name=f"{self.__name__}.{name}")
        setattr(self, name, value)
        return value


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(
        self, fullname: str, path: Any, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        if any(fullname == s or fullname.startswith(s + ".") for s in _STUBBED):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        m = _StubModule(spec.name)
        m.__path__ = []
        return m

    def exec_module(self, module: types.ModuleType) -> None:
        return None


class Recorder:
    """pytest plugin: records each program built, whether inside ``pytest.raises``, and its fate."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.depth = 0
        self.builds: dict[str, list[tuple[bool, bool, str]]] = {}  # site -> (invalid, accepted, error)

    def site(self, frame: types.FrameType | None) -> str:
        while frame is not None:
            f = Path(frame.f_code.co_filename)
            if self.root in f.parents:
                return f"{f.relative_to(self.root)}:{frame.f_lineno}"
            frame = frame.f_back
        return "?"

    @staticmethod
    def catches_parser_error(frame: types.FrameType | None) -> bool:
        """Whether the code that builds a program is text run by ``exec`` (no file) that itself
        names one of upstream's parser errors: it expects the build to fail and catches the error
        (``try: @pl.function ... except ParserSyntaxError``) instead of using ``pytest.raises``."""
        while frame is not None and frame.f_code.co_filename.startswith("<"):
            if any(n.startswith("Parser") and n.endswith("Error") for n in frame.f_code.co_names):
                return True
            frame = frame.f_back
        return False

    def record(self, site: str, build: Callable[[], Any], frame: types.FrameType | None = None) -> Any:
        invalid = self.depth > 0 or self.catches_parser_error(frame)
        try:
            out = build()
        except Exception as exc:
            self.builds.setdefault(site, []).append((invalid, False, f"{type(exc).__name__}: {exc}"[:300]))
            raise
        self.builds.setdefault(site, []).append((invalid, True, ""))
        return out

    def install(self) -> None:
        import pypto
        import pypto.language as pl
        from pypto.ir.dtypes import DataType
        from pypto.language import decorators

        sys.meta_path.append(_StubFinder())

        def pypto_getattr(name: str) -> Any:
            try:
                return importlib.import_module(f"pypto.{name}")
            except ImportError:
                return mock.MagicMock(name=f"pypto.{name}")

        setattr(pypto, "DataType", DataType)  # noqa: B010
        import pypto.ir as ir_module

        ir_getattr = ir_module.__getattr__

        def ir_stub(name: str) -> Any:  # upstream's IR classes (module-level annotations name them)
            try:
                return ir_getattr(name)
            except AttributeError:
                if name.startswith("__"):
                    raise
                return mock.MagicMock(name=f"pypto.ir.{name}")

        setattr(ir_module, "__getattr__", ir_stub)  # noqa: B010
        import pypto.language.parser as parser_pkg
        import pypto.language.typing as typing_module

        setattr(typing_module, "__path__", [])  # noqa: B010  # upstream's is a package
        for name in ("ParserError", "ParserSyntaxError", "ParserTypeError", "UndefinedVariableError"):
            if not hasattr(parser_pkg, name):
                setattr(parser_pkg, name, type(name, (Exception,), {}))
        setattr(pypto, "__getattr__", pypto_getattr)  # noqa: B010
        rec = self
        original_raises = pytest.raises

        @contextlib.contextmanager
        def _counted(cm: Any) -> Iterator[Any]:
            rec.depth += 1
            try:
                with cm as info:
                    yield info
            finally:
                rec.depth -= 1

        def raises(*args: Any, **kwargs: Any) -> Any:
            cm = original_raises(*args, **kwargs)
            if len(args) > 1:  # pytest.raises(Exc, fn, ...) form: already ran
                return cm
            return _counted(cm)

        setattr(pytest, "raises", raises)  # noqa: B010

        # The wrappers' frames must look like decorators.py's own (it finds the code that applied
        # a decorator by skipping frames whose globals are its module's), so they are rebuilt
        # over that module's globals; what they use comes from their closure.
        def rebind(fn: Callable[..., Any]) -> Callable[..., Any]:
            return types.FunctionType(
                fn.__code__, decorators.__dict__, fn.__name__, fn.__defaults__, fn.__closure__
            )

        orig_program, orig_function, orig_parse, orig_loads = pl.program, pl.function, pl.parse, pl.loads
        getframe = sys._getframe
        stub = mock.Mock  # the wrappers run over decorators.py's globals: what they use is a closure

        def program(cls: Any) -> Any:
            return rec.record(rec.site(getframe(1)), lambda: orig_program(cls), getframe(1))

        def function(fn: Any = None, **kw: Any) -> Any:
            if fn is None:
                return lambda f: function(f, **kw)
            site = rec.site(getframe(1))
            out = orig_function(fn, **kw)
            if isinstance(out, decorators.DSLFunction):
                return rec.record(site, lambda: (out.ir, out)[1], getframe(1))
            return out

        def parse(*a: Any, **kw: Any) -> Any:
            if a and isinstance(a[0], stub):
                # text printed by upstream's own printer (a stub here): there is no program to count
                return orig_parse(*a, **kw)
            return rec.record(rec.site(getframe(1)), lambda: orig_parse(*a, **kw))

        def loads(*a: Any, **kw: Any) -> Any:
            return rec.record(rec.site(getframe(1)), lambda: orig_loads(*a, **kw))

        for name, fn in (("program", program), ("function", function), ("parse", parse), ("loads", loads)):
            setattr(pl, name, rebind(fn))
        function = pl.function  # type: ignore[assignment]  # the recursive call goes through the rebuilt one

    def summary(self) -> dict[str, Any]:
        valid = {s: b for s, b in self.builds.items() if not b[0][0]}
        invalid = {s: b for s, b in self.builds.items() if b[0][0]}
        acc = sorted(s for s, b in valid.items() if all(x[1] for x in b))
        rej_valid = sorted(s for s, b in valid.items() if not all(x[1] for x in b))
        rej = sorted(s for s, b in invalid.items() if not all(x[1] for x in b))
        acc_invalid = sorted(s for s, b in invalid.items() if all(x[1] for x in b))
        return {
            "valid": len(valid),
            "valid_accepted": len(acc),
            "invalid": len(invalid),
            "invalid_rejected": len(rej),
            "valid_rejected_sites": {s: next(x[2] for x in valid[s] if not x[1]) for s in rej_valid},
            "invalid_accepted_sites": acc_invalid,
        }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--upstream", type=Path, required=True, help="root of an upstream PyPTO checkout")
    ap.add_argument("--json", type=Path, help="write the full result (sites and errors) here")
    ap.add_argument("-k", default=None, help="pytest -k expression (a subset of the tests)")
    opts = ap.parse_args()
    src = opts.upstream / "tests" / "ut" / "language"
    if not src.is_dir():
        ap.error(f"--upstream: expected a checkout with tests/ut/language, found none at {src}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "language"
        shutil.copytree(src, root)
        (Path(tmp) / "pytest.ini").write_text("[pytest]\n")
        rec = Recorder(root)
        rec.install()
        args = [
            str(root),
            "-q",
            "-p",
            "no:cacheprovider",
            "--noconftest",
            "--tb=no",
            "--continue-on-collection-errors",
        ]
        if opts.k:
            args += ["-k", opts.k]
        pytest.main(args, plugins=[rec])
        result = rec.summary()
    v, va, i, ir = result["valid"], result["valid_accepted"], result["invalid"], result["invalid_rejected"]
    print(f"valid programs accepted: {va} of {v} ({100 * va / max(v, 1):.1f}%)")
    print(f"invalid programs rejected: {ir} of {i} ({100 * ir / max(i, 1):.1f}%)")
    if opts.json:
        opts.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
