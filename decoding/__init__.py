"""specscope's decoding side: everything that is not drawing or UI.

Subpackages, by concern (dependencies point one way: cli -> lab, run -> models -> verify):
- `verify/`: pure maths on [V] tensors and draft trees: candidate laws, the verification rules,
  the VERIFIERS registry, the tree walk, theory and bounds. Imports no models and no run.
- `models/`: model pairs (embedded, lookup, toy, custom), loading, and the one-pass tree forward.
- `run/`: the step loop (draft -> score -> verify -> commit -> record), configs and the trace schema.
- `cli/`: `python -m decoding ...` (the benchmarks are the top-level `bench` package).
Nothing here imports gradio or viz.
"""


def __getattr__(name: str):
    """`from decoding import FASTEST` without importing anything heavy when decoding is imported."""
    if name == "FASTEST":
        from decoding.fastest import FASTEST

        return FASTEST
    raise AttributeError(f"module 'decoding' has no attribute {name!r}")
