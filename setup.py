"""Build hook: the C kernels are compiled by cffi (out-of-line API mode).

All metadata lives in pyproject.toml; this file only wires cffi_modules.
"""
from setuptools import setup

setup(cffi_modules=["secea_fast/_native/build.py:ffibuilder"])
