"""Learning tasks behind the protocols' experiments, in NumPy (no deep
learning framework needed).

* :mod:`~secea_fast.studies.framework`: the study loop (local training,
  aggregation by EmbAvg / SecEA / the LDP baseline, evaluation; seconds per
  phase and bytes per round);
* :mod:`~secea_fast.studies.ldp`: the Laplace LDP baseline of SecEA's
  Appendix C and its epsilon grid (Table 7);
* :mod:`~secea_fast.studies.kg`: TransE knowledge-graph completion (MRR,
  Hits@10);
* :mod:`~secea_fast.studies.kge`: TransE and RotatE with self-adversarial
  negatives and Adam, the real-data Kinship rows of Table 3;
* :mod:`~secea_fast.studies.tables`: ``secea-fast study table3 / table7``,
  the paper's tables on the real data sets beside the published values
  (a registry of rows: loader, partition, task, metric, published row);
* :mod:`~secea_fast.studies.lightgcn`: LightGCN recommendation across
  silos (HR@10, NDCG@10);
* :mod:`~secea_fast.studies.graph`: DeepWalk graph embedding (Micro-F1,
  link-prediction AUC);
* :mod:`~secea_fast.studies.tabular`: federated multi-view PCA on
  Census-Income rows (NMI of k-means, reconstruction error);
* :mod:`~secea_fast.studies.runner`: ``secea-fast study NAME`` (tables,
  JSON, plots; docs/STUDIES.md);
* :mod:`~secea_fast.studies.osfl_plots`: Figs. 3-6 of the one-shot
  objective-hiding paper (Table I's rates against rho, matplotlib);
* :mod:`~secea_fast.studies.fedrec`: federated matrix factorisation on
  SecEmb and the plaintext run it must equal (SecEmb's lossless claim);
* :mod:`~secea_fast.studies.blas`: one BLAS thread for every study command
  (threaded BLAS made these small products 6-14x slower on a shared machine);
* :mod:`~secea_fast.studies.recsys`: federated recommendation by matrix
  factorisation across silos (SecEA) and devices (SecEmb), with
  MovieLens-format data and HR@10 / NDCG@10.
"""
from .recsys import (Ratings, Silos, hr_ndcg, leave_one_out, ratings_from_file,
                     run_cross_device, run_cross_silo, synthetic_ratings)

__all__ = ["Ratings", "Silos", "hr_ndcg", "leave_one_out", "ratings_from_file",
           "run_cross_device", "run_cross_silo", "synthetic_ratings"]
