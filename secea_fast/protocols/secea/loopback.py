"""The in-memory transport between a SecEA :class:`ServerSession` and its
:class:`ClientSession` s, and fault injection as a wrapper around it.

:class:`Loopback` hands each envelope of the server's outbox to the
client session it is addressed to, counts bytes, and turns a refused
envelope (a :class:`ProtocolError`) into a failure of
that client, as Flower turns a ClientApp exception into an error reply.
:class:`FaultyLoopback` wraps any transport: it alters envelopes on their
way down (a lost or corrupted response, a delayed, replayed or reordered
stage) without the protocol knowing it is tested.  :func:`drive` runs a
server session to its end over a transport.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field as dc_field
from typing import Any

import numpy as np

from .layer import kind_of as _secea_kind
from .messages import Message
from .session import ClientSession, ProtocolError, RoundFailed, ServerResult, ServerSession

__all__ = ["Loopback", "FaultyLoopback", "drive", "drive_checked", "Transport", "StageLog"]

Envelope = tuple[dict[str, Any], list[bytes]]
# a transport: outbox (name -> envelope) -> (replies, failures)
Transport = Callable[[Mapping[str, Envelope]], tuple[dict[str, Envelope], dict[str, str]]]


@dataclass
class StageLog:
    """What one stage moved: its name, bytes down and up, wall seconds,
    and bytes by message kind (both directions; ``kind_of`` reads a blob's
    kind from its header, :meth:`Layer.kind_of`)."""
    stage: str
    bytes_down: int = 0
    bytes_up: int = 0
    wall: float = 0.0
    kinds: dict = dc_field(default_factory=dict)
    kind_of: Callable[[bytes], str] = _secea_kind

    def count(self, blobs: Iterable[bytes]) -> int:
        n = 0
        for b in blobs:
            kind = self.kind_of(b)
            self.kinds[kind] = self.kinds.get(kind, 0) + len(b)
            n += len(b)
        return n


@dataclass
class Loopback:
    """``clients``: roster name -> :class:`ClientSession`.  Calling it with
    an outbox delivers every envelope and returns (replies, failures).
    ``kind_of``: a blob's kind for :attr:`stages` (the sessions' layer's
    :meth:`~secea_fast.protocols.secea.layer.Layer.kind_of`)."""
    clients: dict[str, ClientSession]
    stages: list[StageLog] = dc_field(default_factory=list)
    refusals: list[tuple[str, str, str]] = dc_field(default_factory=list)   # (client, stage, error)
    kind_of: Callable[[bytes], str] = _secea_kind

    def __call__(self, outbox: Mapping[str, Envelope]) -> tuple[dict[str, Envelope], dict[str, str]]:
        replies: dict[str, Envelope] = {}
        failed: dict[str, str] = {}
        log = StageLog(str(next(iter(outbox.values()))[0].get("stage")) if outbox else "", kind_of=self.kind_of)
        t0 = time.perf_counter()
        for name, (cfg, blobs) in outbox.items():
            log.bytes_down += log.count(blobs)
            try:
                rcfg, out = self.clients[name].receive(cfg, blobs)
            except ProtocolError as exc:
                # a refusal: on Flower, an error reply (a client's own bad
                # input is not one: it propagates to the caller)
                failed[name] = f"error reply: {exc}"
                self.refusals.append((name, str(cfg.get("stage")), str(exc)))
                continue
            log.bytes_up += log.count(out)
            replies[name] = (rcfg, out)
        log.wall = time.perf_counter() - t0
        self.stages.append(log)
        return replies, failed


def _response_pairs(pairs, parties) -> dict[tuple[str, int], set[int]]:
    # (querier index, responder index) -> the querier's name and responder
    out: dict[tuple[str, int], set[int]] = {}
    for n, v in pairs:
        out.setdefault((parties[n], n), set()).add(v)
    return out


class FaultyLoopback:
    """Faults injected around ``inner`` (a transport, e.g. :class:`Loopback`),
    on the envelopes the server sends:

    * ``drop`` / ``corrupt``: (querier, responder) index pairs whose
      noised responses are lost / altered (+1 mod p) on the way to the
      querier (the Reed-Solomon path);
    * ``tamper(name, cfg, blobs) -> (cfg, blobs)``: any other change
      (replay, reorder, key substitution: the attack tests' adversary);
    * ``delay``: names whose envelopes of the named stage are held back
      (the client times out) and delivered with its next stage;
    * ``replay``: (name, stage) pairs: the envelope of that stage is
      delivered again after its reply (the reply to the replay is returned
      in :attr:`replayed`).

    ``parties``: index -> name of the attempt (for drop / corrupt)."""

    def __init__(self, inner: Transport, *, parties: list[str] | None = None,
                 drop: Iterable[tuple[int, int]] = (), corrupt: Iterable[tuple[int, int]] = (),
                 p: int | None = None,
                 tamper: Callable[[str, dict[str, Any], list[bytes]], Envelope] | None = None,
                 delay: Mapping[str, str] | None = None, replay: Iterable[tuple[str, str]] = ()) -> None:
        self.inner, self.parties = inner, parties or []
        self.drop = _response_pairs(drop, self.parties)
        self.corrupt = _response_pairs(corrupt, self.parties)
        self.p, self.tamper = p, tamper
        self.delay = dict(delay or {})
        self.held: dict[str, Envelope] = {}
        self.replay = set(replay)
        self.replayed: list[tuple[str, str, Any]] = []      # (name, stage, reply or the refusal)

    def _responses(self, name, blobs):
        if not self.drop and not self.corrupt:
            return blobs
        n = self.parties.index(name) if name in self.parties else -1
        drop, corrupt = self.drop.get((name, n), set()), self.corrupt.get((name, n), set())
        out = []
        for b in blobs:
            if (drop or corrupt) and b[:4] == b"SEEA":
                m = Message.from_bytes(b)
                if m.kind == "response" and m.sender in drop:
                    continue
                if m.kind == "response" and m.sender in corrupt:
                    assert self.p is not None, "corrupt needs p"
                    data = (m.data + np.uint64(1)) % np.uint64(self.p)
                    b = Message(m.kind, m.sender, m.receiver, m.round, m.block, data).to_bytes()
            out.append(b)
        return out

    def __call__(self, outbox: Mapping[str, Envelope]) -> tuple[dict[str, Envelope], dict[str, str]]:
        sent: dict[str, Envelope] = {}
        failed: dict[str, str] = {}
        for name, (cfg, blobs) in outbox.items():
            cfg, blobs = dict(cfg), list(blobs)
            blobs = self._responses(name, blobs)
            if self.tamper is not None:
                cfg, blobs = self.tamper(name, cfg, blobs)
            if self.delay.get(name) == cfg.get("stage") and name not in self.held:
                self.held[name] = (cfg, blobs)
                failed[name] = "no reply within the timeout (delayed)"
                continue
            sent[name] = (cfg, blobs)
        replies, inner_failed = self.inner(sent)
        failed.update(inner_failed)
        late = {x: env for x, env in self.held.items() if x in outbox and x not in sent}
        if late:
            # the held envelope arrives now, out of order (its reply is lost)
            self.inner(late)
        for name, (cfg, blobs) in sent.items():
            if (name, cfg.get("stage")) in self.replay:
                self.replay.discard((name, str(cfg.get("stage"))))
                r, f = self.inner({name: (cfg, blobs)})
                self.replayed.append((name, str(cfg.get("stage")), r.get(name) or f.get(name)))
        return replies, failed


def drive(server: ServerSession, transport: Transport) -> ServerResult:
    """Run ``server`` to the end of its round over ``transport``."""
    outbox = server.start()
    while outbox:
        replies, failed = transport(outbox)
        outbox = server.receive(replies, failed)
    return server.result


def drive_checked(server: ServerSession, transport: Transport, sessions: Iterable[ClientSession],
                  label: str) -> tuple[ServerResult, dict[str, float], float]:
    """Run ``server`` to the end of its round over ``transport`` (a round
    without a network, every client in this process) and check it ended
    whole: the first block a client could not decode is raised (its
    DecodingError names why), and a dropped client is a
    :class:`RoundFailed` (``label`` names the protocol).  Returns the
    server's result, its CPU seconds in the union stages and in the steps
    (``{"union": .., "noise": ..}``), and the round's wall seconds."""
    w0 = time.perf_counter()
    srv = {"union": 0.0, "noise": 0.0}
    outbox = server.start()
    while outbox:
        stage = next(iter(outbox.values()))[0]["stage"]
        replies, failed = transport(outbox)
        t0 = time.process_time()
        outbox = server.receive(replies, failed)
        srv["noise" if stage == "step" else "union"] += time.process_time() - t0
    wall = time.perf_counter() - w0
    for c in sessions:
        for _, exc in sorted(c.errors.items()):
            raise exc
    res = server.result
    if res.dropped:
        raise RoundFailed(f"{label}: client(s) dropped in a round without a network: "
                          + "; ".join(f"{x}: {why}" for x, (_, _, why) in sorted(res.dropped.items())))
    return res, srv, wall
