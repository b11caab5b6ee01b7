"""specscope's pure views: StepRecord -> plotly figure / table rows / HTML.

Never imports torch, a tokenizer or gradio (tests/test_viz_imports.py checks it), so a saved
trace replays on a machine without any model.
"""
