"""PyPTO compiler: IR, passes, C++ code generation and compiled metadata."""

__version__ = "0.1.0"
