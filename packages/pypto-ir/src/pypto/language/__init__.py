"""The PyPTO kernel language (``import pypto.language as pl``)."""
