"""Benchmarks (not tests): `python -m decoding bench <name>` or `python -m decoding.benchmarks.<name>`."""
