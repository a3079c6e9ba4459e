"""The in-process wiring of SecEA's parties that the SecEA and SecEA-PHE
rounds (executor path) and the tests share, and users never call: the
parties of one round with their keys exchanged, the private entity union
(Sec. 4.1) among them, and the union then the sharing timed into the
caller's phase dicts.  Private to ``protocols``; the public round is
``secea.run_round``."""
from __future__ import annotations

import time
from collections.abc import Iterable, Sequence

import numpy as np

from ._inputs import EntityId, Local
from .secea.messages import Message
from .secea.params import SecEAParams
from .secea.parties import Client, Server


def make_parties(sets: Sequence[Iterable[EntityId]], params: SecEAParams) -> tuple[list[Client], Server]:
    """Clients holding ``sets[n]`` (entity ids) and the server, public keys
    exchanged: the parties of one round before any message."""
    clients = [Client(i, params, s) for i, s in enumerate(sets)]
    keys = [c.public_key for c in clients]
    for c in clients:
        c.set_peer_keys(keys)
    return clients, Server(params)


def run_union(clients: Sequence[Client], server: Server, rnd: int = 0) -> Message:
    """The private entity union among ``clients`` (Sec. 4.1); returns the
    server's broadcast sum."""
    k = max(len(c.ids) for c in clients)
    total = server.psu_sum([c.psu_upload(k, rnd) for c in clients])
    for c in clients:
        c.psu_finish(total)
    return total


def union_and_share(clients: Sequence[Client], server: Server, local: Local, rnd: int, secs: dict[str, float],
                    wall: dict[str, float], nbytes: dict[str, int], w0: float | None = None, *,
                    union: np.ndarray | None = None) -> int:
    """The one-time entity union then the round's sharing, for all parties,
    timed into ``secs`` / ``wall`` / ``nbytes`` (phases "union", "encode").
    ``union``: a union an earlier round revealed (sorted uint64 hashes):
    every client takes it and the private union is not rerun.  Returns M,
    the size of the union."""
    N = len(clients)
    w0 = time.perf_counter() if w0 is None else w0
    if union is not None:
        t0 = time.process_time()
        for c in clients:
            c.set_union(union)
        secs["union"], wall["union"], nbytes["union"] = time.process_time() - t0, time.perf_counter() - w0, 0
        return _share_all(clients, local, rnd, secs, wall, nbytes)
    k = max(len(c.ids) for c in clients)
    t_cli = 0.0
    ups = []
    for c in clients:
        t0 = time.process_time()
        ups.append(c.psu_upload(k, rnd))
        t_cli += time.process_time() - t0
    t0 = time.process_time()
    total = server.psu_sum(ups)
    t_srv = time.process_time() - t0
    for c in clients:
        t0 = time.process_time()
        c.psu_finish(total)
        t_cli += time.process_time() - t0
    # CPU time spent here: psu_finish is a pure function of the public sum,
    # evaluated once and memoised, so the clients after the first reuse it
    # (in a deployment each client repeats the server's reconstruction)
    secs["union"] = t_cli + t_srv
    wall["union"] = time.perf_counter() - w0
    nbytes["union"] = sum(u.nbytes for u in ups) + N * total.nbytes
    return _share_all(clients, local, rnd, secs, wall, nbytes)


def _share_all(clients, local, rnd, secs, wall, nbytes):
    N = len(clients)
    w0 = time.perf_counter()
    t_enc = 0.0
    outbox = []
    for n, c in enumerate(clients):
        t0 = time.process_time()
        outbox.append(c.share(local[n], rnd))
        t_enc += time.process_time() - t0
    nbytes["encode"] = sum(2 * m.nbytes for msgs in outbox for m in msgs if m.sender != m.receiver)
    for v, c in enumerate(clients):
        t0 = time.process_time()
        c.receive_shares([outbox[n][v] for n in range(N)])
        t_enc += time.process_time() - t0
    secs["encode"], wall["encode"] = t_enc, time.perf_counter() - w0
    return clients[0].M
