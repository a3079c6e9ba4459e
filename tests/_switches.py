"""The library's kernel switches in tests: a setter such as
``lib.secea_dpf_set_xor4r`` takes the new setting and returns the one it
replaces."""
from __future__ import annotations


def under(setter, value, fn):
    """``fn()`` with the switch at ``value``; the previous setting put back."""
    prev = setter(value)
    try:
        return fn()
    finally:
        setter(prev)


def check_reports_previous(setter, default, first, steps):
    """Set ``first``, then each ``(value, previous)`` of ``steps``: each call
    returns the setting it replaced (``previous``, clamped values
    included); the switch was at ``default`` and is put back."""
    prev = setter(first)
    try:
        for value, before in steps:
            assert setter(value) == before, (value, before)
    finally:
        setter(prev)
    assert prev == default
