"""One module per verification algorithm (docs/verifiers.md). The registry lives in decoding/verify/registry.py."""
