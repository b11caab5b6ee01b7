"""The command line: `python -m decoding generate|compare|certify ...`.

The top of decoding's dependency order: may import every other part of `decoding`, never gradio or viz.
The benchmarks and the head's training live in the top-level `bench` package; `bench ...` and
`train-head ...` here hand over to it by name (handoff.py).
"""
