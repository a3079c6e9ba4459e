"""SecEA-PHE: the shorter version of SecEA (Tang, Zhu, Li, Sun 2022, "Secure
Embedding Aggregation for Federated Representation Learning", Sec. III-B,
eqs. 11-16; worked example Sec. III-C; references in docs/papers.md), whose
responses travel under Paillier encryption.

Modules: ``params`` (``PHEParams``), ``messages`` (``CipherMessage``),
``parties`` (``Client``, ``Server``), ``keys`` (the Paillier public keys
signed under the roster and checked by every receiver), ``layer``
(``PaillierLayer``: the Paillier step composed into SecEA's sessions),
``round`` (``run_round``, ``aggregate``, the CLI job).  Everything public is re-exported here.

Everything up to the response is SecEA (:mod:`..secea`): the private
entity union, the Lagrange-coded sharing y_v (eqs. 3-8) and the coded
queries q_{n,v,e} (eqs. 9-11) are the ``secea.Client`` methods, reused
unchanged.  The retrieval differs (Sec. III-B):

1. client v computes A_{v,n,e} = <q_{n,v,e}, y_v> over F_p (the same
   response product as SecEA) and sends PHE.Enc(A_{v,n,e}, pk_n) under the
   *querying* client's public key to the server (the paper: "client v sends
   a PHE-encrypted version ... of the response A_{v,n,e} to server");
2. the server, for each querier n and entity e, draws r_{n,e} and the noise
   polynomial psi_{n,e} (eq. 12: psi(beta_k) = 0, psi(alpha_k) = z^k for
   k <= K+2T-1) and returns
   Y~ = (A~)^{r_{n,e}} * PHE.Enc(psi_{n,e}(alpha_v), pk_n)          (eq. 13);
3. client n decrypts every Y~_{v,n,e}, interpolates Y_{n,e}(x) (eq. 14) and
   evaluates it at beta_1..beta_K: (r S, r c) with S = sum_v 1(e in E_v) h_{v,e}
   and c the number of holders (eqs. 15-16); the mean is (r S) / (r c) = S / c.

Parties are ``Client`` (a ``secea.Client`` with a Paillier key pair) and
``Server`` (a ``secea.Server`` whose ``noise`` works on ciphertexts);
ciphertext messages are ``CipherMessage`` (versioned bytes, validated).
They run inside SecEA's sessions: ``PaillierLayer`` composes the Paillier
step into ``secea.session.ClientSession`` / ``ServerSession``, so the stage
machine and every deployment rule are SecEA's.
``run_round`` simulates a full round (in one process: those sessions over
SecEA's loopback) with per-phase CPU seconds,
``aggregate`` returns the global embeddings (the
``secea-fast run --protocol secea-phe`` job is ``secea_fast.jobs.secea_phe_job``).

Arithmetic: Z_n against F_p, and the capacity argument
--------------------------------------------------------
The paper writes eq. (13) as if Paillier plaintexts were elements of F.  They
are residues mod the Paillier modulus n (2048 bits by default), while the
responses live in F_p (p = ``EMBEDDING_PRIME``, 50 bits).  We lift every
F_p value to its representative in [0, p) and let Paillier compute over the
integers: the decrypted plaintext of one value is the *integer*

    V = r A + psi + p u,    0 <= A, psi < p,  1 <= r < p,  0 <= u < 2^U,

and the client keeps V mod p = r A + psi mod p, which is exactly the F_p
value of eq. (13) as long as nothing wraps mod n.  With U = bits(p) + sigma,

    V <= (p-1)^2 + (p-1) + p (2^U - 1) = p (p - 2 + 2^U) < p 2^(U+1) <= 2^L,
    L = 2 bits(p) + sigma + 1                    (``PHEParams.slot_bits``)

so every value fits an L-bit slot (181 bits for p of 50 bits and
sigma = 80); a ciphertext carries ``slots = (bits(n) - 1 - 32) // L``
slots (the paillier packing layout, 11 for a 2048-bit key), so its
plaintext stays below 2^(bits(n)-33) < n: no slot carries into the next and
no reduction mod n ever happens.  ``PHEParams`` checks these bounds and
``tests/test_secea_phe.py`` pins the result bit for bit against the
plaintext sums.

Deviations and choices, each pinned by a test:

* Statistical smudging p u (not in the paper).  Without it the client would
  decrypt the integer r A + psi < p^2, whose quotient floor((r A + psi)/p)
  is not part of the F_p value: across v it reveals the ratios
  A_v / A_w ~ floor(r A_v / p) / floor(r A_w / p) of the *un-noised*
  responses, i.e. information about other clients' embeddings that eq. (13)
  was meant to hide.  The server therefore encrypts psi + p u, u uniform
  in [0, 2^U) from its CSPRNG stream; the quotient floor(V/p) = u + carry,
  carry <= p, is within statistical distance 2^-sigma of uniform
  (``stat_bits`` = sigma, default 80).  V mod p is unchanged.
* Packing.  The sub = ceil((d+1)/K) coordinates of one (n, e, v) share the
  same r_{n,e}, so they go into ceil(sub / slots) packed ciphertexts
  (eq. 13 applied slot-wise by one exponentiation); entities are never
  packed together, because each has its own r_{n,e}.  The padding slots of
  the last ciphertext of a row carry 0 and decrypt to 0.
* r_{n,e} is uniform in F_p^* = [1, p) (the paper: "from F"; r = 0 would
  erase the response), one per (round, n, e), the same for every v and every
  coordinate (eq. 14 needs a common factor), from the server's AES-CTR stream
  seeded by ``secrets``.
* The querier's own response (v = n) is encrypted under its own key and goes
  through the server like the others: the server must scale it by r_{n,e}
  and add psi_{n,e}(alpha_n) (the paper leaves this implicit).
* Output (eq. 16).  The client learns (r S, r c), not r; it cannot "divide
  by r" alone, and must not learn c (that is what r hides).  It computes
  x = (r S)(r c)^{-1} = S c^{-1} mod p and recovers the mean S / c as the
  rational a / b in lowest terms by rational reconstruction: the unique pair
  with 1 <= b <= N and |a| <= A_max = N * max|q(h)| (unique because
  p > 2 N A_max, checked by ``PHEParams``).  Only the mean is revealed (its
  reduced denominator divides c, as for any exact mean).  ``numerators`` /
  ``denominators`` hold a, b; the float embedding is the correctly rounded
  a / (b scale) (both operands are exact doubles).  SecEA's full version
  computes S / scale / c with two roundings, so the floats of the two
  protocols may differ in the last bit; the rationals are equal exactly.
* Offline / online split (Sec. IV-B): the queries and the server's noise
  ciphertexts Enc(psi + p u) do not depend on embeddings and are reported
  under ``offline``; the responders' encryptions are online (``encrypt``),
  the server's exponentiation and product are ``noise``.
* Keys: 2048-bit Paillier moduli by default; smaller keys only with
  ``insecure_keys=True`` (tests).  Queries keep SecEA's XOR pads; responses
  have no pad: Paillier under pk_n hides them from the server and from v
  (v only ever sees its own A).  Every Paillier and X25519 public key is
  signed under the roster over (round, attempt, index, party set) and
  checked by every receiver before use (``PaillierLayer`` in the sessions'
  ``keys`` and ``peers`` stages, ``keys.exchange_keys`` on the executor
  path; not in the paper: a relay that substituted pk_n would read every
  response to client n).
* Dropped responses are decoded by Reed-Solomon when K is below eq. (4)'s
  value (as in ``secea``); decryption failures (a ciphertext that is not a
  unit, a plaintext that overflows its slots) raise ValueError.
"""

from ..secea import DecodingError
from .messages import MAX_CLIENTS, CipherMessage
from .params import DEFAULT_BLOCK, DEFAULT_KEY_BITS, DEFAULT_STAT_BITS, PHEParams
from .parties import Client, Server
from .keys import check_paillier_key, exchange_keys, signed_paillier_key
from .layer import PaillierLayer
from .round import PHERoundResult, aggregate, run_round

__all__ = ["PHEParams", "Client", "Server", "CipherMessage", "PHERoundResult", "run_round",
           "aggregate", "DEFAULT_KEY_BITS", "DEFAULT_STAT_BITS", "DEFAULT_BLOCK",
           "DecodingError", "MAX_CLIENTS", "signed_paillier_key", "check_paillier_key", "exchange_keys",
           "PaillierLayer"]
