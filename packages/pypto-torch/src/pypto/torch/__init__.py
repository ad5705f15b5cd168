"""PyTorch interop for PyPTO.

Importing this package never imports torch_npu, simpler or a native launch extension.
"""

__version__ = "0.1.0"
