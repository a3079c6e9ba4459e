"""SecEA's Flower stages (secea_fast.flower.secea) driven in this process:
the server's stage runner and the clients' stage handler exchange exactly
the bytes Flower carries, through a loopback in place of the transport.
Real Flower processes: tests/test_flower_local.py and the simulation
test at the end of this file."""
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("flwr", reason="the flower extra is not installed (pip install -e '.[flower]')")

from secea_fast.flower import secea as fsecea  # noqa: E402
from secea_fast.flower.admission import NodeIdentity  # noqa: E402
import _flower_loop  # noqa: E402
from secea_fast import workloads  # noqa: E402
from secea_fast.protocols import _secea_local, secea  # noqa: E402
from secea_fast.protocols.common.roster import Roster  # noqa: E402


def federation(N):
    """A roster of SecEA clients client-0 .. client-(N-1) and their identities."""
    return Roster.make([(f"client-{i}", "client") for i in range(N)])


def Loopback(local, die=None, roster=None, ids=None):
    """SecEA clients 101, 102, ... (roster parties client-0, client-1, ...)
    holding ``local[i]`` behind a loopback; ``loop.roster`` is the roster."""
    if roster is None:
        roster, ids = federation(len(local))

    def client(i, emb):
        me = NodeIdentity(roster, ids[f"client-{i}"])
        return lambda cfg, blobs, state: fsecea.handle(cfg, blobs, state, emb, me, 101 + i)
    loop = _flower_loop.Loopback({101 + i: client(i, e) for i, e in enumerate(local)}, die, catch=True)
    loop.roster = roster
    return loop


def Runner(loop, **kw):
    return fsecea.SecEAStageRunner(loop, loop.roster, **kw)


