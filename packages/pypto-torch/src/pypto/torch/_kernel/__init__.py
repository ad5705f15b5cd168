"""Kernel mode: the process's borrowed-context Worker and what runs PyPTO kernels on it.

Grouped by ownership:

- :mod:`~pypto.torch._kernel.session`: the configuration, the runtime capability checks and
  the borrowed-Worker session (lifecycle operations on a public ``simpler.Worker``).
- :mod:`~pypto.torch._kernel.owner`: the lifecycle owner thread.
- :mod:`~pypto.torch._kernel.context`: process state (one manager per process), registration
  reuse, pending-ticket cleanup, fork and exit handling.
- :mod:`~pypto.torch._kernel.callable`: artifact identity and context-bound registrations.
- :mod:`~pypto.torch._kernel.pending`: per-call tickets (run publication, resource retention).
- :mod:`~pypto.torch._kernel.ordering`: synchronisation points (stream, event, device).

Importing this package imports neither simpler nor torch_npu; ``init`` imports simpler.
"""
