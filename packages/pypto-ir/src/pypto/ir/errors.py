"""Source positions and the errors that point at them.

A mistake in a kernel is reported as ``file:line:col: error: sentence`` followed by the
source line and a caret under the column, so the message reads like a compiler's.
"""

from __future__ import annotations

import linecache
from dataclasses import dataclass

__all__ = ["CodegenError", "KernelError", "PyptoCompileError", "Span"]


@dataclass(frozen=True)
class Span:
    """A position in a Python source file (line 1-based, col 0-based as in ``ast``)."""

    file: str
    line: int
    col: int
    end_col: int | None = None

    def source_line(self) -> str:
        return linecache.getline(self.file, self.line).rstrip("\n")

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col + 1}"


class PyptoCompileError(Exception):
    """A program that cannot be compiled (a pass or a contract rejected it): the root of
    pypto-ir's compile errors. Named apart from ``simpler.toolchain.CompileError`` (the host
    C++ compiler rejected a generated source), which is a different failure."""


class CodegenError(PyptoCompileError):
    """A compile step that generates code rejected the program (e.g. an entry's return value
    that is no tensor parameter, so no code can hand it back).

    Attributes:
        files: Generated files by relative path, text as written before the failure. Always
            empty here: a compile writes no file until every step has passed.
    """

    def __init__(self, message: str, files: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.files: dict[str, str] = dict(files or {})


class KernelError(PyptoCompileError):
    """A mistake in kernel source, with its position.

    Attributes:
        message: What is wrong and how to fix it (one or two sentences).
        span: Where, or None when the node has no source position (IR built by hand).
    """

    def __init__(self, message: str, span: Span | None = None) -> None:
        self.message = message
        self.span = span
        super().__init__(self.render())

    def render(self) -> str:
        if self.span is None:
            return f"error: {self.message}"
        text = self.span.source_line()
        head = f"{self.span}: error: {self.message}"
        if not text:
            return head
        stripped = text.expandtabs()
        width = 1
        if self.span.end_col is not None and self.span.end_col > self.span.col:
            width = self.span.end_col - self.span.col
        caret = " " * self.span.col + "^" + "~" * (width - 1)
        return f"{head}\n    {stripped}\n    {caret}"
