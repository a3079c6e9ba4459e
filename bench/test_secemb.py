"""SecEmb round at the MovieLens-1M shape (SecEmb (Mai et al., 2025), Tables 7, 14
and 17): 100 users, m = 3,883 items, m' = 300, d = 64, against Secure FedRec
(the dense two-server additive baseline) in the same run; the aggregation
over Z_2^64 (our default) and Z_2^32 (the paper's b = 32, Appendix K.5).

Reported per phase (pytest-benchmark extra_info): seconds, bytes per user,
the user's secret generation (Table 17: PathGen, ConvertGen and the dense
shares, ``user_secretgen_ms_per_user``; with the session layer's key check,
signature and sealing, ``user_session_ms_per_user``; reconstruction apart)
and, for the server, the fraction of the AES limit reached: the AES blocks a
server must compute over the AES ceiling measured in the same run
(``secea_dpf_aes_peak``: 8 independent chains of AES rounds on registers, no
memory traffic, with the instructions of the DPF variant in force: VAES on
ymm registers for "vaes256", twice the AES-NI rate on such a CPU).  Blocks per user and key: 2 per internal node of the path
tree over m leaves (2 (m - 1)) for each of retrieval and aggregation, plus
d b / 128 Convert blocks per leaf for the aggregation (32 at b = 64, 16 at
b = 32); the XOR retrieval converts nothing.

``test_secemb_users``: the per-server cost from 100 to 500 users at b = 32, one
thread (Table 14's columns).
"""
import time

import numpy as np
import pytest

from conftest import aes_peak_blocks_per_s
from secea_fast._native import lib
from secea_fast.protocols import baselines, secemb

M, D, USERS, MP = 3883, 64, 100, 300


def _make_workload(users, seed=7):
    rng = np.random.default_rng(seed)
    Q = rng.normal(size=(M, D)) * 0.1
    sizes = np.clip((rng.pareto(1.2, users) + 1) * 40, 20, 1500).astype(int)   # long-tailed, as Fig. 2(a)
    items = [rng.choice(M, size=int(s), replace=False) for s in sizes]
    grads = [rng.normal(size=(len(it), D)) * 0.01 for it in items]
    return Q, items, grads


def dpf_peak_blocks_per_s(clock=time.process_time, n: int = 1 << 26, reps: int = 3) -> float:
    """The AES ceiling of the DPF variant in force (``conftest.aes_peak_blocks_per_s``)."""
    return aes_peak_blocks_per_s(clock, n, reps, variant="dpf")


@pytest.fixture(scope="module")
def dpf_peak():
    """The AES ceiling of the DPF variant in force in this run
    (:func:`dpf_peak_blocks_per_s`; on a VAES-512 CPU the same as
    ``aes_peak``, on a VAES-256 one twice the AES-NI ``aes_peak``)."""
    return dpf_peak_blocks_per_s(n=1 << 24, reps=5)


@pytest.fixture(scope="module")
def workload():
    return _make_workload(USERS)


def user_secretgen_seconds(items, grads, bits, reps=3, clock=time.process_time):
    """Table 17's "secret generation" per user, best of ``reps`` (process CPU
    seconds): the parties layer of every user in ``items`` -- PadOrTrunc,
    PathGen, ConvertGen on the encoded gradient rows, the dense shares and
    the two messages each way as bytes -- without the session layer (server
    1's key check, signing, sealing: ``user_session_ms_per_user`` includes
    them) and without reconstructing the retrieved rows."""
    users = len(items)
    params = secemb.SecEmbParams(m=M, d=D, m_prime=MP, n_users=users, agg_bits=bits)
    best = float("inf")
    for _ in range(reps):
        c0 = clock()
        for it, g in zip(items, grads):
            user = secemb.User(params, it)
            r0, r1 = user.retrieval_request()
            r0.to_bytes(), r1.to_bytes()
            u0, u1 = user.aggregation_upload(g)
            u0.to_bytes(), u1.to_bytes()
        best = min(best, clock() - c0)
    return best / users


