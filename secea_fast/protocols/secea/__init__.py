"""SecEA: secure embedding aggregation (Tang, Zhu, Li, Zhang, Sun 2022,
"Fully Privacy-Preserving Federated Representation Learning via Secure
Embedding Aggregation", Sec. 4; references in docs/papers.md).

Modules: ``params`` (fields, evaluation points, matrices), ``messages``
(the wire type, pad domains), ``coding`` (union reconstruction,
Reed-Solomon decoding), ``parties`` (``Client``, ``Server``), ``round``
(``run_round``, ``aggregate``, ``entity_union``).  Everything public is
re-exported here.

Parties
-------
* ``Client`` (one per silo, index n = 0 .. N-1; the paper's n = 1 .. N):
  - private entity union (Sec. 4.1): f_n(x) = prod (x - e) (eq. 3), a random
    r_n of degree <= k-1, the 2Nk high-order terms s_n of the reversed
    Laurent series of r_n/f_n, masked with pairwise PRG streams (eq. 4);
    from the server's sum, rational reconstruction u/L and the roots of L;
  - Lagrange-coded sharing (Sec. 4.2, eqs. 6-12) of its expanded fixed-point
    embeddings (h, 1) / 0 for every entity of the union, with T noise
    sub-vectors, relayed through the server under pairwise one-time pads
    (Remark 1);
  - coded queries (Sec. 4.3, eqs. 13-16) for its own entities, computed
    offline (they do not depend on embeddings), answers
    A_{v,n,e} = <q_{n,v,e}, y_v> on the matmul kernel, and decoding
    (eq. 22) by interpolation, or by Reed-Solomon decoding when
    N > 2(K+T-1)+1 leaves redundancy.
* ``Server``: sums the masked union vectors (eq. 4), relays messages, and
  adds its noise psi_{n,e}(alpha_v) (eqs. 17-20) to every response.

Every message is a ``Message`` (kind, sender, receiver, round, block, one
2-D array) with versioned ``to_bytes`` / ``from_bytes`` and ``nbytes``.

Arithmetic
----------
Embeddings live in F_p for the 50-bit ``EMBEDDING_PRIME`` (one IFMA limb in
the response product) as fixed point with ``precision`` decimal digits
(SecEA(p) of Sec. 6); ``SecEAParams`` checks that the sum of N embeddings
bounded by ``bound`` cannot wrap (p > 2 N bound 10^precision).  Entity
hashes and the union live in the Goldilocks field (``hash_ids``).

Deviations and choices, each pinned by a test:

* Indices are 0-based in the API (client 0 is the paper's client 1).
* The noise polynomial (19) as printed has the factor
  prod_j (x - beta_j)/(alpha_i - beta_j), which makes psi(alpha_i) = z^i and
  psi(beta_j) = 0 only together with the second factor; we build psi as the
  unique polynomial of degree <= 2(K+T-1) with psi(beta_k) = 0 (17) and
  psi(alpha_i) = z^i for i <= K+2T-1 (18), which is what (19) intends.
  The worked example of Sec. 4.4 prints z^i = 3 s_i (Y_1 = A_1 + 3 s_1);
  ``tests/test_secea.py`` checks its query, noise and decoding coefficients.
* The paper leaves the querier's own response implicit: client n answers its
  own query locally, but the server must still add psi_{n,e}(alpha_n), so
  that response goes through the server under a pad only client n knows
  (like every other response: the server adds noise to padded values, which
  commutes with the pad).
* K defaults to eq. (7), floor((N+1)/2) - T; a smaller K may be passed to
  buy redundancy: responses are a Reed-Solomon codeword of length N and
  dimension k = 2(K+T-1)+1 (eq. 21), so s dropped (erased) and e corrupted
  responses are corrected whenever 2e + s <= N - k.  Beyond that bound
  decoding raises ``poly.DecodingError`` when it detects the excess, but a
  received word that lies within the decoding radius of another codeword
  decodes to it (no decoder can tell).  With no redundancy left (N - s = k,
  e.g. odd N with the default K, or exactly k responses received) every
  received word is a codeword: a corrupted response is neither corrected
  nor detected.  ``Client.decode`` therefore reports whether its result
  was checked (``DecodeResult.checked``, ``.redundancy``), and
  ``verify=True`` refuses unchecked results.
* Relay pads (Remark 1): the bulk messages between clients (shares y_{n,v},
  queries q_{n,v,e}) are padded by XOR with an AES-CTR keystream of the pair's
  seed (a one-time pad over 64-bit words, i.e. stream-cipher encryption,
  footnote 3's alternative) instead of adding PRG(a_{n,v}) in F_p: both hide
  the message perfectly given the keystream, and XOR needs no rejection
  sampling (0.4 instead of 1.5 ns per element).  Responses keep an F_p pad,
  because the server adds its noise under the pad (eq. 20), and the union
  vectors keep F_p masks, because they must cancel in the server's sum (eq. 4).
* Queries are sent divided by the public, nonzero c_v = l_{K+1}(alpha_v)
  and responder v multiplies its share by c_v once per round instead: the
  responses are eq. (20)'s exactly, every view is a public bijection of the
  paper's, and for T = 1 building a query needs no field multiplication
  (``Client.iter_queries``).
* Footnote 1's padding (a client with fewer than k entities repeats some of
  its own hashes) gives f_n repeated roots; ``poly.roots`` reports each once.
* Entity hashes are SHA-256 of a domain-separated, type-tagged encoding,
  reduced mod the Goldilocks prime (bias < 2^-64).  Two distinct entities
  of *different* clients colliding would merge them; the probability is at
  most M^2 / 2p: 2.7e-10 for M = 10^5 entities, 2.7e-8 for 10^6.  A
  collision inside one client raises.
"""
from .coding import DecodeResult, DecodingError, decode_values, gather_responses
from .messages import Message
from .params import PSU_PRIME, SecEAParams, hash_ids, max_clients
from .parties import Client, Server
from .round import PHASES, EntityRows, SecEARoundResult, aggregate, default_block_size, entity_union, plaintext_sums, run_round

__all__ = ["SecEAParams", "Client", "Server", "Message", "hash_ids", "entity_union",
           "aggregate", "run_round", "SecEARoundResult", "PSU_PRIME", "DecodingError",
           "DecodeResult", "decode_values", "gather_responses", "max_clients",
           "default_block_size", "plaintext_sums", "PHASES", "EntityRows"]
