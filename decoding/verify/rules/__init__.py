"""One module per verification algorithm (docs/verifiers.md); fast/ holds the fast twins some of them name (`FAST`).
The registry lives in decoding/verify/registry.py."""