def _local(N=5, M=60, d=6, seed=0):
    rng = np.random.default_rng(seed)
    ids = [f"e{i}" for i in range(M)]
    out = []
    for n in range(N):
        own = rng.choice(M, size=rng.integers(M // 4, M // 2), replace=False)
        out.append({ids[i]: rng.uniform(-1, 1, d) for i in own})
    return out


def _same(results, expect, nodes):
    for node, want in zip(nodes, expect):
        got = results[node]
        assert set(got) == set(want)
        for key in want:
            assert np.array_equal(got[key], want[key]), key


@pytest.mark.parametrize("bps", [None, 1])
def test_stages_equal_in_process_round(bps):
    local = _local()
    loop = Loopback(local)
    runner = Runner(loop, d=6, block_size=16, blocks_per_stage=bps)
    res = runner.run(loop.nodes)
    expect = secea.aggregate(local, T=1, precision=8)
    _same(loop.results, expect, loop.nodes)
    assert res.attempts == 1 and not res.dropped and not res.failed_blocks
    assert sorted(res.done) == sorted(loop.nodes)
    nb = max(-(-len(e) // 16) for e in local)
    names = [s["stage"] for s in res.stages]
    # admission rides on the keys stage: keys, peers, then emit every block, two more steps
    # to answer and decode
    assert names[:2] == ["keys", "peers"]
    assert len(names) == 2 + (1 if bps is None else nb) + 2
    assert res.summary()["phases"]["step"]["bytes_up"] > 0


def test_one_block_round_takes_five_stages():
    local = _local(M=40)
    loop = Loopback(local)
    res = Runner(loop, d=6).run(loop.nodes)
    assert [s["stage"] for s in res.stages] == ["keys", "peers", "step", "step", "step"]
    _same(loop.results, secea.aggregate(local), loop.nodes)


def test_public_bound_takes_four_stages_admission_on_peers():
    """With a public bound k the round opens with peers (admission folded
    into it, the same envelope for every node), then three steps."""
    local = _local(M=40)
    loop = Loopback(local)
    res = Runner(loop, d=6, k=40).run(loop.nodes)
    assert [s["stage"] for s in res.stages] == ["peers", "step", "step", "step"]
    first = [cfg for d, _, cfg, _ in loop.view if d == "down" and cfg["stage"] == "peers" and cfg["attempt"] == 1]
    assert all("challenge" in c and "party" not in c and c == first[0] for c in first)
    _same(loop.results, secea.aggregate(local), loop.nodes)


def test_stage_bytes_bounds_the_queries_in_flight():
    """stage_bytes (the memory knob) shrinks the block when one block per
    client would exceed it: every step's query bytes stay within it, the
    round takes more stages, and its result is the same."""
    local = _local(M=40)
    loop = Loopback(local)
    N, M = len(local), len(set().union(*local))
    budget = N * (N - 1) * M * 8 * 5                    # five query rows per client and stage
    res = Runner(loop, d=6, stage_bytes=budget).run(loop.nodes)
    _same(loop.results, secea.aggregate(local), loop.nodes)
    steps = [s for s in res.stages if s["stage"] == "step"]
    nb = max(-(-len(e) // 5) for e in local)
    assert len(steps) == nb + 2
    # a step's upload is its padded queries (and, after step 0, responses of B x d words)
    assert all(s["bytes_up"] <= budget + N * (N * 5 * 6 * 8 + 4096) for s in steps[1:-2])
    with pytest.raises(ValueError, match="stage_bytes"):
        Runner(loop, d=6, stage_bytes=0)


def test_torch_like_rows_are_accepted():
    class FakeTensor:               # what the handler needs of a torch tensor
        def __init__(self, a):
            self.a = a

        def detach(self):
            return self

        def cpu(self):
            return self

        def numpy(self):
            return self.a
    local = _local(N=3, M=20, d=4)
    wrapped = [{k: FakeTensor(v) for k, v in e.items()} for e in local]
    loop = Loopback(wrapped)
    Runner(loop, d=4).run(loop.nodes)
    _same(loop.results, secea.aggregate(local), loop.nodes)


# a node silent in attempt 1's keys stage is a missing party (that stage carries the admission
# challenge): tests/test_flower_secea_admission.py; an admitted node lost later restarts the round
@pytest.mark.parametrize("stage,step", [("peers", None), ("step", 0)])
def test_early_loss_restarts_without_the_node(stage, step):
    local = _local(N=6, M=50)
    nodes = [101 + i for i in range(6)]
    loop = Loopback(local, die={103: (stage, step)})
    res = Runner(loop, d=6).run(nodes)
    assert res.attempts == 2 and 103 in res.dropped and res.dropped[103][1] == stage
    rest = [e for i, e in enumerate(local) if i != 2]
    expect = secea.aggregate(rest)
    _same(loop.results, expect, [x for x in nodes if x != 103])
    # a restart after the union was computed keeps it (no second union upload);
    # a loss in "peers" comes before the server summed the uploads: a new union
    uploads = [x for x in loop.log if x[1] == "peers" and x[3]]
    assert len({a for *_, a in uploads}) == (2 if stage == "peers" else 1)
    assert {a for *_, a in loop.log} == {1, 2}             # attempts 1 and 2 (no stand-alone hello)
    if stage == "step":
        assert res.union_size == len(set().union(*[set(e) for e in local]))


def test_loss_once_queries_are_answered_does_not_restart():
    """At step 1 the other clients answer queries: from there on no restart
    (the sessions' difference rule); N = 6 with the default K leaves one
    response of redundancy, so the others' blocks still decode."""
    local = _local(N=6, M=50)
    nodes = [101 + i for i in range(6)]
    loop = Loopback(local, die={103: ("step", 1)})
    res = Runner(loop, d=6).run(nodes)
    assert res.attempts == 1 and 103 in res.dropped
    expect = secea.aggregate(local)
    done = [x for x in nodes if x != 103]
    _same(loop.results, expect[:2] + expect[3:], done)


def test_late_loss_is_absorbed_by_reed_solomon():
    # N = 6, T = 1, K = 1: k = 3 responses decode, so one lost responder is absorbed
    local = _local(N=6, M=70)
    nodes = [101 + i for i in range(6)]
    loop = Loopback(local, die={104: ("step", 2)})
    res = Runner(loop, d=6, K=1, block_size=16, blocks_per_stage=1).run(nodes)
    assert res.attempts == 1 and 104 in res.dropped
    expect = secea.aggregate(local, K=1)
    done = [x for x in nodes if x != 104]
    _same(loop.results, expect[:3] + expect[4:], done)
    assert all(x == 104 for x, _ in res.failed_blocks)


def test_late_loss_beyond_the_bound_fails_blocks_without_restart():
    # default K for N = 5 leaves no redundancy: a late loss cannot be absorbed,
    # and restarting would let a querier difference two sums
    local = _local(N=5, M=80)
    nodes = [101 + i for i in range(5)]
    loop = Loopback(local, die={102: ("step", 2)})
    res = Runner(loop, d=6, block_size=16, blocks_per_stage=1).run(nodes)
    assert res.attempts == 1
    assert any(x != 102 for x, _ in res.failed_blocks)
    assert {a for *_, a in loop.log} == {1}


def test_client_state_round_trips_and_refuses_other_entities():
    local = _local(N=3, M=20, d=4)
    prm = secea.SecEAParams(N=3, d=4)
    clients, server = _secea_local.make_parties([list(e) for e in local], prm)
    _secea_local.run_union(clients, server)
    st = clients[0].export_state()
    again = secea.Client.import_state(prm, list(local[0]), st)
    assert again.export_state() == st and again.public_key == clients[0].public_key
    with pytest.raises(ValueError, match="different entity set"):
        secea.Client.import_state(prm, list(local[1]), st)
    with pytest.raises(ValueError, match="N = 3"):
        secea.Client.import_state(secea.SecEAParams(N=5, d=4), list(local[0]), st)
    with pytest.raises(ValueError):
        secea.Client.import_state(prm, list(local[0]), st[:-3])


def test_used_pads_survive_the_state():
    """The answer-once guard is part of the saved state: a query block
    answered in one process is refused in the next."""
    local = _local(N=3, M=20, d=4)
    prm = secea.SecEAParams(N=3, d=4)
    clients, server = _secea_local.make_parties([list(e) for e in local], prm)
    _secea_local.union_and_share(clients, server, local, 1, {}, {}, {})
    q = clients[0].queries(1, 0, np.arange(2))[1]
    clients[1].answer(q)
    c1 = secea.Client.import_state(prm, list(local[1]), clients[1].export_state())
    with pytest.raises(ValueError, match="already used"):
        c1.answer(q)


def test_runner_refuses_bad_arguments():
    roster, _ = federation(3)
    with pytest.raises(ValueError, match="d"):
        fsecea.SecEAStageRunner(lambda o: None, roster, d=0)
    with pytest.raises(ValueError, match="blocks_per_stage"):
        fsecea.SecEAStageRunner(lambda o: None, roster, d=4, blocks_per_stage=0)
    with pytest.raises(TypeError, match="block_size"):
        fsecea.SecEAStageRunner(lambda o: None, roster, d=4, block_size=2.5)
    with pytest.raises(TypeError, match="roster"):
        fsecea.SecEAStageRunner(lambda o: None, "roster.json", d=4)


def test_too_few_clients_left_is_a_clear_error():
    local = _local(N=3, M=20, d=4)
    loop = Loopback(local, die={101: ("peers", None)})
    with pytest.raises(RuntimeError, match="2 clients remain"):
        Runner(loop, d=4).run(loop.nodes)


def test_handler_refuses_out_of_order_stages():
    local = _local(N=3, M=20, d=4)
    roster, ids = federation(3)
    me = NodeIdentity(roster, ids["client-0"])
    cfg = {"stage": "step", "step": 0, "attempt": 1, "round": 1, "N": 3, "d": 4, "T": 1, "K": 1,
           "precision": 8, "bound": 100.0, "B": 16, "parties": ["client-0", "client-1", "client-2"]}
    with pytest.raises(ValueError, match="round -1"):
        fsecea.handle(cfg, [], None, local[0], me)
    _, _, st, _ = fsecea.handle(dict(cfg, stage="keys", party=0, salt=bytes(32)), [], None, local[0], me)
    with pytest.raises(ValueError, match="attempt"):
        fsecea.handle(dict(cfg, attempt=2), [], st, local[0], me)
    with pytest.raises(ValueError, match="after 'keys'"):
        fsecea.handle(cfg, [], st, local[0], me)


@pytest.mark.slow       # Flower's simulation runtime and Ray (40-150 s on 2 shared cores); .ci/run runs it
def test_simulation_engine_round_equals_in_process(tmp_path):
    """The demo App in Flower 1.42's simulation runtime, as the package runs
    it (LocalSimulation: a simulation SuperLink, ``flwr run``,
    ``flwr-simulation``, Ray actors for the ClientApps): every client's
    global embeddings equal secea.aggregate's."""
    import os

    from secea_fast.flower import demo
    from secea_fast.flower.localfed import LocalSimulation, example_app
    out = tmp_path / "out"
    over = {"workload": "synthetic", "entities": 120, "d": 8, "num-clients": 3,
            "out-dir": str(out), "block-size": 16, "blocks-per-stage": 2, "floor-bytes": 6 << 10,
            "roster-dir": demo.secea_roster_dir(3, tmp_path / "roster")}
    root = str(Path(__file__).resolve().parents[1])     # the App's processes import this checkout
    path = os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    with LocalSimulation(tmp_path / "simulation", env={"PYTHONPATH": path}) as sim:
        # the example App (with the floor stage) and its run config, every party a simulated node
        sim.run(example_app(), num_supernodes=3, run_config=dict(over, protocol="secea"), timeout=600)
    ok, why = demo.verify_secea(out, over)
    assert ok, why
    import json
    summary = json.loads((out / "summary.json").read_text())
    assert summary["attempts"] == 1 and len(summary["done"]) == 3
    # the synthetic workload's public bound k (its entities): no keys stage
    assert [s["stage"] for s in summary["stages"]][:2] == ["peers", "step"]
    # the nodes keep their compute seconds in their own files; the server's stages have none
    assert len(list(out.glob("seconds-*.jsonl"))) == 3
    assert not [k for st in summary["stages"] for k in st if "client" in k or "handler" in k]
    floor = json.loads((out / "floor.json").read_text())        # measured on the same nodes first
    assert floor["payload_bytes"] == 6 << 10 and floor["empty_s"] > 0
    assert {"down_s", "up_s", "down_bytes_per_s", "up_bytes_per_s"} <= set(floor)


def test_later_rounds_reuse_the_union():
    local = _local(N=3, M=30, d=4)
    loop = Loopback(local)
    first = Runner(loop, d=4).run(loop.nodes)
    moved = [{k: v + 0.5 for k, v in e.items()} for e in local]
    loop2 = Loopback(moved)
    loop2.state = loop.state
    res = Runner(loop2, d=4, round_index=2, union=first.union).run(loop2.nodes)
    assert not any(x[3] for x in loop2.log if x[1] == "peers")      # no union upload
    assert res.union_size == first.union_size
    _same(loop2.results, secea.aggregate(moved), loop2.nodes)


def test_replayed_keys_stage_is_refused_by_the_handler():
    """On the Flower path too: a keys stage replayed to a node after its
    round is refused (it used to reset the node, answer-once guard
    included), and the node's saved state is what it was."""
    local = _local(N=3, M=20, d=4)
    loop = Loopback(local)
    Runner(loop, d=4).run(loop.nodes)
    keys = [cfg for d, node, cfg, _ in loop.view if d == "down" and node == 101 and cfg["stage"] == "keys"]
    before = loop.state[101]
    # attempt 1's keys stage carries the admission challenge: the node still answers the
    # challenge (so a runner can name it), but makes no key and reports the refusal
    assert "challenge" in keys[0]
    rcfg, out, state, _ = loop.handlers[101](keys[0], [], before)
    assert "replayed keys stage is refused" in rcfg["refused"] and out == [] and state == before
    plain = {k: v for k, v in keys[0].items() if k != "challenge"}
    with pytest.raises(ValueError, match="replayed keys stage is refused"):
        loop.handlers[101](plain, [], before)
    assert loop.state[101] == before


# ----------------------------------------------------------------- SecEA-PHE through the same adapter
def test_secea_phe_stages_equal_the_in_process_round():
    """The runner and the handlers with the Paillier layer: each stage's
    session state (Paillier key pair included) goes through the bytes the
    node keeps, and the means equal secea_phe.run_round's exactly."""
    from fractions import Fraction
    from secea_fast import paillier
    from secea_fast.protocols import secea_phe
    from secea_fast.protocols.secea_phe import PaillierLayer
    local = _local(N=3, M=20, d=2)
    keys = [paillier.keygen(512, insecure=True) for _ in range(3)]
    roster, ids = federation(3)
    pks = []

    def client(i, emb):
        me = NodeIdentity(roster, ids[f"client-{i}"])

        def layer():
            lay = PaillierLayer(512, insecure_keys=True)
            pks.append(lay)
            return lay
        def stage(cfg, blobs, state):
            # the node's first session gets its key pair; later stages restore it from the state
            mk = (lambda: PaillierLayer(512, insecure_keys=True, keypair=keys[i])) if state is None else layer
            return fsecea.handle(cfg, blobs, state, emb, me, 101 + i, layer=mk)
        return stage
    loop = _flower_loop.Loopback({101 + i: client(i, e) for i, e in enumerate(local)}, None, catch=True)
    res = fsecea.SecEAStageRunner(loop, roster, d=2, layer=PaillierLayer(512, insecure_keys=True)).run(loop.nodes)
    assert res.protocol == "secea-phe" and not res.dropped and sorted(res.done) == sorted(loop.nodes)
    assert {lay.public_key for lay in pks} == {k[0] for k in keys}       # every restored layer: the node's key
    ref = secea_phe.run_round(local, key_bits=512, insecure_keys=True, keys=keys, verify=True)
    scale = ref.params.base.fx.scale
    for i, node in enumerate(loop.nodes):
        for j, key in enumerate(local[i]):
            want = [float(Fraction(int(a), int(b) * scale)) for a, b in zip(ref.numerators[i][j],
                                                                              ref.denominators[i][j])]
            assert loop.results[node][key].tolist() == want


def test_file_salt_ledger_refuses_a_salt_in_a_later_run(tmp_path):
    """The node's ledger file outlives its process: a second ledger on the
    same file (the next run's ClientApp) refuses a salt the first claimed."""
    path = tmp_path / "salts"
    fsecea.FileSaltLedger(path).claim(b"a" * 32)
    fsecea.FileSaltLedger(path).claim(b"b" * 32)
    with pytest.raises(ValueError, match="claimed before"):
        fsecea.FileSaltLedger(path).claim(b"a" * 32)
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    with pytest.raises(ValueError, match="salt ledger"):
        fsecea.FileSaltLedger(tmp_path / "no" / "dir").claim(b"c" * 32)
