"""The code generator's errors, under the name programs written for other PyPTO front ends
catch: ``PartialCodegenError`` is :class:`pypto.ir.errors.CodegenError`, raised when a compile
step that generates code rejects the program."""

from __future__ import annotations

from pypto.ir.errors import CodegenError

PartialCodegenError = CodegenError

__all__ = ["PartialCodegenError"]
