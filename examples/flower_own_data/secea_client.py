"""The ClientApp of the own-data example: one SecEA client per SuperNode,
aggregating the embeddings in the node's own file.

Node config (``flower-supernode --node-config "..."``), all paths on the
node's host:

* ``embeddings-file``: this client's entity embeddings, either an ``.npz``
  with ``ids`` (N strings) and ``rows`` (N x d floats), or a ``.csv`` with
  one line ``entity_id,v1,...,vd`` per entity (no header);
* ``result-file``: where the global embeddings of its entities (eq. 5 of
  SecEA) are written after the round, as an ``.npz`` like the input;
* ``roster-file`` / ``identity-file``: the federation's roster and this
  node's own identity (``secea-fast flower roster``; the party name
  ``client-<i>``).
"""
from __future__ import annotations

import csv
import os
from pathlib import Path

import numpy as np
from flwr.app import Context, Message
from flwr.clientapp import ClientApp

from secea_fast.flower import secea as secea_flower

app = ClientApp()

MAX_ROWS = 10_000_000


def load_embeddings(path: str | os.PathLike, d: int) -> dict[str, np.ndarray]:
    """entity id -> row of ``d`` floats from an ``.npz`` (``ids``, ``rows``)
    or ``.csv`` (``id,v1,...,vd``); ValueError naming the file (and line)."""
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"embeddings-file {p}: not a regular file")
    if p.suffix == ".npz":
        try:
            with np.load(p, allow_pickle=False) as z:
                ids, rows = z["ids"], z["rows"]
        except (KeyError, ValueError, OSError) as exc:
            raise ValueError(f"embeddings-file {p}: expected arrays 'ids' and 'rows' ({exc})") from None
        if rows.ndim != 2 or ids.shape != (rows.shape[0],):
            raise ValueError(f"embeddings-file {p}: 'ids' must have one entry per row of 'rows'")
        out = {str(k): np.asarray(rows[i], dtype=np.float64) for i, k in enumerate(ids)}
        if len(out) != len(ids):
            raise ValueError(f"embeddings-file {p}: an entity id appears twice")
    elif p.suffix == ".csv":
        out = {}
        with open(p, newline="") as f:
            for line_no, rec in enumerate(csv.reader(f), start=1):
                if line_no > MAX_ROWS:
                    raise ValueError(f"embeddings-file {p}: more than {MAX_ROWS} lines")
                if not rec:
                    continue
                try:
                    row = np.array([float(x) for x in rec[1:]])
                except ValueError:
                    raise ValueError(f"embeddings-file {p}, line {line_no}: a value is not a number") from None
                if rec[0] in out:
                    raise ValueError(f"embeddings-file {p}, line {line_no}: entity {rec[0][:40]!r} appears twice")
                if len(row) != d:
                    raise ValueError(f"embeddings-file {p}, line {line_no}: {len(row)} values, run config d = {d}")
                out[rec[0]] = row
    else:
        raise ValueError(f"embeddings-file {p}: expected a .npz or .csv file")
    if not out:
        raise ValueError(f"embeddings-file {p}: no entity")
    for k, row in out.items():
        if row.shape != (d,) or not np.all(np.isfinite(row)):
            raise ValueError(f"embeddings-file {p}: entity {k[:40]!r} is not {d} finite values")
    return out


def save_embeddings(path: str | os.PathLike, embeddings: dict) -> None:
    """The global embeddings as an ``.npz`` with ``ids`` and ``rows``."""
    ids = sorted(embeddings)
    tmp = f"{path}.tmp.npz"
    np.savez(tmp, ids=np.array(ids, dtype=str), rows=np.array([embeddings[k] for k in ids], dtype=np.float64))
    os.replace(tmp, path)


@app.query("secea")
def secea_stage(msg: Message, context: Context) -> Message:
    nc = context.node_config
    for key in ("embeddings-file", "result-file"):
        if key not in nc:
            raise ValueError(f"node config: {key!r} is missing (see secea_client.py)")
    local = load_embeddings(str(nc["embeddings-file"]), int(context.run_config["d"]))

    def keep(ctx: Context, global_rows: dict) -> None:
        save_embeddings(str(nc["result-file"]), global_rows)

    return secea_flower.handle_message(msg, context, local, on_result=keep)
