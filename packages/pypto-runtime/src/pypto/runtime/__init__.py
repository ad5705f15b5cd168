"""PyPTO runtime: compiled products, the artifact store, program mode and the mode gate."""

__version__ = "0.1.0"
