"""SecEmb: two-server private embedding retrieval and sparse secure aggregation
(Mai et al. 2025, Sec. 4 and Algorithm 3; padding Appendix C; dense updates
Appendix D; DP noise Appendix G; dropout and range limits Appendix L.2;
references in docs/papers.md).

Modules: ``params`` (parameters, fixed point, shares, padding), ``messages``,
``parties`` (``User``, ``Server``: the computations), ``session``
(``UserSession``, ``Server1Session``, ``Server0Session``: every rule of a
deployment -- authenticated keys, stage order, round binding, answer once,
aggregate once over at least ``min_users``, no replay), ``channel`` (the
sealed user <-> server 1 channel), ``transport`` (the in-memory loopback
and its fault wrapper), ``round`` (``run_round`` over the sessions,
``plaintext_check``).  Everything public is re-exported here.

Parties
-------
* ``User``: pads or truncates its rated items to m' (Algorithm 1), generates
  one DPF path per item (Algorithm 7, ``dpf.path_gen_batch``), sends each
  server its path keys as the retrieval request and reconstructs its
  embeddings from the two answers (eq. 4, as XOR: below); then encodes its
  gradient rows as vector payloads on the *same* paths, sending only
  CW^{n+1} per row (Sec. 4.3.2, Algorithm 5), and additive shares of its
  dense update (Appendix D).
* ``Server``: answers retrieval with the XOR of the rows Q_j whose leaf has
  control bit t_j = 1 (``dpf.path_xor_rows``), and aggregates sum_u sum_i
  ConvertEval(...) over all items j (Algorithm 3, the fused
  ``dpf.path_convert_accumulate``) plus the dense shares (eq. 12),
  optionally adding Gaussian noise to its share (Appendix G, eq. 14).
  Server 0 reconstructs.

The table is Z_2^64 fixed point: x -> round(x 2^f) as a two's complement
64-bit word.  The aggregation is over Z_2^b, b = ``agg_bits`` (64, or the
paper's 32).  ``SecEmbParams`` derives the per-user range R_u = (R - 1)/n_p
of Appendix L.2 (R = 2^(b-1) / 2^f) and users refuse values outside it, so
the sum over n_p users never wraps.

Why reusing the retrieval path for the aggregation is private
-------------------------------------------------------------
The retrieval key and the aggregation upload of a slot share the PathGen
output (s_0^(n), s_1^(n), t_1^(n)) at the slot's item alpha, as Sec. 4.3.2
intends: only CW^{n+1} is uploaded the second time.  Each final correction
word is the payload masked by a conversion of the final seeds,
CW = (-1)^{t_1} (beta - Convert(s_0) + Convert(s_1)), and server b never sees
s_{1-b}^(n) (the path part of its key is one share of a DPF key of Boyle,
Gilboa and Ishai, CCS 2016, which hides alpha and the other share's seeds).
If both correction words used the same conversion output, as Algorithm 5 read
literally does for coordinate 0, server b could subtract them and learn
beta_agg[0] - beta_ret: +-1 on padding slots (so the number of real items,
which PadOrTrunc exists to hide) and the first coordinate of every real
gradient row.  Here the retrieval keys convert in domain 0 (ordinary DPF
keys) and the aggregation in ``AGGREGATION_DOMAIN``: its masks are blocks
H_V(s_{1-b} xor (j + D 2^64)), outputs of the correlation-robust hash on
inputs distinct from the retrieval's H_V(s_{1-b}), so the d + 1 masks of a
slot are independent and uniform to server b, and so is each correction word
whatever the payloads.  ``dpf.convert_gen`` refuses a second payload in one
domain on one path, so the reuse cannot creep back.  tests/test_views_secemb.py
draws each server's whole view for 3 against 8 real items and for two
gradient sets and checks that the views are identically distributed.

Deviations from the paper, each documented where it is implemented:

* Algorithm 5 (ConvertGen) on a reused path: the aggregation converts in its
  own domain (above); one Convert for both payloads would leak them.
* Retrieval (eq. 3) is the XOR form of the DPF PIR of Boyle, Gilboa and Ishai
  (2016): server b answers z_b = XOR_j t_bj Q_j with the control bits t_bj of
  its path key's leaves, and since t_0j xor t_1j = [j = alpha] (off-path
  nodes of the two trees are equal, on-path ones differ in t), z_0 xor z_1 =
  Q_alpha exactly.  Eq. 3's sum_j Eval_b(j) Q_j over Z_2^64 gives the same
  row but needs a retrieval correction word per key, one Convert block per
  leaf and m d 64-bit multiplications per key; the XOR form needs none of
  them, and a server's view is its path key alone (a subset of what eq. 3
  gives it), so privacy is unchanged.  The retrieval therefore carries no
  payload in any conversion domain; the aggregation keeps its own domain.

* Algorithm 2 (PadOrTruncEmb) samples the kept rows independently of
  Algorithm 1; both must keep the *same* items (the gradient of item i must go
  on item i's path), so the user draws one selection and uses it for both.
* The paper's per-sample clipping reads g max{1, Delta/||g||}; clipping is
  g min{1, Delta/||g||} (Abadi et al. 2016), applied here to each gradient row.
* Servers recompute the leaf states of the retrieval paths in the aggregation
  stage instead of storing them (Algorithm 3 stores m' x m seeds per user:
  18.6 MB per user at the MovieLens-1M shape); the result is identical.
"""

from .messages import AggregateShare, AggregationUpload, RetrievalRequest, RetrievalResponse
from .params import (AGGREGATION_DOMAIN, REQUEST_VERSION, UPLOAD_VERSION, SecEmbParams, additive_shares, count_shares,
                     decode_fixed, encode_fixed, encode_table, gaussian_sigma, pad_or_trunc_idx,
                     unified_m_prime)
from .parties import Server, User, reconstruct_aggregate
from .round import SecEmbRoundResult, plaintext_check, run_round
from .channel import ProtocolError, SealedChannel, SealError
from .session import MIN_USERS, Server0Session, Server1Session, UserSession
from .transport import Envelope, Faults, Loopback

__all__ = ["SecEmbParams", "User", "Server", "RetrievalRequest", "RetrievalResponse",
           "AggregationUpload", "AggregateShare", "pad_or_trunc_idx", "run_round",
           "SecEmbRoundResult", "plaintext_check", "reconstruct_aggregate", "gaussian_sigma",
           "count_shares", "unified_m_prime", "encode_fixed", "decode_fixed", "encode_table",
           "additive_shares", "AGGREGATION_DOMAIN", "REQUEST_VERSION", "UPLOAD_VERSION",
           "ProtocolError", "SealError", "SealedChannel", "UserSession", "Server1Session", "Server0Session",
           "MIN_USERS", "Envelope", "Loopback", "Faults"]
