"""Verification maths: pure functions of p (target) and q (draft) rows, no models, no KV caches.

Owns the candidate laws (`laws`), one module per published rule (`rules/`), the `VERIFIERS`
registry (`registry`), the draft tree data type (`tree`) and the walk that lifts a node-level rule
to a tree (`walk`), and the generic theory (exact acceptance, optimal and membership bounds).
May import torch and numpy only: never `decoding.models`, `decoding.run`, gradio or viz.
"""
