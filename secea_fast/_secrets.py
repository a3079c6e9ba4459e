"""One rule for every object that holds a secret (a private key, a seed, a
share, a DPF path secret): it is never pickled, copied into a message or
written anywhere but its owner's own state.

:class:`SecretHolder` is the mixin that states it: pickling a subclass
raises TypeError naming the class.  Every subclass is recorded in
:data:`REGISTRY`, so a test can find each class holding a secret and check
that the rule holds for it (as the wire-fuzz test finds every parser).
"""
from __future__ import annotations

__all__ = ["SecretHolder", "REGISTRY"]

REGISTRY: list[type] = []


class SecretHolder:
    """Mixin of classes holding a secret: not picklable (``__reduce_ex__``
    raises TypeError).  A subclass that a worker pool may ship to its own
    processes overrides ``__reduce_ex__`` through the executor's transfer
    rule, which says what crosses."""

    __slots__ = ()

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        REGISTRY.append(cls)

    def __reduce_ex__(self, protocol):
        raise TypeError(f"{type(self).__name__} holds a secret and is not picklable")

    def __copy__(self):
        raise TypeError(f"{type(self).__name__} holds a secret and is not copied")

    def __deepcopy__(self, memo):
        raise TypeError(f"{type(self).__name__} holds a secret and is not copied")
