"""A SecEmb server's retrieval and aggregation sharded over executor workers
(secea_fast.protocols.secemb.sharded): bit for bit the one-process server in
both rings, for user counts that do not divide into the shards and for one
user; each server its own executor."""
import numpy as np
import pytest

from secea_fast import tuning
from secea_fast.executor import Executor, LocalExecutor, RayExecutor, ray_available
from secea_fast.protocols import secemb
from secea_fast.protocols.secemb import session as secemb_session
from secea_fast.protocols.secemb.sharded import (check_server_executors, shard_bounds, sharded_accumulate,
                                                 sharded_xor_rows)

M, D, MP = 200, 8, 5


class Inline(Executor):
    """``processes`` workers simulated in this process, shards run in
    reverse order (the server must not depend on completion order);
    ``drop_last``: the weakened control that loses the last shard of the
    aggregation (its second call)."""

    name = "inline-test"

    def __init__(self, processes, drop_last=False):
        self.processes, self.drop_last, self.shards = processes, drop_last, []

    def _run(self, fn, jobs, state, collect):
        self.shards.append(len(jobs))
        lose = self.drop_last and len(self.shards) == 2
        for job in list(reversed(jobs))[1 if lose else 0:]:
            collect(fn(state, job))


def _workload(users, seed=3):
    # at most m' items each: no random truncation, so two rounds give the same sums
    rng = np.random.default_rng(seed)
    Q = rng.normal(size=(M, D)) * 0.1
    items = [rng.choice(M, size=int(rng.integers(1, MP + 1)), replace=False) for _ in range(users)]
    grads = [rng.normal(size=(len(it), D)) * 0.01 for it in items]
    return Q, items, grads


def _server_pair(users, bits, executor):
    """(answers, share bytes) of server 0 with and without ``executor``."""
    Q, items, grads = _workload(users)
    P = secemb.SecEmbParams(m=M, d=D, m_prime=MP, n_users=users, agg_bits=bits)
    table = secemb.encode_table(Q, P)
    us = [secemb.User(P, it) for it in items]
    reqs = {u: user.retrieval_request()[0] for u, user in enumerate(us)}
    ups = {}
    for u, user in enumerate(us):
        ups[u] = user.aggregation_upload(grads[u])[0]
    out = []
    for ex in (None, executor):
        srv = secemb.Server(0, P, table, threads=1, executor=ex)
        ans = srv.answer_many(reqs)
        out.append(([ans[u].to_bytes() for u in range(users)], srv.aggregate(ups).to_bytes()))
    return out


@pytest.mark.parametrize("bits", [64, 32])
@pytest.mark.parametrize("users", [7, 1])
def test_sharded_server_is_bit_identical_in_process(bits, users):
    ex = Inline(3)
    (ans1, share1), (ansk, sharek) = _server_pair(users, bits, ex)
    assert ans1 == ansk and share1 == sharek
    assert ex.shards == [min(3 * tuning.SECEMB_SHARDS_PER_WORKER, users)] * 2   # both stages sharded


def test_shards_are_capped(monkeypatch):
    """A shard never holds more than SECEMB_USERS_PER_SHARD users (a worker's
    memory bound), whatever the users; still bit for bit."""
    monkeypatch.setattr(tuning, "SECEMB_USERS_PER_SHARD", 2)
    monkeypatch.setattr(tuning, "SECEMB_SHARDS_PER_WORKER", 1)
    ex = Inline(1)
    (ans1, share1), (ansk, sharek) = _server_pair(7, 64, ex)
    assert ans1 == ansk and share1 == sharek
    assert ex.shards == [4, 4]


def test_a_lost_partial_changes_the_share():
    """The weakened control: an executor that loses one shard's partial
    accumulator gives a different share, so the equality above has power."""
    (_, share1), (_, sharek) = _server_pair(7, 64, Inline(3, drop_last=True))
    assert share1 != sharek


def test_shard_bounds():
    assert shard_bounds(7, 3) == [(0, 3), (3, 5), (5, 7)]
    assert shard_bounds(1, 4) == [(0, 1)]
    assert shard_bounds(0, 2) == []
    assert shard_bounds(10, 2, users_per_shard=3) == [(0, 3), (3, 6), (6, 8), (8, 10)]
    with pytest.raises(ValueError, match="shards"):
        shard_bounds(3, 0)
    with pytest.raises(ValueError, match="users_per_shard"):
        shard_bounds(3, 1, users_per_shard=0)


