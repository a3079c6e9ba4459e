"""Protocols built on the kernels: each party is an object owning the
computations the paper assigns it; messages are small classes with
``to_bytes()`` / ``from_bytes()`` and a byte count (ARCHITECTURE.md)."""
