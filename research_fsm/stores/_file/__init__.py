"""The JSON-lines file store: ``JsonFileCheckpointStore`` (``store``) over small parts.

``fs`` (every system call; a store takes ``fs=``, tests replace its methods to inject
faults), ``leases`` (one thread's lease: a byte-range lock, or a ``flock`` per
thread), ``segments`` (a thread's segment files and its segment list), ``heads``
(the open newest segment of each thread), ``append`` (a line written after the last
one), ``groupcommit`` and ``batch`` (saves sharing one sync; ``wakeup`` brings the
results back to the event loop) and ``secretfile`` (the token-signing key). Lines
are encoded by the stores' codec (``research_fsm.stores._logformat``).
"""

from .store import JsonFileCheckpointStore

__all__ = ["JsonFileCheckpointStore"]