def test_sharded_kernels_check_their_arguments():
    from secea_fast import dpf
    p0, _, _ = dpf.path_gen_batch(np.arange(4), 8)
    table = np.zeros((10, 2), np.uint64)
    with pytest.raises(TypeError, match="executor"):
        sharded_xor_rows(p0, table, None, keys_per_user=2)
    with pytest.raises(ValueError, match="whole number of users"):
        sharded_xor_rows(p0, table, Inline(2), keys_per_user=3)
    with pytest.raises(ValueError, match="cws"):
        sharded_accumulate(np.zeros((10, 2), np.uint64), p0, 0, np.zeros((3, 2), np.uint64), Inline(2),
                           keys_per_user=2)


def test_the_servers_never_share_an_executor(monkeypatch):
    ex = Inline(2)
    with pytest.raises(ValueError, match="executors: the two servers must not share"):
        check_server_executors((ex, ex))
    Q, items, grads = _workload(3)
    with pytest.raises(ValueError, match="must not share"):
        secemb.run_round(Q, items, grads, MP, executors=(ex, ex))
    with pytest.raises(TypeError, match="pair"):
        secemb.run_round(Q, items, grads, MP, executors=ex)
    with pytest.raises(TypeError, match=r"executors\[1\]"):
        check_server_executors((ex, "ray"))
    r0, r1 = RayExecutor.__new__(RayExecutor), RayExecutor.__new__(RayExecutor)
    r0._actors = r1._actors = None                   # never started: nothing to close
    with pytest.raises(ValueError, match="one Ray instance"):
        check_server_executors((r0, r1))
    # every Server a round builds gets its own party's executor, and the two differ
    seen = []

    class Spy(secemb.Server):
        def __init__(self, party, params, table, threads=None, executor=None):
            seen.append((party, executor))
            super().__init__(party, params, table, threads, executor)
    monkeypatch.setattr(secemb_session, "Server", Spy)
    ex0, ex1 = Inline(2), Inline(3)
    res = secemb.run_round(Q, items, grads, MP, executors=(ex0, ex1), verify=True)
    assert res.verified
    assert {p for p, _ in seen} == {0, 1}
    assert all(e is (ex0 if p == 0 else ex1) for p, e in seen)
    assert ex0.shards and ex1.shards


def test_round_with_sharded_servers_matches_one_process():
    Q, items, grads = _workload(5)
    a = secemb.run_round(Q, items, grads, MP, verify=True, agg_bits=32)
    b = secemb.run_round(Q, items, grads, MP, verify=True, agg_bits=32, executors=(Inline(2), Inline(3)))
    assert a.bytes == b.bytes
    assert np.array_equal(a.aggregate, b.aggregate)
    assert all(np.array_equal(x, y, equal_nan=True) for x, y in zip(a.retrieved, b.retrieved))


@pytest.mark.slow
@pytest.mark.parametrize("bits", [64, 32])
def test_forked_pool_is_bit_identical(bits):
    (ans1, share1), (ansk, sharek) = _server_pair(7, bits, LocalExecutor(2))
    assert ans1 == ansk and share1 == sharek


@pytest.mark.slow
@pytest.mark.skipif(not ray_available(), reason="needs the ray extra")
def test_ray_server_is_bit_identical():
    """Server 0 on Ray workers (2 actors), server 1 on a forked pool: the
    same answers, shares and round as one process, both rings, 7 users (not
    a multiple of 2) and 1 user."""
    with RayExecutor(2) as ray_ex:
        for bits in (64, 32):
            for users in (7, 1):
                (ans1, share1), (ansk, sharek) = _server_pair(users, bits, ray_ex)
                assert ans1 == ansk and share1 == sharek, (bits, users)
        Q, items, grads = _workload(5)
        res = secemb.run_round(Q, items, grads, MP, verify=True, executors=(ray_ex, LocalExecutor(2)))
        assert res.verified


def test_worker_usage_of_the_inline_pool():
    import os
    from secea_fast.executor import worker_usage
    got = worker_usage(LocalExecutor(1), probes=2)
    assert list(got) == [os.getpid()]
    cpu, rss = got[os.getpid()]
    assert cpu > 0 and rss > 1 << 20
    with pytest.raises(TypeError, match="executor"):
        worker_usage("ray")
    with pytest.raises(ValueError, match="probes"):
        worker_usage(LocalExecutor(1), probes=0)
