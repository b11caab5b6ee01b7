"""Speed decided where the code runs (docs/speed.md): calibrate this machine's costs, measure the pair's exact
acceptance, predict each draft shape's tokens per second, choose the fastest lossless one (or the target alone).

- `chooser.py`: pure arithmetic: expected tokens per step of a Branching shape from per-depth, per-width
  acceptance, its cost from `run.costs.StepCosts`, the search over shapes;
- `acceptance.py`: that acceptance, exact per node from recorded p and q rows;
- `products.py`: the product plan: per row count, the method (F.linear with MKL packing, oneDNN, OpenBLAS via
  numpy, split) whose whole target forward was fastest here;
- `machine.py`: what identifies a machine (CPU model, torch build, threads, device) and the cache file;
- `calibrate.py`: the timings and the acceptance run, cached as a small JSON a user can read;
- `others.py`: whether other processes shared the cores while it timed (then it is not cached).

May import run, models and verify; never gradio, viz, ui or bench.
"""
