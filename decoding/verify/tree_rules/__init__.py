"""Tree-level (sequence-level) verifiers: one module per algorithm; entries in verify/registry.py."""
