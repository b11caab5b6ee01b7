"""specscope's wing for speed work: the benchmarks (`python -m bench speed|forwards|...`, never tests), the
draft head's training (`python -m bench train-head`) and the code that launches the app from outside
(`local_app`: the click benchmark and the browser tests share it).

The top of the dependency order: bench may import app, ui, viz and decoding; nothing imports bench
(`python -m decoding bench|train-head` reach it through decoding/cli/handoff.py at run time, by name).
"""
