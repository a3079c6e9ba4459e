"""Two-party distributed point functions (DPF) over Z_2^64, Z_2^32 and F_p.

The scheme is the tree DPF of Boyle, Gilboa and Ishai ("Function Secret
Sharing: Improvements and Extensions", CCS 2016, Fig. 1), written as in
SecEmb (Appendix F, Algorithms 4-7): ``path_gen`` / ``path_eval`` build and
walk the tree of seeds and control bits, ``convert_gen`` / ``convert_eval``
map the final seed to group elements with the last correction word CW^{n+1}.
``gen`` / ``eval_*`` are the composition.  For f(x) = beta if x == alpha else
0, ``eval(k0, x) + eval(k1, x) = f(x)`` in the group.

Construction (csrc/dpf/, bit-identical to the pure-Python twin
``secea_fast.dpf.reference``):

* Seeds are 128-bit blocks.  The PRG is G(s) = H_L(s) || H_R(s) with the
  correlation-robust fixed-key hash H_k(x) = AES_k(sigma(x)) xor sigma(x),
  sigma(lo, hi) = (hi, hi xor lo) (Guo, Katz, Wang, Yu, S&P 2020; Google
  distributed_point_functions' ``aes_128_fixed_key_hash``).  The keys k_L,
  k_R and k_V (conversion) are public constants, SHA-256(label)[:16] of
  ``reference.FIXED_KEY_LABELS``.  The control bit t of each child is bit 0 of
  its hash output and is cleared in the seed.
* Level i consumes bit n - i of alpha (most significant first).
* t_0^(0) is random and t_1^(0) = 1 - t_0^(0); seeds come from ``secrets``.
* Convert(s): block j of the stream H_V(s xor j); Z_2^64 takes 64-bit words,
  Z_2^32 32-bit words, F_p reduces each 128-bit block mod p.
* Conversion domains: ``convert_gen`` / ``convert_eval`` /
  ``convert_accumulate`` take a public ``domain`` D < 2^64 and use
  Convert_D(s), block j = H_V(s xor (j + D 2^64)).  Keys (``gen``, ``eval_*``)
  use D = 0.  A path that carries two payloads (SecEmb reuses the retrieval
  path for the aggregation) must convert them in different domains: the
  correction words are CW_D = (-1)^t1 (beta_D - Convert_D(s_0) +
  Convert_D(s_1)), and with one domain for both a server would subtract them
  and learn beta - beta'.  With different domains the masks are outputs of
  the correlation-robust hash on distinct inputs under the other server's
  secret seed s_{1-b}, hence independent, and each CW is uniform on its own.
  A ``PathSecret`` remembers the domains it has converted in and refuses a
  second payload in the same one.
* ``early=True`` (scalar Z_2^64 / Z_2^32 payloads) stops the tree e levels
  early (e = 3 for Z_2^64, 4 for Z_2^32): four Convert blocks then hold the
  2^e outputs of a leaf and CW^{n+1} is 512 bits.  A 2^n domain costs
  2^(n-e+1) tree blocks plus 2^(n-1) conversion blocks: 0.75 2^n for e = 3
  (e = 1: 1.5 2^n, 1.44 ms at n = 20; e = 2: 2^n, 1.09 ms; e = 3: 0.81 ms).  It is the
  default (``early=None``) wherever the payload allows it: scalar Z_2^64 /
  Z_2^32 payloads.  Vector and F_p payloads keep the depth-n tree (a leaf
  cannot pack several outputs of them), and so do keys made with
  ``early=False``, which SecEmb uses to reuse the path (``path_key``,
  ``Key.from_path``, ``path_gen``).

Deviations from the paper (documented, tested):

* Algorithm 6 as printed takes ``s <- s^L`` on the right branch; the correct
  step (BGI16) takes s^R, which this code does.
* G outputs 2 x 128 bits, not 2(lambda + 1): t is carved out of the seed, so
  seeds have 127 effective bits (the usual packing, as in Google's
  implementation).
* Convert for vector payloads and F_p is specified here (the paper leaves
  it abstract); F_p conversion has statistical distance <= p / 2^128 from
  uniform.
* Early termination (the default for scalar Z_2^64 / Z_2^32 payloads)
  shortens the tree; such keys have no depth-n path and cannot be split into
  path + CW.

Key bytes (``Key.to_bytes``): a 24-byte little-endian header
``magic "SDPF" | version u8 | party u8 | log_domain u8 | flags u8 (bit 0
early, bit 1 vector payload) | group id u8 (0 u64, 1 u32, 2 F_p) | 3 zero
bytes | d u32 | modulus u64 (0, 2^32 or p)`` followed by the key body of
csrc/include/secea.h.  Path keys use magic "SDPP" with group, d, modulus 0.

Modules, by concern: ``params`` (``Params``: the one parameters object),
``keys`` (the key types and key generation), ``eval`` (point, full-domain
and fused dot-product evaluation), ``path`` (SecEmb's path/convert split,
its secrets and the servers' fused kernels); the private ``_layout`` holds
the byte layout and argument checks they share.  This package re-exports
their public names.
"""
from .eval import FULL_PARALLEL_MIN_OUTPUTS, eval_full, eval_full_batch, eval_full_dot, eval_points
from ._layout import MAX_FULL_LOG_DOMAIN, MAX_LOG_DOMAIN, MAX_PAYLOAD, VERSION
from .keys import Beta, Key, KeyBatch, Keys, PathKey, PathKeyBatch, PathKeys, gen, gen_batch
from .params import Params
from .path import (PathSecret, PathSecretBatch, convert_accumulate, convert_eval, convert_gen, convert_gen_batch,
                   path_convert_accumulate, path_eval, path_eval_full, path_gen, path_gen_batch, path_xor_rows,
                   split_states)

__all__ = ["Params", "Key", "KeyBatch", "PathKey", "PathKeyBatch", "PathSecret", "PathSecretBatch", "gen",
           "gen_batch", "eval_points", "eval_full", "eval_full_batch", "path_gen", "path_gen_batch", "convert_gen",
           "convert_gen_batch", "path_eval", "convert_eval", "path_eval_full", "convert_accumulate",
           "path_convert_accumulate", "path_xor_rows", "eval_full_dot", "split_states", "MAX_LOG_DOMAIN",
           "MAX_FULL_LOG_DOMAIN", "MAX_PAYLOAD"]