def _server_blocks(users, bits):
    tree = 2 * (M - 1)
    retrieval = users * MP * tree
    aggregation = users * MP * (tree + M * (D * bits // 128))
    return retrieval, aggregation


def _round_info(rep, users, bits, threads, peak):
    ret_blocks, agg_blocks = _server_blocks(users, bits)
    per_ret = rep.seconds["server_retrieval"] / 2
    per_agg = rep.seconds["server_aggregation"] / 2
    return dict(
        impl="secea_fast", threads=threads, agg_bits=bits, users=users,
        user_keygen_ms_per_user=1e3 * rep.seconds["user_keygen"] / users,
        user_upload_ms_per_user=1e3 * rep.seconds["user_upload"] / users,
        user_session_ms_per_user=1e3 * (rep.seconds["user_keygen"] + rep.seconds["user_upload"]) / users,
        user_reconstruct_ms_per_user=1e3 * rep.seconds["user_reconstruct"] / users,
        server_retrieval_s=per_ret, server_aggregation_s=per_agg,
        server_seconds_per_iteration=per_ret + per_agg,
        aes_peak_gblocks_per_s=peak / 1e9,
        aes_fraction_aggregation=agg_blocks / peak / per_agg / threads,
        aes_fraction_retrieval=ret_blocks / peak / per_ret / threads,
        aes_fraction_server=(ret_blocks + agg_blocks) / peak / (per_ret + per_agg) / threads,
        upload_kib_per_user=(rep.bytes_up["retrieval"] + rep.bytes_up["aggregation"]) / 1024,
        download_kib_per_user=rep.bytes_down["retrieval"] / 1024)


@pytest.mark.parametrize("bits", [64, 32])
@pytest.mark.parametrize("threads", [1, 2])
def test_secemb_round(benchmark, workload, dpf_peak, threads, bits):
    Q, items, grads = workload
    out = {}

    def run():
        out["rep"] = secemb.run_round(Q, items, grads, MP, threads=threads, agg_bits=bits)

    benchmark.group = "secemb round ML-1M shape"
    benchmark.pedantic(run, rounds=1, iterations=1)
    benchmark.extra_info.update(_round_info(out["rep"], USERS, bits, threads, dpf_peak))
    benchmark.extra_info["user_secretgen_ms_per_user"] = 1e3 * user_secretgen_seconds(items, grads, bits)


@pytest.mark.parametrize("users", [100, 200, 300, 400, 500])
def test_secemb_users(benchmark, dpf_peak, users):
    Q, items, grads = _make_workload(users, seed=users)
    out = {}

    def run():
        out["rep"] = secemb.run_round(Q, items, grads, MP, threads=1, agg_bits=32)

    benchmark.group = "secemb server cost vs users (Table 14), b = 32, 1 thread"
    benchmark.pedantic(run, rounds=1, iterations=1)
    benchmark.extra_info.update(_round_info(out["rep"], users, 32, 1, dpf_peak))
    benchmark.extra_info["user_secretgen_ms_per_user"] = 1e3 * user_secretgen_seconds(items, grads, 32)


def test_secure_fedrec_round(benchmark, workload):
    Q, items, grads = workload
    out = {}

    def run():
        out["rep"] = baselines.secure_fedrec_round(Q, items, grads)

    benchmark.group = "secemb round ML-1M shape"
    benchmark.pedantic(run, rounds=1, iterations=1)
    rep = out["rep"]
    benchmark.extra_info.update(
        impl="secure fedrec (dense additive)", threads=1,
        user_upload_ms_per_user=1e3 * rep.seconds["user_upload"] / USERS,
        server_aggregation_s=rep.seconds["server_aggregation"] / 2,
        upload_kib_per_user=rep.bytes_up["aggregation"] / 1024,
        download_kib_per_user=rep.bytes_down["retrieval"] / 1024)


# item counts of Table 7 (ML100K, ML1M, ML10M, ML25M, Yelp subset)
DATASETS = {"ML100K": 1682, "ML1M": 3883, "ML10M": 10681, "ML25M": 62423, "Yelp": 93386}


@pytest.mark.parametrize("name", list(DATASETS))
def test_upload_bytes_per_user(benchmark, name):
    """Bytes a user uploads per round (both servers' messages, serialized), SecEmb
    vs Secure FedRec, d = 64, m' = 300 (cf. Table 2; the paper packs 32-bit
    values where this ring is Z_2^64)."""
    m = DATASETS[name]
    P = secemb.SecEmbParams(m=m, d=D, m_prime=MP, n_users=USERS)
    user = secemb.User(P, np.arange(50))

    def run():
        r0, r1 = user.retrieval_request()
        u0, u1 = user.aggregation_upload(np.zeros((50, D)))
        return r0.nbytes + r1.nbytes + u0.nbytes + u1.nbytes

    benchmark.group = "secemb upload bytes per user"
    total = benchmark.pedantic(run, rounds=1, iterations=1)
    fedrec = 2 * m * D * 8
    benchmark.extra_info.update(impl="secea_fast", dataset=name, m=m, secemb_upload_mib=total / 2**20,
                                secure_fedrec_upload_mib=fedrec / 2**20, reduction=fedrec / total)


def _raw_round(Q, items, grads, m_prime, threads=1):
    """The same round with the raw parties (``User``, ``Server``), messages
    round-tripped through bytes but no session: no signatures, no sealed
    channel, no stage, round or once checks -- the baseline of the sessions'
    cost."""
    P = secemb.SecEmbParams(m=Q.shape[0], d=Q.shape[1], m_prime=m_prime, n_users=len(items))
    table = secemb.encode_table(Q, P)
    servers = [secemb.Server(b, P, table, threads) for b in (0, 1)]
    users = [secemb.User(P, it) for it in items]
    ups = [{}, {}]
    for u, user in enumerate(users):
        reqs = [r.to_bytes() for r in user.retrieval_request()]
        ans = [secemb.RetrievalResponse.from_bytes(
            servers[b].answer(u, secemb.RetrievalRequest.from_bytes(reqs[b])).to_bytes()) for b in (0, 1)]
        user.reconstruct(*ans)
        for b, up in enumerate(user.aggregation_upload(grads[u])):
            ups[b][u] = secemb.AggregationUpload.from_bytes(up.to_bytes())
    shares = [servers[b].aggregate(ups[b]) for b in (0, 1)]
    return secemb.reconstruct_aggregate(shares[0], secemb.AggregateShare.from_bytes(shares[1].to_bytes()), P)[0]


def test_sessions_cost_against_raw_parties(benchmark):
    """The sessions' authentication and checks (roster signatures, the
    sealed channel, stage/round/once checks, state) against the raw parties
    on the same round, interleaved in one run: ``overhead`` = session round
    / raw round - 1 (target <= 5%).  Also a round of the Flower runner over
    an in-process loopback (no Flower transport), for scale.
    Command: ``pytest bench/test_secemb.py -k sessions_cost --benchmark-only -s``."""
    users = 10
    Q, items, grads = _make_workload(users, seed=3)
    raw, ses = [], []
    clock = time.process_time          # this process's CPU seconds: robust to other load on the host

    def run():
        for _ in range(3):
            t = clock()
            a = _raw_round(Q, items, grads, MP)
            raw.append(clock() - t)
            t = clock()
            b = secemb.run_round(Q, items, grads, MP, threads=1).aggregate
            ses.append(clock() - t)
            assert a.shape == b.shape          # (users above m' keep a random m' items: sums differ)
    benchmark.group = "secemb sessions vs raw parties"
    benchmark.pedantic(run, rounds=1, iterations=1)
    info = {"users": users, "m": M, "m_prime": MP, "d": D, "raw_s": min(raw), "sessions_s": min(ses),
            "overhead": min(ses) / min(raw) - 1}
    pytest.importorskip("flwr")
    from secea_fast.flower import secemb as fsecemb
    from secea_fast.flower.admission import NodeIdentity
    from secea_fast.flower.records import StageResult, pack, unpack
    from secea_fast.protocols.common.roster import Roster
    roster, ids = Roster.make([("server1", "server1")] + [(f"user-{u}", "user") for u in range(users)])
    handlers = {1: lambda c, b, s: fsecemb.handle(c, b, s, "server1", me=NodeIdentity(roster, ids["server1"]),
                                                  node_id=1, run=9)}
    for u in range(users):
        handlers[10 + u] = (lambda u: lambda c, b, s: fsecemb.handle(
            c, b, s, "user", items[u], lambda r: grads[u], me=NodeIdentity(roster, ids[f"user-{u}"]),
            node_id=10 + u, run=9))(u)
    state = {}

    def exchange(outbox, work=None):
        res = StageResult()
        if work is not None:
            work()
        for x, (cfg, blobs) in outbox.items():
            cfg, blobs = unpack(pack(cfg, blobs))
            rc, out, state[x], _ = handlers[x](cfg, blobs, state.get(x))
            res.replies[x] = unpack(pack(rc, out))
        return res
    runner = fsecemb.SecEmbStageRunner(exchange, roster=roster, run=9, m_prime=MP)
    t = clock()
    runner.run(list(handlers), Q)
    info["flower_loopback_round_s"] = clock() - t
    info["overhead_of_flower_loopback"] = (min(ses) - min(raw)) / info["flower_loopback_round_s"]
    benchmark.extra_info.update(info)
    print(info)


@pytest.mark.parametrize("bits", [32, 64])
def test_secemb_twin(benchmark, workload, bits):
    """The servers' kernels against their reference twin in one process
    (``lib.secea_dpf_set_interleave(0)``: one tree at a time and the plain-C
    XOR), the two alternating, one thread, in CPU seconds, with the AES
    ceiling on the same clock: the ratios hold on a loaded host where wall
    times do not.  Command: ``pytest bench/test_secemb.py --benchmark-only
    -k secemb_twin``."""
    Q, items, grads = workload
    clock = time.process_time
    n, peak = 1 << 26, 0.0
    best = {}

    def run():
        nonlocal peak
        for il in (0, 1):
            peak = max(peak, dpf_peak_blocks_per_s(clock, n, 3))
            prev = lib.secea_dpf_set_interleave(il)
            try:
                rep = secemb.run_round(Q, items, grads, MP, threads=1, agg_bits=bits)
            finally:
                lib.secea_dpf_set_interleave(prev)
            best[il] = rep

    benchmark.group = "secemb server kernels vs reference twin"
    benchmark.pedantic(run, rounds=1, iterations=1)
    info = {"agg_bits": bits, "clock": "process CPU seconds"}
    for il, name in ((0, "reference"), (1, "interleaved")):
        i = _round_info(best[il], USERS, bits, 1, peak)
        for k in ("server_retrieval_s", "server_aggregation_s", "server_seconds_per_iteration",
                  "aes_fraction_retrieval", "aes_fraction_aggregation", "aes_fraction_server"):
            info[f"{name}_{k}"] = i[k]
    info["aes_peak_gblocks_per_s"] = peak / 1e9
    info["retrieval_ratio"] = info["reference_server_retrieval_s"] / info["interleaved_server_retrieval_s"]
    info["server_ratio"] = (info["reference_server_seconds_per_iteration"]
                            / info["interleaved_server_seconds_per_iteration"])
    benchmark.extra_info.update(info)


@pytest.mark.parametrize("bits", [32, 64])
def test_secemb_vaes256_twin(benchmark, workload, bits):
    """The servers on the "vaes256" DPF variant (VAES on ymm registers, for
    CPUs with VAES but no AVX-512) against its reference twin, the "aesni"
    variant, alternating in one process, one thread, CPU seconds; each
    variant's AES fraction against its own ceiling and against the VAES-256
    one (the core's), measured on the same clock in the same run.  Skipped
    where the CPU lacks either variant.  Command: ``pytest
    bench/test_secemb.py --benchmark-only -k vaes256_twin``."""
    import secea_fast
    for name in (b"aesni", b"vaes256"):
        if lib.secea_dpf_select_variant(name) != 0:
            secea_fast.set_backend(secea_fast.get_backend())
            pytest.skip(f"this CPU does not run the {name.decode()} DPF variant")
    Q, items, grads = workload
    clock = time.process_time
    peaks, best = {}, {}

    def run():
        try:
            for name in ("aesni", "vaes256"):
                assert lib.secea_dpf_select_variant(name.encode()) == 0
                peaks[name] = max(peaks.get(name, 0.0), dpf_peak_blocks_per_s(clock))
                best[name] = secemb.run_round(Q, items, grads, MP, threads=1, agg_bits=bits)
        finally:
            secea_fast.set_backend(secea_fast.get_backend())

    benchmark.group = "secemb server on vaes256 vs the aesni twin"
    benchmark.pedantic(run, rounds=1, iterations=1)
    info = {"agg_bits": bits, "clock": "process CPU seconds",
            "aes_peak_gblocks_per_s": {k: v / 1e9 for k, v in peaks.items()}}
    for name in ("aesni", "vaes256"):
        own = _round_info(best[name], USERS, bits, 1, peaks[name])
        core = _round_info(best[name], USERS, bits, 1, peaks["vaes256"])
        for k in ("server_retrieval_s", "server_aggregation_s", "server_seconds_per_iteration"):
            info[f"{name}_{k}"] = own[k]
        for k in ("aes_fraction_retrieval", "aes_fraction_aggregation", "aes_fraction_server"):
            info[f"{name}_{k}_own_ceiling"] = own[k]
            info[f"{name}_{k}_vaes256_ceiling"] = core[k]
        info[f"{name}_user_session_ms_per_user"] = own["user_session_ms_per_user"]
    for k in ("server_retrieval_s", "server_aggregation_s", "server_seconds_per_iteration"):
        info[f"ratio_{k}"] = info[f"aesni_{k}"] / info[f"vaes256_{k}"]
    benchmark.extra_info.update(info)
    print(info)


@pytest.mark.parametrize("bits", [32, 64])
def test_secemb_xor4r_twin(benchmark, workload, bits):
    """The XOR retrieval's Four-Russians kernel (``csrc/dpf/xor4r.c``: the
    GF(2) product indexed by the table's bits, batches of 256 keys) against
    its twin, the masked XOR (``lib.secea_dpf_set_xor4r(0)``), the two
    alternating twice in one process, one thread, process CPU seconds (best
    of the two rounds per kernel), with the DPF variant's AES ceiling on the
    same clock in the same run.  The aggregation is the same code in both: its
    ratio is the noise.  Command: ``pytest bench/test_secemb.py
    --benchmark-only -k xor4r_twin``."""
    Q, items, grads = workload
    clock = time.process_time
    peak = 0.0
    best: dict = {}

    def run():
        nonlocal peak
        for _ in range(2):
            for mode in (0, 1):
                peak = max(peak, dpf_peak_blocks_per_s(clock, 1 << 26, 3))
                prev = lib.secea_dpf_set_xor4r(mode)
                try:
                    rep = secemb.run_round(Q, items, grads, MP, threads=1, agg_bits=bits)
                finally:
                    lib.secea_dpf_set_xor4r(prev)
                old = best.get(mode)
                if old is None or rep.seconds["server_retrieval"] < old.seconds["server_retrieval"]:
                    best[mode] = rep

    benchmark.group = "secemb retrieval: Four-Russians product vs the masked XOR"
    benchmark.pedantic(run, rounds=1, iterations=1)
    info = {"agg_bits": bits, "clock": "process CPU seconds", "aes_peak_gblocks_per_s": peak / 1e9}
    for mode, name in ((0, "masked_xor"), (1, "xor4r")):
        i = _round_info(best[mode], USERS, bits, 1, peak)
        for k in ("server_retrieval_s", "server_aggregation_s", "server_seconds_per_iteration",
                  "aes_fraction_retrieval", "aes_fraction_aggregation", "aes_fraction_server"):
            info[f"{name}_{k}"] = i[k]
    for k in ("server_retrieval_s", "server_aggregation_s", "server_seconds_per_iteration"):
        info[f"ratio_{k}"] = info[f"masked_xor_{k}"] / info[f"xor4r_{k}"]
    benchmark.extra_info.update(info)
    print(info)


def test_vaes256_conversion_bound(benchmark):
    """What bounds the fused aggregation's conversion on a VAES-256 CPU,
    measured (``secea_dpf_convacc_peak``, csrc/dpf/peak_x86_v256.c): the AES
    ceiling beside AES in independent groups of 8, 12 and 16 ymm chains
    with the round keys from memory, the conversion's instruction mix on an
    accumulator in L1 and in L2, the ``conv_acc_v256`` slot itself, and the
    ceiling's loop with 0, 2 and 6 AVX2 operations per register (inline
    assembly); each as a fraction of the ceiling, thread CPU time, best of
    3 in one process.  Skipped where the CPU lacks VAES-256.  Command:
    ``pytest bench/test_secemb.py --benchmark-only -k conversion_bound``."""
    from secea_fast._native import ffi
    import secea_fast
    if lib.secea_dpf_select_variant(b"vaes256") != 0:
        pytest.skip("this CPU does not run the vaes256 DPF variant")
    n, chk = 1 << 24, ffi.new("uint64_t*")
    cases = {"aes_groups_memory_keys_8": (8, 0, 16), "aes_groups_memory_keys_12": (12, 0, 16),
             "aes_groups_memory_keys_16": (16, 0, 16), "mix_l1_8": (8, 1, 16), "mix_l1_12": (12, 1, 16),
             "mix_l1_16": (16, 1, 16), "mix_l2_8": (8, 1, 512), "slot_l1": (8, 2, 16), "slot_l2": (8, 2, 512),
             "ceiling_loop_memory_keys_avx2_0": (8, 3, 16), "ceiling_loop_memory_keys_avx2_2": (8, 4, 16),
             "ceiling_loop_memory_keys_avx2_6": (8, 5, 16)}
    best: dict = {}

    def rate(fn):
        t = time.thread_time()
        fn()
        return n / (time.thread_time() - t)

    def run():
        try:
            for _ in range(3):
                best["ceiling"] = max(best.get("ceiling", 0.0), rate(lambda: lib.secea_dpf_aes_peak(n)))
                for name, args in cases.items():
                    v = rate(lambda: lib.secea_dpf_convacc_peak(n, *args, chk))
                    best[name] = max(best.get(name, 0.0), v)
        finally:
            secea_fast.set_backend(secea_fast.get_backend())

    benchmark.group = "vaes256 conversion bound"
    benchmark.pedantic(run, rounds=1, iterations=1)
    info = {"clock": "thread CPU seconds", "ceiling_gblocks_per_s": best["ceiling"] / 1e9}
    info.update({f"fraction_{k}": v / best["ceiling"] for k, v in best.items() if k != "ceiling"})
    benchmark.extra_info.update(info)
    print(info)
