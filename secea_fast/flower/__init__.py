"""Deployment on Flower (``pip install secea_fast[flower]``): each party of a
protocol in its own Flower node process, on one host or many.

* :mod:`secea_fast.flower.secea`: SecEA with the clients as SuperNodes
  (``handle_message`` in their ClientApp) and the server as the ServerApp
  (``run_secea``).
* :mod:`secea_fast.flower.secemb`: SecEmb with server 0 the ServerApp and
  server 1 and the users SuperNodes, driving the protocol's sessions
  (:mod:`secea_fast.protocols.secemb.session`; sealed end to end by
  :mod:`secea_fast.protocols.secemb.channel`).
* :mod:`secea_fast.flower.records`: the package's byte messages in Flower
  records, one protocol stage over a ``Grid``, node state in
  ``context.state``.
* :mod:`secea_fast.flower.localfed`: a local deployment (a SuperLink and
  N SuperNodes as real processes, TLS on) for tests, benchmarks and trials.
* :mod:`secea_fast.flower.demo` / :mod:`secea_fast.flower.train`: the demo
  rounds and the federated training example, with their Apps in ``app/``
  and ``train_app/``; :mod:`secea_fast.flower.cli` is ``secea-fast flower``.

docs/FLOWER.md describes the stages, what each phase tolerates when a node
is lost, and how to run a deployment on one or several hosts.
"""
try:
    import flwr  # noqa: F401
except ImportError as exc:          # pragma: no cover - depends on the environment
    raise ImportError("secea_fast.flower needs Flower: pip install 'secea_fast[flower]'") from exc
