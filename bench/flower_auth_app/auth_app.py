"""The benchmark App of ``bench/test_flower.py::test_secea_admission_cost``.

One run, one set of SuperNodes: a warm-up stage (the first message of a run
installs the App on every node), then SecEA rounds in the order of the run
config's ``order``: ``A`` a round as deployed (``run_secea``: roster-signed
keys checked by every party, admission folded into the first ``keys``
stage), ``N`` the same round unauthenticated (``SecEAStageRunner`` with
``roster=None``, nodes running ``handle`` with ``me=None``: no admission,
unsigned keys), each round with its own round index.  Both kinds of round
build the node's data the same way (``demo.demo_local``) at every stage.
The server writes ``<out-dir>/auth_cost.json``: one row per round."""
import json
import time
from pathlib import Path

from flwr.app import Context, Message
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp

from secea_fast.flower import demo
from secea_fast.flower import secea as fsecea
from secea_fast.flower.records import grid_exchange, load_state, pack, save_state, unpack, wait_nodes

NOAUTH = "secea_noauth"
_STATE = "bench.secea_noauth"

server_app = ServerApp()
client_app = ClientApp()


def _cfg(context):
    return {**demo.DEFAULTS, "order": "ANNA", **dict(context.run_config)}


@server_app.main()
def main(grid: Grid, context: Context) -> None:
    cfg = _cfg(context)
    nodes = wait_nodes(grid, int(cfg["num-clients"]))
    timeout = float(cfg["stage-timeout"])
    t0 = time.perf_counter()
    grid_exchange(grid, "query.warm", timeout=timeout)({x: ({"warm": 1}, []) for x in nodes})
    rows = [{"mode": "warm-up", "wall": time.perf_counter() - t0}]
    kw = dict(d=int(cfg["d"]), T=int(cfg["T"]), K=int(cfg["K"]) or None, precision=int(cfg["precision"]))
    for rnd, mode in enumerate(str(cfg["order"]), start=1):
        if mode == "A":
            res = fsecea.run_secea(grid, demo.secea_roster(cfg), nodes=nodes, round_index=rnd, timeout=timeout, **kw)
        elif mode == "N":
            runner = fsecea.SecEAStageRunner(grid_exchange(grid, f"query.{NOAUTH}", timeout=timeout), None,
                                             round_index=rnd, **kw)
            res = runner.run(nodes)
        else:
            raise ValueError(f"run config order: {mode!r} is neither A nor N")
        rows.append({"mode": "auth" if mode == "A" else "noauth", "round": rnd, "wall": res.wall,
                     "stages": len(res.stages), "attempts": res.attempts, "done": len(res.done),
                     "first_stage_wall": res.stages[0]["wall"],
                     "stage_walls": [s["wall"] for s in res.stages]})
    if cfg["out-dir"]:
        out = Path(str(cfg["out-dir"]))
        out.mkdir(parents=True, exist_ok=True)
        (out / "auth_cost.json").write_text(json.dumps(rows, indent=1))


@client_app.query("warm")
def warm(msg: Message, context: Context) -> Message:
    return Message(pack({"warm": 1}, []), reply_to=msg)


@client_app.query("secea")
def secea_stage(msg: Message, context: Context) -> Message:
    """A round with the rules: the demo's own ClientApp handler."""
    return demo.secea_client_stage(msg, context, {})


@client_app.query(NOAUTH)
def secea_noauth_stage(msg: Message, context: Context) -> Message:
    """The same round unauthenticated: no identity, unsigned keys."""
    cfg = _cfg(context)
    cfg_msg, blobs = unpack(msg.content)
    local = demo.demo_local(cfg)[demo.party_of(context)]
    reply, out, new, _ = fsecea.handle(cfg_msg, blobs, load_state(context, _STATE), local, None,
                                       int(context.node_id))
    if new is not None:
        save_state(context, _STATE, new)
    return Message(pack(reply, out), reply_to=msg)
