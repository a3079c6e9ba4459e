"""One rule for every object that holds a secret (a private key, a seed, a
PRG state, a share, a DPF path secret, a party's private input): it is never
pickled, copied, put into a message or written anywhere but its owner's own
state (the versioned ``export_state`` / ``export_secret`` bytes a party
keeps on its own host).

:class:`SecretHolder` is the mixin that states it: ``pickle``, ``copy.copy``
and ``copy.deepcopy`` of a subclass raise TypeError naming the class.  Every
subclass is recorded in :data:`REGISTRY`, so a test can find each class
holding a secret and check that the rule holds for it (as the wire-fuzz test
finds every parser).

The one exception is an executor moving the parties of a simulated round to
its own workers (``secea_fast.executor``).  Inside :func:`transfer` (the
executor serialising its state) a class pickles only the attributes
:data:`TRANSFER` declares for it, here and nowhere else; its other
attributes are None in the worker's copy, and a class without an entry is
refused there too.  What crosses, and why:

* ``secea.Client``: its index, parameters, entities, union, aggregated
  shares y_v, pad guard and the pairwise / self / query seeds already
  derived (the workers compute queries and answers from them).  Not its
  X25519 private key (the seeds are derived; a worker never agrees a new
  one) nor the packed response operand (rebuilt in the worker).
* ``secea.Server``: everything it holds (the noise seed, the union and its
  psi cache): the workers noise the responses.
* ``secea_phe.Client``: what ``secea.Client`` sends, its Paillier public
  key and its peers' public keys.  Not its Paillier private key: a worker
  copy cannot decrypt, and the SecEA-PHE round decrypts in the calling
  process (``secea_phe.run_round``).
* ``secea_phe.Server``: ``secea.Server``'s, the peers' Paillier public keys
  and the offline noise prepared so far.

Everything else (private keys, ``Prg`` streams, DPF path secrets, Paillier
private keys, roster identities, SecEmb and OSFL parties) crosses nowhere.
A forked worker of the local pool serialises nothing: it is the calling
process's own image for the duration of one call.
"""
from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["SecretHolder", "REGISTRY", "TRANSFER", "transfer", "transfer_allowed"]

REGISTRY: list[type] = []

_SECEA_CLIENT = ("params", "index", "ids", "hashes", "_seeds", "_self_seed", "_query_seed", "union",
                 "positions", "_y", "_y_round", "_used", "threads", "product_seconds")
_SECEA_SERVER = ("params", "_noise_seed", "union", "_psi")

#: class (``module.qualname``) -> the attributes that cross to an executor's
#: own workers inside :func:`transfer`; a class not listed sends nothing.
TRANSFER: dict[str, tuple[str, ...]] = {
    "secea_fast.protocols.secea.parties.Client": _SECEA_CLIENT,
    "secea_fast.protocols.secea.parties.Server": _SECEA_SERVER,
    "secea_fast.protocols.secea_phe.parties.Client":
        _SECEA_CLIENT + ("phe", "_pk", "_peer_pks", "encrypt_seconds", "decrypt_seconds", "ciphertexts"),
    "secea_fast.protocols.secea_phe.parties.Server":
        _SECEA_SERVER + ("phe", "_pks", "_prepared", "encrypt_seconds"),
}

_STATE = threading.local()


@contextmanager
def transfer() -> Iterator[None]:
    """Inside this block (an executor serialising its state for its own
    workers) a secret holder pickles the attributes :data:`TRANSFER`
    declares for its class, and nothing else."""
    prev = getattr(_STATE, "allowed", False)
    _STATE.allowed = True
    try:
        yield
    finally:
        _STATE.allowed = prev


def transfer_allowed() -> bool:
    """Whether this thread is inside :func:`transfer`."""
    return bool(getattr(_STATE, "allowed", False))


def _key(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _rebuild(cls, state):
    obj = cls.__new__(cls)
    obj.__dict__.update(state)
    return obj


class SecretHolder:
    """Mixin of classes holding a secret: ``pickle``, ``copy.copy`` and
    ``copy.deepcopy`` raise TypeError, except that inside :func:`transfer`
    the attributes :data:`TRANSFER` declares for the class are pickled (the
    others are None in the copy)."""

    __slots__ = ()

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        REGISTRY.append(cls)

    def __reduce_ex__(self, protocol):
        name = type(self).__name__
        if not transfer_allowed():
            raise TypeError(f"{name} holds a secret and is not picklable "
                            "(only an Executor moves declared attributes to its own workers)")
        keep = TRANSFER.get(_key(type(self)))
        if keep is None:
            raise TypeError(f"{name} holds a secret and declares nothing that crosses to an "
                            "executor's workers (secea_fast._secrets.TRANSFER)")
        attrs = getattr(self, "__dict__", {})
        missing = [a for a in keep if a not in attrs]
        if missing:
            raise TypeError(f"{name}: declared transfer attributes {missing} do not exist")
        state = {a: None for a in attrs}
        state.update((a, attrs[a]) for a in keep)
        return (_rebuild, (type(self), state))

    def __reduce__(self):
        return self.__reduce_ex__(2)

    def __copy__(self):
        raise TypeError(f"{type(self).__name__} holds a secret and is not copied")

    def __deepcopy__(self, memo):
        raise TypeError(f"{type(self).__name__} holds a secret and is not copied")
