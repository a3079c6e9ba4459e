"""Several small non-negative integers per Paillier plaintext.

Layout: value i of a batch goes to plaintext i // slots, slot i % slots, at
bit offset (i % slots) * slot_bits (slot 0 is the least significant).  A
plaintext holds ``slots = usable_bits // slot_bits`` values, with

    usable_bits = n.bit_length() - 1 - GUARD_BITS.

The "- 1" keeps every packed plaintext below n (no reduction mod n ever
happens while slots do not overflow).  The guard band of ``GUARD_BITS`` zero
bits above the slots catches an overflow of the top slot: the decrypted
plaintext is then >= 2^(slots * slot_bits) and ``decrypt_packed`` raises
instead of returning wrapped values.  A carry between two lower slots cannot
be seen after decryption, so it must be excluded beforehand with the capacity
rule of ``check_packing``:

    slot_bits >= value_bits + ceil(log2(additions)) + scalar_bits

for a result that is the sum of ``additions`` packed ciphertexts (1 = no
addition), each slot of which holds values < 2^value_bits multiplied by
scalars < 2^scalar_bits (for chained scalar multiplications, add their bit
sizes).  Only non-negative values and non-negative scalars keep the slots
apart: ``neg`` / negative scalars / ``add_plain`` of a value not packed the
same way do not.
"""
from __future__ import annotations

import gmpy2

from .._checks import check_int
from ._core import ceil_log2

GUARD_BITS = 32


def usable_bits(key_bits: int) -> int:
    """Plaintext bits available to slots for a key whose n has ``key_bits`` bits."""
    return key_bits - 1 - GUARD_BITS


def check_slot_bits(slot_bits) -> int:
    slot_bits = check_int(slot_bits, "slot_bits")
    if slot_bits < 1:
        raise ValueError(f"slot_bits must be >= 1, got {slot_bits}")
    return slot_bits


def slots_per_plaintext(key_bits: int, slot_bits: int) -> int:
    slot_bits = check_slot_bits(slot_bits)
    slots = max(0, usable_bits(key_bits)) // slot_bits
    if slots < 1:
        raise ValueError(f"slot_bits = {slot_bits} does not fit a {key_bits}-bit key "
                         f"({usable_bits(key_bits)} usable bits after the {GUARD_BITS}-bit guard band)")
    return slots


def check_packing(slot_bits: int, value_bits: int, additions: int = 1, scalar_bits: int = 0) -> int:
    """Refuse a slot size that could overflow; return the bits the rule requires.

    ``value_bits``: every packed value is < 2^value_bits; ``additions``: the
    number of packed ciphertexts summed slot-wise into the result (1 = none);
    ``scalar_bits``: every scalar applied with ``mul_scalar`` is
    < 2^scalar_bits (sum the bit sizes of chained multiplications).  Raises
    ValueError unless

        slot_bits >= value_bits + ceil(log2(additions)) + scalar_bits.

    >>> check_packing(64, 40, additions=1000, scalar_bits=10)
    60
    """
    slot_bits = check_slot_bits(slot_bits)
    value_bits = check_int(value_bits, "value_bits")
    additions = check_int(additions, "additions")
    scalar_bits = check_int(scalar_bits, "scalar_bits")
    if value_bits < 0:
        raise ValueError(f"value_bits must be >= 0, got {value_bits}")
    if additions < 1:
        raise ValueError(f"additions must be >= 1 (the number of summands), got {additions}")
    if scalar_bits < 0:
        raise ValueError(f"scalar_bits must be >= 0, got {scalar_bits}")
    need = value_bits + ceil_log2(additions) + scalar_bits
    if slot_bits < need:
        raise ValueError(
            f"slot_bits = {slot_bits} can overflow: {value_bits}-bit values summed {additions} times "
            f"with {scalar_bits}-bit scalars need slot_bits >= {value_bits} + "
            f"{ceil_log2(additions)} + {scalar_bits} = {need}")
    return need


def pack(values: list, slot_bits: int, slots: int) -> list:
    """Packed plaintexts (mpz) of validated values 0 <= v < 2^slot_bits."""
    return [gmpy2.pack(values[i:i + slots], slot_bits) for i in range(0, len(values), slots)]


def unpack(plaintexts, slot_bits: int, slots: int, count: int) -> list:
    """Slot values (ints) of ``count`` packed values; ValueError on a plaintext
    that reaches beyond its used slots (top-slot overflow or a foreign ciphertext)."""
    out: list[int] = []
    for j, m in enumerate(plaintexts):
        used = min(slots, count - j * slots)
        if m.bit_length() > used * slot_bits:
            raise ValueError(
                f"packed plaintext {j} overflows its {used} slots of {slot_bits} bits "
                f"(it has {m.bit_length()} bits): the operations exceeded the check_packing capacity "
                "or the ciphertext was not packed with this layout")
        vals = gmpy2.unpack(m, slot_bits)
        out.extend(int(v) for v in vals)
        out.extend([0] * (used - len(vals)))
    return out
