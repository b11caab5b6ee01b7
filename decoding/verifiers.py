"""Kept for outside callers: `from decoding.verifiers import VERIFIERS` (the registry lives in decoding.verify)."""

from decoding.verify.registry import VERIFIERS

__all__ = ["VERIFIERS"]
