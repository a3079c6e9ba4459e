"""Protocols built on the kernels: each party is an object owning the
computations the paper assigns it; messages are small classes with
``to_bytes()`` / ``from_bytes()`` and a byte count.  One package per
protocol (``secea``, ``secea_phe``, ``secemb``, ``osfl``), each with the same
verbs: a params object, party classes, and ``run_round(...)`` returning a
``common.rounds.RoundResult``; ``common`` holds what they share
(docs/ARCHITECTURE.md)."""
