"""Pickle-free wire formats for keys and ciphertexts.

Keys, binary (version 1)::

    public:  b"SECEA-PHE-PK" || 0x01 || field(n)
    private: b"SECEA-PHE-SK" || 0x01 || field(p) || field(q)
    field(x) = uint32_be(len) || x as len big-endian bytes, minimal (no leading
               zero byte), 1 <= len <= MAX_FIELD_BYTES

Keys, JSON (version 1): ``{"kind":"secea_fast.paillier.PublicKey",
"version":1,"n":"<hex>"}`` and ``{"kind":"secea_fast.paillier.PrivateKey",
"version":1,"n":...,"p":...,"q":...}``, integers as lowercase hex without
prefix or leading zeros; no other members, none twice, in this order, no
whitespace: exactly the text ``to_json`` writes (one key, one text).  The
private forms hold the factors with p < q.

Short-exponent keys (the other variant; never read as textbook keys nor
the reverse): binary ``b"SECEA-PHS-PK" || 0x01 || field(n) || field(hs) ||
field(exponent_bits)`` and ``b"SECEA-PHS-SK" || 0x01 || field(p) || field(q)
|| field(hs) || field(exponent_bits)``; JSON kinds
``secea_fast.paillier.ShortExponentPublicKey`` (members n, hs, ebits) and
``secea_fast.paillier.ShortExponentPrivateKey`` (n, p, q, hs, ebits).

Ciphertexts: each as 2 * ceil(bits / 8) big-endian bytes (bits =
n.bit_length()), concatenated, no header; under a short-exponent key the
same after the 13-byte tag ``b"SECEA-PHS-CT" || 0x01`` (13 is below every
ciphertext width, so tagged data never has a length that is a multiple
of the width, and untagged data is refused by a short-exponent key).

Every parser raises ValueError on malformed, truncated, over-long or
non-canonical input, and the keys it returns pass the same validation as
freshly constructed ones.
"""
from __future__ import annotations

import json
import re

MAX_FIELD_BYTES = 2048          # 16384-bit integers (the largest supported modulus)
PUBLIC_MAGIC = b"SECEA-PHE-PK"
PRIVATE_MAGIC = b"SECEA-PHE-SK"
VERSION = 1
PUBLIC_KIND = "secea_fast.paillier.PublicKey"
PRIVATE_KIND = "secea_fast.paillier.PrivateKey"
SHORT_PUBLIC_MAGIC = b"SECEA-PHS-PK"
SHORT_PRIVATE_MAGIC = b"SECEA-PHS-SK"
SHORT_PUBLIC_KIND = "secea_fast.paillier.ShortExponentPublicKey"
SHORT_PRIVATE_KIND = "secea_fast.paillier.ShortExponentPrivateKey"
SHORT_CT_TAG = b"SECEA-PHS-CT" + bytes([VERSION])
_HEX = re.compile(r"[1-9a-f][0-9a-f]*\Z")


def as_bytes(data, name="data") -> bytes:
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"{name} must be bytes, got {type(data).__name__}")
    return bytes(data)


