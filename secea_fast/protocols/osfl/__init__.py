"""One-shot federated learning with data privacy and objective hiding:
Egger, Urbanke, Bitar (2025), One-shot federated learning with objective
hiding ("Federated One-Shot Learning with Data Privacy and Objective-Hiding",
[OSFL] in docs/papers.md): task assignment (Sec. III), McEliece-Sarwate ramp
sharing (Sec. V-b, eq. 1), the graph-based PIR query (eq. 2) answered with
dual-GRS weights (Sec. V-c), reconstruction through A^(theta) and the
triangular matrix P (Sec. V-d), symmetric privacy from the federator
(Sec. VI), Approaches 1 and 2 (Sec. IV), the star-product and GXSTPIR
baselines (Sec. VII, Table I) and the rates of Table I.

Modules (data flows one way: each imports only the ones above it)
------------------------------------------------------------------
* ``params``: ``Assignment`` (Sec. III), ``OSFLParams`` and the pure encoders
  ``encode_shares`` (eq. 1), ``query_values`` (eq. 2), ``symmetric_mask``
  (Sec. VI); the helpers and checks the other modules share.
* ``messages``: ``ShareMessage``, ``Query``, ``Answer`` as validated bytes.
* ``parties``: ``Client`` and ``Federator``.
* ``round``: ``run_round``, the whole retrieval simulated locally, and its
  result ``OSFLRoundResult``.
* ``baseline``: ``approach1``, the Approach 1 baseline (Sec. IV).
* ``costs``: ``rates`` (Table I, Lemma 1, Approaches 1 and 2 of Sec. IV),
  ``elements`` (exact payload per stage of one instance); the plots of
  Figs. 3-6 are ``secea_fast.studies.osfl_plots.plot_rates``.
* ``approaches``: the competing approaches as exact protocols with the inputs
  and result of ``run_round``: ``approach2`` (Approach 2 of Sec. IV,
  McEliece-Sarwate ramp sharing with rho = n), ``star_product`` (Approach 3,
  star-product PIR over the ramp-shared storage, Sec. VII-a) and ``gxstpir``
  (Shamir sharing + graph-based X-secure T-private PIR, Sec. VII-b), each
  with an optional symmetric-privacy mask (Sec. VI).
* ``distillation``: ``quantize`` (Sec. V-a) and the distillation example
  (the ``secea-fast run --protocol osfl`` job built on it is
  ``secea_fast.jobs.osfl_job``).
``primitive_root`` is ``secea_fast.nt.primitive_root``.  Every name of
``__all__`` is importable from this package.

Notation (the paper's, 0-based in code)
---------------------------------------
n clients, T objectives, incidence I (n x T) with column weight rho; client i
labels a public set of s samples with c classes for each objective t in I(i).
z_s: colluding clients the labels are private against; z_q: colluding clients
the objective j is hidden from.  k_C = (rho - z_q + z_s + 1) / 2 is the
dimension of the storage code and K = k_C - z_s the number of labels one share
polynomial carries.  alpha is a generator of F_q and client i (1-based in the
paper) evaluates at alpha_i = alpha^i.

Stages and where the work is
----------------------------
* Sharing (eq. 1): for each t in I(i), client i forms the k_C x (P c)
  coefficient matrix [labels (K rows); fresh uniform randomness (z_s rows)] and
  multiplies it by the rho x k_C Vandermonde matrix of the points of I(e_t):
  one ``linalg.matmul`` per (client, objective), vectorised over all P
  partitions and c classes.  Row a goes to the a-th client of I(e_t).
* Aggregation: each client sums the rho shares it receives per objective,
  F_p^(t)(alpha_i) (Sec. V-b).
* Query (eq. 2): q^(t,j)(x) = delta_{tj} + sum_{tau=1}^{z_q} x^(K+tau-1) k_tau^(t);
  client i in I(e_t) receives q^(t,j)(alpha_i).
* Answer (Sec. V-c): A^i = sum_{t in I(i)} nu_{t,i} q^(t,j)(alpha_i) F^(t)(alpha_i)
  with nu_{t,i} = prod_{i1 in I(e_t), i1 != i} (alpha_i - alpha_i1)^(-1): one
  weighted sum of the client's |I(i)| stored rows (P c elements each).
* Reconstruction (Sec. V-d): A^(theta) = sum_i alpha_i^(-theta) A^i for
  theta = 1..K equals P (ybar_1..ybar_K)^T, P lower triangular Toeplitz with
  P[theta, u] = sum_{i in I(e_j)} nu_{j,i} alpha_i^(-(theta - u + 1)); the
  federator applies the K x n matrix D = P^(-1) H (H[theta, i] = alpha_i^(-theta))
  to the n x (P c) answers: one ``linalg.matmul``.

Every interference term of the answers is sum_{i in I(e_t)} nu_{t,i}
alpha_i^m for 0 <= m <= rho - 2, which is zero (nu is the dual GRS multiplier
of the rho points), because K + (k_C - 1) + (z_q - 1) = rho - 1 (Appendix B).

Deviations from the paper (each pinned by a test in tests/test_osfl.py)
------------------------------------------------------------------------
1. Symmetric privacy (Sec. VI).  The paper adds one shared polynomial
   R_p(x) = sum_{tau=1}^{k_C+z_q-1} x^(K+tau-1) s_{p,tau}, evaluated at alpha_i
   and not weighted by nu, to every answer.  As printed this breaks decoding
   (sum_i alpha_i^(-theta) alpha_i^(K+tau-1) over all n clients is not zero
   in general) and a (k_C + z_q - 1)-dimensional pad cannot hide interference
   that spans up to n - K dimensions.  Implemented instead: the clients add a
   mask m that is uniform on W = {v in F^n : sum_i alpha_i^(-theta) v_i = 0,
   theta = 1..K}, the kernel of the federator's reconstruction functionals.
   The interference of the answers lies in W (that is what makes decoding
   work), so answers = (part fixed by ybar_j) + (interference + m) where the
   second term is uniform on W whatever the labels: the federator's view
   depends on the labels only through the requested sum (Theorem 4).  W is
   spanned by n - K vectors b_f supported on K + 1 consecutive clients
   f..f+K (the dual codeword of an RS code of dimension K on those points:
   b_f[i] = alpha_i / prod_{i1 != i} (alpha_i^(-1) - alpha_i1^(-1))), so each
   client expands at most K + 1 shared streams s_f (one per window containing
   it, P c elements each, from ``Prg(shared_seed, session || f)``) and adds
   sum_f b_f[i] s_f: fewer than the k_C + z_q - 1 coefficients of R_p
   whenever z_s + z_q >= 2.  (Minimum weight of W's vectors is K + 1, so no
   basis is sparser.)
2. Query randomness (eq. 2) is one scalar k_tau^(t) per objective, shared by
   all partitions and classes (the paper draws k_{p,tau}^(t) in F_q^c per
   partition).  delta = 1 times a vector is the same as the all-ones vector
   elementwise, the privacy argument (Appendix A) only uses that any z_q
   evaluations of each q^(t) are uniform and independent across t, and the
   upload per client drops from |I(i)| P c to |I(i)| field elements.
3. Partitions are strided: partition p holds labels u P + p, u = 0..K-1 (the
   paper splits the s labels into P groups of size K in any way; s is padded
   with zero labels to K P).  The coefficient matrix is then a reshape of the
   (s, c) label array, no transpose.
4. Eq. 1 reads "for all tau in [k_C - z_s]" for r_{i,p,tau}: the randomness
   has z_s coefficients (tau in [z_s]); r' sums over I(e_t), not [n]; the
   answer of Sec. VI sums over t in I(i), not [T].
5. Invertibility of P needs only distinct nonzero points: its diagonal is
   sum_{i in I(e_j)} nu_{j,i} alpha_i^(-1) = (-1)^(rho+1) / prod_{i in I(e_j)} alpha_i
   (sum of residues of 1 / (x prod (x - alpha_i))), so the field condition
   q > rho + k_C - z_s - 1 of Lemma 2 is not required; we require
   n <= q - 1 (distinct alpha^i) and, for quantized labels, the capacity check
   q >= (gamma - 1) n of Sec. V-a (which, q being prime, implies that the sum of
   rho <= n labels never wraps).

Measured (bench/test_osfl.py, n = 100, T = 20, rho = 51, z_s = z_q = 5,
s = 10^5, c = 10, EMBEDDING_PRIME, 2-core Zen 5, 2026-11-21; ratios are
matmul seconds on the stage's own product shape over stage seconds, best of
the rounds, alternating in one process): sharing 46 M label elements/s
(2.9 G multiply-adds/s, 0.9-1.1 of matmul); answering 0.66 G elements/s (2.2x
the kernel on the 1-row shape, 0.3 of its 8-row rate), 0.16 G/s with the
symmetric mask; reconstruction 97 M answer elements/s (0.8-0.9 of matmul).

Randomness: shares and queries use ``secea_fast.prg`` (AES-CTR seeded from
``secrets``); an ``rng`` argument must be a ``secea_fast.prg.Prg`` stream, a
``numpy.random`` or ``random`` generator is refused.  ``numpy.random`` is used
only for the simulation data of ``distillation_example``, always through an
explicit Generator.

A shared symmetric-privacy seed must serve one retrieval only: a client
answers at most once per Client object.
"""
from ...nt import primitive_root
from .params import Assignment, OSFLParams, encode_shares, query_values, symmetric_mask
from .messages import MAX_CLIENTS, Answer, Query, ShareMessage
from .parties import Client, Federator
from .round import OSFLRoundResult, run_round
from .session import ClientSession, FederatorSession, ProtocolError
from .baseline import approach1
from .costs import elements, rates, star_product_k
from .approaches import GXSTPIR, Approach2, ApproachResult, StarProduct, approach2, gxstpir, star_product
from .distillation import distillation_example, quantize

__all__ = ["Assignment", "OSFLParams", "Client", "Federator", "ShareMessage", "Query", "Answer",
           "OSFLRoundResult", "run_round", "approach1", "rates", "star_product_k",
           "elements", "approach2", "star_product", "gxstpir", "Approach2", "StarProduct", "GXSTPIR",
           "ApproachResult",
           "primitive_root", "encode_shares", "query_values", "symmetric_mask", "quantize",
           "distillation_example", "MAX_CLIENTS", "ClientSession", "FederatorSession",
           "ProtocolError"]
