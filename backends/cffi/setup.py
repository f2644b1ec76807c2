"""setuptools needs setup.py only for cffi_modules (the C extension)."""

from setuptools import setup

setup(cffi_modules=["build_engine.py:ffibuilder"])
