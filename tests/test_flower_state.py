"""A ClientApp's state between stages (secea_fast.flower.state.load_state
and save_state) when Flower hands a ClientApp a stale context.

Flower 1.42 pushes a ClientApp's reply before its context, so the next
stage can start with the context of the stage before (seen in a
MovieLens-1M-shape rehearsal on a loaded host: "SecEA step 7 after 'step'
5: refused").  These tests replay exactly that on real Flower ``Context``
objects around SecEA's real client stage handler: with the sealed journal
the round is bit-exact; with the journal off (the weakened control: the
context alone, as before) the same race drops the client."""
import copy
import os
import stat

import numpy as np
import pytest

pytest.importorskip("flwr", reason="the flower extra is not installed (pip install -e '.[flower]')")

from flwr.app import Context, RecordDict  # noqa: E402

from secea_fast.flower import secea as fsecea  # noqa: E402
from secea_fast.flower.admission import NodeIdentity  # noqa: E402
from secea_fast.flower.state import load_state, save_state  # noqa: E402
import _flower_loop  # noqa: E402
from secea_fast.protocols import secea  # noqa: E402
from secea_fast.protocols.common.roster import Roster  # noqa: E402


def _context(node, state_dir, run=7):
    return Context(run_id=run, node_id=node, node_config={"state-dir": str(state_dir)}, state=RecordDict(),
                   run_config={})


def _identities(n=2):
    roster, ids = Roster.make([(f"client-{i}", "client") for i in range(n)])
    return roster, [NodeIdentity(roster, ids[f"client-{i}"]) for i in range(n)]


def test_newer_copy_wins_and_journal_is_private(tmp_path):
    _, (me, _) = _identities()
    ctx = _context(101, tmp_path)
    assert load_state(ctx, "k", me) is None
    save_state(ctx, "k", b"one", me)
    stale = copy.deepcopy(ctx)                  # what Flower may hand the next ClientApp
    save_state(ctx, "k", b"two", me)
    assert load_state(stale, "k", me) == b"two"         # the journal is newer than the stale context
    assert load_state(stale, "k") == b"one"             # the control: the context alone is stale
    save_state(stale, "k", b"three", me)                # versions keep rising from the newest copy
    assert load_state(ctx, "k", me) == b"three"
    files = list(tmp_path.iterdir())
    assert len(files) == 1 and stat.S_IMODE(files[0].stat().st_mode) == 0o600
    assert b"three" not in files[0].read_bytes()        # sealed, not in the clear
    assert stat.S_IMODE(tmp_path.stat().st_mode) in (0o700, 0o755)   # tmp_path is pytest's own


def test_journal_refuses_another_node_and_tampering(tmp_path):
    _, (me, other) = _identities()
    ctx = _context(101, tmp_path)
    save_state(ctx, "k", b"secret state", me)
    with pytest.raises(ValueError, match=r"state journal .*\.state: does not authenticate"):
        load_state(_context(101, tmp_path), "k", other)
    (path,) = tmp_path.iterdir()
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 1
    path.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match=str(path)):
        load_state(_context(101, tmp_path), "k", me)
    path.write_bytes(bytes(raw[:10]))
    with pytest.raises(ValueError, match="truncated"):
        load_state(_context(101, tmp_path), "k", me)


def test_state_dir_that_cannot_be_made_is_named(tmp_path):
    _, (me, _) = _identities()
    block = tmp_path / "file"
    block.write_text("")
    ctx = _context(101, block / "sub")
    with pytest.raises(ValueError, match="node config 'state-dir'"):
        save_state(ctx, "k", b"x", me)


def _local(N=4, M=40, d=4, seed=3):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(N):
        own = rng.choice(M, size=rng.integers(M // 4, M // 2), replace=False)
        out.append({f"e{i}": rng.uniform(-1, 1, d) for i in own})
    return out


def _race_round(tmp_path, journal, stale=(103, "step", 1)):
    """One SecEA round whose client handlers keep their session in real Flower
    contexts; at ``stale`` = (node, stage, step) that node's ClientApp gets
    the context as it was before the previous stage's save."""
    local = _local()
    roster, ids = Roster.make([(f"client-{i}", "client") for i in range(len(local))])

    def client(i, emb):
        node = 101 + i
        me = NodeIdentity(roster, ids[f"client-{i}"])
        stored = {"ctx": _context(node, tmp_path)}       # the SuperNode's copy
        before = {"ctx": None}                           # the copy before the last stage's save

        def handler(cfg, blobs, _state):
            ctx = stored["ctx"]
            if (node, cfg["stage"], cfg.get("step")) == stale and before["ctx"] is not None:
                ctx = before["ctx"]                      # the previous stage's context did not land
            before["ctx"] = copy.deepcopy(ctx)
            state = load_state(ctx, fsecea.STATE_KEY, me if journal else None)
            reply, out, new, result = fsecea.handle(cfg, blobs, state, emb, me, node)
            if new is not None:
                save_state(ctx, fsecea.STATE_KEY, new, me if journal else None)
            stored["ctx"] = ctx
            return reply, out, None, result
        return handler

    loop = _flower_loop.Loopback({101 + i: client(i, e) for i, e in enumerate(local)}, catch=True)
    res = fsecea.SecEAStageRunner(loop, roster, d=4, block_size=8, blocks_per_stage=1).run(loop.nodes)
    return local, loop, res


def test_stale_context_keeps_the_round_with_the_journal(tmp_path):
    local, loop, res = _race_round(tmp_path, journal=True)
    assert not loop.errors and not res.dropped
    expect = secea.aggregate(local, T=1, precision=8)
    for node, want in zip(loop.nodes, expect):
        got = loop.results[node]
        assert set(got) == set(want) and all(np.array_equal(got[k], want[k]) for k in want)
    assert all(stat.S_IMODE(os.stat(p).st_mode) == 0o600 for p in tmp_path.iterdir())


def test_stale_context_drops_the_client_without_the_journal(tmp_path):
    # the weakened control: the context alone, as before the journal
    _, loop, _ = _race_round(tmp_path, journal=False)
    assert any(node == 103 and "refused (replayed or reordered)" in why for node, _, why in loop.errors)
