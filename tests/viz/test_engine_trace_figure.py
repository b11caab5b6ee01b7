"""viz/engine_trace.py: the cliff is marked where the analysis puts it (and nowhere without one), the expected
histogram is the exact one, and the module stays pure (no torch, gradio or tokenizer library)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from decoding.run import engine_shape, engine_traces
from viz import engine_trace

ROOT = Path(__file__).resolve().parents[2]


def cliffy() -> engine_traces.EngineRecord:
    per_step = [2] * 80 + [4] * 10 + [0] * 10
    return engine_traces.parse({"num_spec_steps": 100, "num_draft_tokens": 400,
                                "num_accepted_draft_tokens": sum(per_step), "num_spec_tokens": 4,
                                "acceptance_histogram": [per_step.count(j) for j in range(5)],
                                "per_step_accepted": per_step, "per_step_drafted": [4] * 100})


def test_the_cliff_is_marked_where_the_analysis_puts_it():
    analysis = engine_shape.analyse(cliffy(), engine_shape.expected((0.9, 0.9, 0.9, 0.9), 4, "flat"))
    figure = engine_trace.figure(analysis)
    lines = [s for s in figure.layout.shapes if s.type == "line"]
    assert len(lines) == 1 and lines[0].x0 == 2.5
    assert "cliff at position 3" in figure.layout.title.text
    expected = {t.name: t for t in figure.data}["specscope: exact P(j)"]
    assert list(expected.y) == pytest.approx([0.1, 0.09, 0.081, 0.0729, 0.6561])
    words = engine_trace.summary_markdown(analysis)
    assert "**Cliff at position 3: 0.111" in words and "| 3 | 90 | 10 | 0.1111 |" in words


def test_no_cliff_no_mark():
    record = engine_traces.read_file(ROOT / "assets" / "engine_traces" / "vllm_pr48915_detailed.json")
    figure = engine_trace.figure(engine_shape.analyse(record))
    assert not [s for s in figure.layout.shapes if s.type == "line"]
    assert "cliff" not in figure.layout.title.text


def test_the_view_is_pure():
    code = ("import sys\nimport viz.engine_trace\n"
            "print(','.join(m for m in ('torch', 'transformers', 'tokenizers', 'gradio') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
