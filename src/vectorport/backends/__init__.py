"""Backend implementations, one folder each, found through the ``vectorport.backends``
entry-point group. Open stores with :func:`vectorport.connect`; a backend package describes
itself with a :class:`Backend` (see ``docs/backends.md``)."""

from .._registry import Backend, TestTarget

__all__ = ["Backend", "TestTarget"]
