"""Protocol messages on Flower's transport.

A stage sends each node one Flower ``Message`` whose ``RecordDict`` holds

* ``"cfg"``: a ``ConfigRecord`` of small public values (stage name, attempt,
  block lists, timings), and
* ``"msgs"``: an ``ArrayRecord`` of the protocol's own versioned byte
  messages, each a raw ``uint8`` ``Array`` named ``"0"``, ``"1"``, ... (no
  pickle and no ``np.save`` round trip: the bytes travel as they are, in
  Flower's chunks, and are parsed by the protocol's validating parsers).

:func:`exchange` is one stage: push every node's message, then pull the
replies every ``poll`` seconds until all arrived, a node failed, or the
stage timed out.  ``Grid.send_and_receive`` would do the same with a 3 s
pull interval; the short interval takes up to 3 s off every stage.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from flwr.app import Array, ArrayRecord, ConfigRecord, Context, Message, RecordDict
from flwr.serverapp import Grid

__all__ = ["pack", "unpack", "exchange", "grid_exchange", "StageResult", "BYTES_STYPE", "wait_nodes", "log"]

BYTES_STYPE = "secea_fast.bytes"      # Array.stype of an opaque protocol message

# progress and warnings go through Flower's own logger (a child of "flwr"), so
# they appear in the ServerApp's and ClientApps' logs (`flwr run --stream`, `flwr log`)
log = logging.getLogger("flwr").getChild("secea_fast")

# a stage's messages: node id -> (cfg, blobs)
Outbox = dict[int, tuple[dict[str, Any], Iterable[bytes]]]


def pack(cfg: dict[str, Any], blobs: Iterable[bytes] = ()) -> RecordDict:
    """A ``RecordDict`` carrying ``cfg`` (ConfigRecord values: int, float,
    str, bytes, bool and lists of them) and the byte strings ``blobs``."""
    arrays = ArrayRecord()
    for i, b in enumerate(blobs):
        if not isinstance(b, (bytes, bytearray)):
            raise TypeError(f"blobs[{i}] must be bytes, got {type(b).__name__}")
        arrays[str(i)] = Array("uint8", (len(b),), BYTES_STYPE, bytes(b))
    return RecordDict({"cfg": ConfigRecord(dict(cfg)), "msgs": arrays})


def unpack(content: RecordDict) -> tuple[dict, list]:
    """(cfg, blobs) of a ``RecordDict`` made by :func:`pack`; anything else
    is a ValueError."""
    if "cfg" not in content or "msgs" not in content:
        raise ValueError("not a secea_fast message: it needs the records 'cfg' and 'msgs'")
    cfg = dict(content["cfg"])
    arrays = content["msgs"]
    if not isinstance(arrays, ArrayRecord):
        raise ValueError("not a secea_fast message: its record 'msgs' is not an ArrayRecord")
    blobs = []
    for i in range(len(arrays)):
        a = arrays.get(str(i))
        if not isinstance(a, Array) or a.stype != BYTES_STYPE or a.dtype != "uint8":
            raise ValueError(f"message part {i} is missing or not opaque bytes")
        blobs.append(a.data)
    return cfg, blobs


@dataclass
class StageResult:
    """One stage's replies by node id, the nodes that failed (error reply or
    no reply before the timeout) with the reason, the bytes sent down and
    up (protocol parts only), the stage's wall seconds and the seconds of
    the server's own work done while the nodes computed."""
    replies: dict = field(default_factory=dict)
    failed: dict = field(default_factory=dict)
    bytes_down: int = 0
    bytes_up: int = 0
    wall: float = 0.0
    work: float = 0.0


# what grid_exchange returns: run(outbox, work=None)
Exchange = Callable[..., StageResult]


def exchange(grid: Grid, outbox: Outbox, message_type: str, *, timeout: float, poll: float = 0.05,
             group_id: str = "", work: Callable[[], object] | None = None) -> StageResult:
    """Send ``outbox[node_id] = (cfg, blobs)`` to every node and collect the
    replies as ``(cfg, blobs)``.  A node whose reply is a Flower error (a
    ClientApp exception, or the SuperLink reporting the node lost) or that
    has not replied after ``timeout`` seconds is in ``failed``.  ``work``:
    a callable run once the messages are pushed, while the nodes compute
    (the server's own share of the stage); its seconds are in
    ``StageResult.work``."""
    t0 = time.perf_counter()
    res = StageResult()
    msgs = []
    for dst, (cfg, blobs) in outbox.items():
        res.bytes_down += sum(len(b) for b in blobs)
        msgs.append(Message(content=pack(cfg, blobs), dst_node_id=int(dst),
                            message_type=message_type, group_id=group_id,
                            ttl=max(timeout, 1.0) + 60.0))
    ids = list(grid.push_messages(msgs))
    if work is not None:
        w0 = time.perf_counter()
        work()
        res.work = time.perf_counter() - w0
    pending: dict[str, int] = {}      # message id -> its destination node
    for mid, m in zip(ids, msgs):
        if mid is None:
            res.failed[m.metadata.dst_node_id] = "the SuperLink refused the message"
        else:
            pending[mid] = m.metadata.dst_node_id
    deadline = t0 + timeout
    while pending:
        for rep in grid.pull_messages(list(pending)):
            node = pending.pop(rep.metadata.reply_to_message_id, None)
            if node is None:
                continue
            if rep.has_error():
                res.failed[node] = f"error reply: {rep.error.reason}"
                continue
            try:
                cfg, blobs = unpack(rep.content)
            except ValueError as exc:
                res.failed[node] = f"malformed reply: {exc}"
                continue
            res.bytes_up += sum(len(b) for b in blobs)
            res.replies[node] = (cfg, blobs)
        if not pending:
            break
        if time.perf_counter() > deadline:
            for node in pending.values():
                res.failed[node] = f"no reply within {timeout:g} s"
            break
        time.sleep(poll)
    res.wall = time.perf_counter() - t0
    return res


def grid_exchange(grid: Grid, message_type: str, *, timeout: float = 300.0, poll: float = 0.05) -> Exchange:
    """``exchange(outbox, work=None)`` over a Flower ``Grid``: what the
    protocols' stage runners call for one stage."""
    def run(outbox: Outbox, work: Callable[[], object] | None = None) -> StageResult:
        return exchange(grid, outbox, message_type, timeout=timeout, poll=poll, work=work)
    return run


def wait_nodes(grid: Grid, need: int, wait: float = 120.0) -> list[int]:
    """The ids of the SuperNodes connected to ``grid`` once at least
    ``need`` are (checked every 0.5 s); RuntimeError after ``wait`` seconds."""
    deadline = time.time() + wait
    while True:
        nodes = sorted(grid.get_node_ids())
        if len(nodes) >= need:
            return nodes
        if time.time() > deadline:
            raise RuntimeError(f"only {len(nodes)} SuperNodes connected after {wait:g} s, need {need}")
        time.sleep(0.5)
