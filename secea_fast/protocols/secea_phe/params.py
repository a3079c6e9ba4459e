"""SecEA-PHE parameters (Tang, Zhu, Li, Sun 2022, Sec. III-B): the SecEA parameters plus
the Paillier key size, the statistical smudging bits and the slot packing
of responses into ciphertexts."""
from __future__ import annotations

from dataclasses import dataclass


from ... import paillier
from ..._checks import check_int
from ..secea import SecEAParams

DEFAULT_KEY_BITS = 2048
DEFAULT_STAT_BITS = 80
DEFAULT_BLOCK = 16          # query rows per block: ~N * 16 ciphertexts of work per response batch



# ----------------------------------------------------------------- parameters
@dataclass(frozen=True)
class PHEParams:
    """SecEA parameters plus the Paillier layout.

    ``base``: the ``SecEAParams`` (N, T, K, d, precision, bound, points);
    ``key_bits``: bits of every client's Paillier modulus (default 2048;
    fewer than ``paillier.MIN_BITS`` need ``insecure_keys=True``);
    ``stat_bits``: sigma of the smudging noise (>= 40);
    ``variant``: every client's Paillier variant, ``"textbook"`` (default)
    or ``"short-exponent"`` (``paillier.ShortExponentPublicKey``: faster
    encryption under an extra short-exponent assumption); a key of the
    other variant is refused (:func:`check_key`).

    Raises ValueError when a slot cannot hold r A + psi + p u, when a key
    has no room for one slot, or when rational reconstruction of the mean
    is ambiguous (p <= 2 N A_max)."""
    base: SecEAParams
    key_bits: int = DEFAULT_KEY_BITS
    stat_bits: int = DEFAULT_STAT_BITS
    insecure_keys: bool = False
    variant: str = paillier.TEXTBOOK

    def __post_init__(self):
        if not isinstance(self.base, SecEAParams):
            raise TypeError("base must be SecEAParams")
        kb = check_int(self.key_bits, "key_bits")
        sb = check_int(self.stat_bits, "stat_bits")
        if not isinstance(self.insecure_keys, bool):
            raise TypeError("insecure_keys must be a bool")
        if kb < paillier.MIN_BITS and not self.insecure_keys:
            raise ValueError(f"key_bits = {kb} is below {paillier.MIN_BITS}: pass insecure_keys=True "
                             "for test keys")
        if not paillier.MIN_INSECURE_BITS <= kb <= paillier.MAX_BITS:
            raise ValueError(f"key_bits must be in [{paillier.MIN_INSECURE_BITS}, "
                             f"{paillier.MAX_BITS}], got {kb}")
        if not isinstance(self.variant, str):
            raise TypeError(f"variant must be a str, got {type(self.variant).__name__}")
        if self.variant not in paillier.VARIANTS:
            raise ValueError(f"variant must be one of {paillier.VARIANTS}, got {self.variant!r}")
        if not 40 <= sb <= 256:
            raise ValueError(f"stat_bits must be in [40, 256], got {sb}")
        object.__setattr__(self, "key_bits", kb)
        object.__setattr__(self, "stat_bits", sb)
        p, L = self.p, self.slot_bits
        vmax = (p - 1) * (p - 1) + (p - 1) + p * ((1 << self.smudge_bits) - 1)
        if vmax >= 1 << L:                              # the capacity argument, checked
            raise AssertionError("slot capacity argument violated")
        if self.slots < 1:
            raise ValueError(f"a {kb}-bit key has {kb - 1 - paillier.GUARD_BITS} usable plaintext "
                             f"bits, fewer than one {L}-bit slot: use a larger key")
        amax, N = self.numerator_bound, self.base.N
        if not p > 2 * N * amax:
            raise ValueError(
                f"rational reconstruction of the mean needs p > 2 N A_max = {2 * N * amax} "
                f"(N = {N}, A_max = N * max|q(h)| = {amax}); p = {p}: lower the precision or bound")

    @property
    def p(self) -> int:
        return self.base.p

    @property
    def N(self) -> int:
        return self.base.N

    @property
    def smudge_bits(self) -> int:
        """U = bits(p) + sigma: u is uniform in [0, 2^U)."""
        return self.p.bit_length() + self.stat_bits

    @property
    def slot_bits(self) -> int:
        """L = 2 bits(p) + sigma + 1: r A + psi + p u < 2^L (module docstring)."""
        return 2 * self.p.bit_length() + self.stat_bits + 1

    @property
    def slots(self) -> int:
        """Slots per ciphertext: (key_bits - 1 - GUARD_BITS) // L (paillier's layout)."""
        return max(0, self.key_bits - 1 - paillier.GUARD_BITS) // self.slot_bits

    @property
    def cols(self) -> int:
        """Ciphertexts per (n, e, v): ceil(sub / slots)."""
        return -(-self.base.sub // self.slots)

    @property
    def row_values(self) -> int:
        """Slot values per (n, e, v) after zero padding: cols * slots."""
        return self.cols * self.slots

    @property
    def numerator_bound(self) -> int:
        """A_max = N * max|q(h)|: bound on the numerator of a mean in lowest terms."""
        b = self.base
        return b.N * b.fx.max_quantized(b.bound)


def check_key(pk, prm: PHEParams, who: str):
    """``pk`` (a key or its bytes) when it has the parameters' size and
    variant; ValueError naming ``who`` otherwise (the variants never mix)."""
    if isinstance(pk, (bytes, bytearray, memoryview)):
        cls = paillier.ShortExponentPublicKey if prm.variant == paillier.SHORT_EXPONENT else paillier.PublicKey
        pk = cls.from_bytes(pk, insecure=prm.insecure_keys)
    if not isinstance(pk, paillier.PublicKey):
        raise TypeError(f"{who}: expected a paillier.PublicKey or its bytes, got {type(pk).__name__}")
    if pk.variant != prm.variant:
        raise ValueError(f"{who}: a {pk.variant} Paillier key, the parameters' variant is {prm.variant!r} "
                         "(the two variants never mix)")
    if pk.bits != prm.key_bits:
        raise ValueError(f"{who}: key has {pk.bits} bits, the parameters say {prm.key_bits}")
    return pk
