"""One verified round of each protocol on small inputs, through the verb
they all share: ``run_round(...)`` returns a ``RoundResult`` with per-phase
seconds and bytes and ``verified`` (checked against plaintext).

    python examples/protocol_rounds.py
"""
import numpy as np

from secea_fast.protocols import osfl, secea, secea_phe, secemb


def main():
    rng = np.random.default_rng(0)

    # SecEA and SecEA-PHE: 3 clients, each a dict entity id -> embedding
    local = [{f"e{i}": rng.normal(size=4) for i in rng.choice(12, size=6, replace=False)}
             for _ in range(3)]
    results = [secea.run_round(local, verify=True),
               secea_phe.run_round(local, key_bits=1024, insecure_keys=True, verify=True)]

    # SecEmb: an item table, users' rated items and their gradient rows
    Q = rng.normal(size=(50, 4))
    items = [rng.choice(50, size=5, replace=False) for _ in range(4)]
    grads = [rng.normal(scale=0.1, size=(5, 4)) for _ in items]
    results.append(secemb.run_round(Q, items, grads, m_prime=8, verify=True))

    # one-shot FL with objective hiding: n = 5 clients, T = 2 objectives
    labels = rng.integers(0, 5, size=(5, 2, 3, 4))
    results.append(osfl.run_round(labels, osfl.Assignment.cyclic(5, 2, 3), 1, 1, 1, verify=True))

    for res in results:
        print(f"{res.PROTOCOL}: verified={res.verified}")
        print(res.table(), end="\n\n")
    return 0 if all(r.verified for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
