"""viz is pure: importing every view must not pull in torch, a tokenizer library or gradio."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODULES = ("viz", "viz.layout", "viz.tokens", "viz.tree_figure", "viz.node_figure", "viz.text", "viz.stats")


def test_viz_does_not_import_torch_tokenizers_or_gradio():
    code = (
        "import sys\n"
        f"for m in {MODULES!r}: __import__(m)\n"
        "bad = sorted(m for m in ('torch', 'transformers', 'tokenizers', 'gradio') if m in sys.modules)\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"viz imported: {out.stdout.strip()}"
