"""The command line (`python -m decoding generate|bench ...`) and the benchmarks.

The top of the dependency order: may import every other part of `decoding`, never gradio or viz.
"""