def field(x: int) -> bytes:
    raw = x.to_bytes((x.bit_length() + 7) // 8, "big")
    return len(raw).to_bytes(4, "big") + raw


def encode_key(magic: bytes, *ints) -> bytes:
    return magic + bytes([VERSION]) + b"".join(field(int(x)) for x in ints)


def decode_key(data, magic: bytes, count: int, what: str) -> list:
    data = as_bytes(data)
    if not data.startswith(magic):
        raise ValueError(f"not a serialized {what} (bad magic)")
    pos = len(magic)
    if len(data) <= pos:
        raise ValueError(f"truncated {what}: no version byte")
    if data[pos] != VERSION:
        raise ValueError(f"unsupported {what} format version {data[pos]} (expected {VERSION})")
    pos += 1
    out = []
    for i in range(count):
        if len(data) < pos + 4:
            raise ValueError(f"truncated {what}: field {i} has no length")
        length = int.from_bytes(data[pos:pos + 4], "big")
        pos += 4
        if not 1 <= length <= MAX_FIELD_BYTES:
            raise ValueError(f"{what} field {i} has invalid length {length}")
        if len(data) < pos + length:
            raise ValueError(f"truncated {what}: field {i} needs {length} bytes, "
                             f"{len(data) - pos} left")
        if data[pos] == 0:
            raise ValueError(f"{what} field {i} is not minimally encoded (leading zero byte)")
        out.append(int.from_bytes(data[pos:pos + length], "big"))
        pos += length
    if pos != len(data):
        raise ValueError(f"{len(data) - pos} trailing bytes after the {what}")
    return out


def encode_json(kind: str, **ints) -> str:
    obj = {"kind": kind, "version": VERSION}
    obj.update({k: format(int(v), "x") for k, v in ints.items()})
    return json.dumps(obj, separators=(",", ":"))


def decode_json(text, kind: str, names: tuple, what: str) -> dict:
    if isinstance(text, (bytes, bytearray, memoryview)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"serialized {what} is not UTF-8: {exc}") from None
    if not isinstance(text, str):
        raise TypeError(f"expected a JSON str or bytes, got {type(text).__name__}")
    if len(text) > 16 * MAX_FIELD_BYTES:
        raise ValueError(f"serialized {what} is too long ({len(text)} characters)")
    try:
        obj = json.loads(text, object_pairs_hook=_no_duplicates)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise ValueError(f"malformed {what} JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise ValueError(f"{what} JSON must be an object, got {type(obj).__name__}")
    expected = {"kind", "version", *names}
    if set(obj) != expected:
        raise ValueError(f"{what} JSON must have exactly the members {sorted(expected)}, "
                         f"got {sorted(obj)}")
    if obj["kind"] != kind:
        raise ValueError(f"JSON kind is {obj['kind']!r}, expected {kind!r}")
    if type(obj["version"]) is not int or obj["version"] != VERSION:
        raise ValueError(f"unsupported {what} JSON version {obj['version']!r} (expected {VERSION})")
    out = {}
    for name in names:
        v = obj[name]
        if not isinstance(v, str) or len(v) > 2 * MAX_FIELD_BYTES or not _HEX.match(v):
            raise ValueError(f"{what} JSON member {name!r} must be a lowercase hex string "
                             "without prefix or leading zeros")
        out[name] = int(v, 16)
    if text != encode_json(kind, **out):
        raise ValueError(f"{what} JSON is not in canonical form (members kind, version, "
                         f"{', '.join(names)} in this order, no whitespace)")
    return out


class _DuplicateMember(json.JSONDecodeError):
    pass


def _no_duplicates(pairs):
    """``object_pairs_hook`` refusing an object with a member twice (plain
    ``json.loads`` keeps the last one silently)."""
    obj = {}
    for k, v in pairs:
        if k in obj:
            raise _DuplicateMember(f"member {k!r} appears twice", "", 0)
        obj[k] = v
    return obj


def ciphertext_width(bits: int) -> int:
    return 2 * ((bits + 7) // 8)


def json_kind(text) -> object:
    """The ``kind`` member of a key's JSON, or None (for error messages only)."""
    try:
        obj = json.loads(text)
    except (ValueError, TypeError, RecursionError):
        return None
    return obj.get("kind") if isinstance(obj, dict) else None


def ciphertexts_to_bytes(cts: list, n2: int, width: int) -> bytes:
    out = []
    for i, c in enumerate(cts):
        if not 0 < c < n2:
            raise ValueError(f"ciphertext {i} is not in (0, n^2)")
        out.append(int(c).to_bytes(width, "big"))
    return b"".join(out)


def ciphertexts_from_bytes(data, n2: int, width: int) -> list:
    data = as_bytes(data)
    if len(data) % width:
        raise ValueError(f"ciphertext bytes: length {len(data)} is not a multiple of the "
                         f"{width}-byte ciphertext width (truncated or wrong key)")
    out = []
    frm = int.from_bytes
    for i in range(0, len(data), width):
        c = frm(data[i:i + width], "big")
        if not 0 < c < n2:
            raise ValueError(f"ciphertext {i // width} is not in (0, n^2)")
        out.append(c)
    return out
