"""One module per verification algorithm (VERIFIERS.md). The registry lives in decoding/verify/registry.py."""
