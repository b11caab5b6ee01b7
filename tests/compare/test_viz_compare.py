"""The compare figures and tables from recorded compare steps (toy pair); viz stays free of torch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from decoding.compare import runs, session
from decoding.models.pairs import load_pair
from decoding.run.config import DecodeConfig
from viz import compare as vc

ROOT = Path(__file__).resolve().parents[2]


def _record():
    cfg = DecodeConfig(verifier="rrs", branching=(3, 2, 2), temperature=0.8, max_new_tokens=8)
    run = session.start(load_pair("toy"), cfg, "the cat", ["rrs", "rrs_wor", "spectr", "pointmass"], mc_draws=60)
    return run.step().compare


def test_small_multiples_table_and_laws() -> None:
    record = _record()
    fig = vc.small_multiples(record)
    assert len(fig.data) == 3 * len(record.verdicts)
    rows = vc.node_table(record)
    assert len(rows) == sum(len(v.visits) for v in record.verdicts) and len(rows[0]) == len(vc.TABLE_HEADERS)
    laws = vc.length_law_figure(record)
    assert len(laws.data) == 2 * len(record.verdicts)


def test_each_title_names_the_column_whose_tree_it_judges() -> None:
    record = _record()  # rrs emits; spectr shares its iid tree, pointmass (any) judges the run's tree too
    titles = [a.text for a in vc.small_multiples(record).layout.annotations if "E[tokens]" in a.text]
    by_key = {v.key: t for v, t in zip(record.verdicts, titles, strict=True)}
    groups = {v.key: v.tree_group for v in record.verdicts}
    for v in record.verdicts:
        owner = next(k for k in by_key if groups[k] == groups[v.key])  # the first column of that tree
        assert ("same tree as" in by_key[v.key]) == (owner != v.key)
        if owner != v.key:
            assert f"same tree as {owner}" in by_key[v.key]
    assert "same tree as rrs" in by_key["spectr"] and "same tree as" not in by_key["rrs_wor"]


def test_runs_view() -> None:
    cfg = DecodeConfig(verifier="rrs", branching=(2, 2), temperature=0.8, max_new_tokens=6)
    res = runs.runs_json(runs.compare_runs(load_pair("toy"), cfg, "the cat", ["rrs", "rrs_wor"], [0, 1, 2]))
    assert len(vc.runs_table(res)) == 2
    for r in res.values():
        assert r["ci95"][0] <= r["block_efficiency"] <= r["ci95"][1] and len(r["per_seed"]) == 3
    assert len(vc.runs_figure(res).data) == 3


def test_viz_compare_imports_no_torch() -> None:
    code = "import sys, viz.compare; print([m for m in ('torch', 'gradio') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_token_text_in_the_compare_figure_is_text_not_markup() -> None:
    """A token such as '<b>' or 'say "hi"' is drawn as written: escaped for plotly's pseudo-HTML in node labels,
    hovers and the 'emits' line (it was put there raw)."""
    from dataclasses import replace

    from tests.viz.test_escaping import plotly_shows
    from viz.tokens import shorten, visible

    record = _record()
    hostile = "<b>x\"y"
    verdicts = tuple(replace(v, texts=tuple(hostile for _ in v.texts), emitted_texts=(hostile,))
                     for v in record.verdicts)
    fig = vc.small_multiples(replace(record, verdicts=verdicts))
    labels = [t for trace in fig.data if trace.text is not None for t in trace.text]
    hovers = [h for trace in fig.data if trace.hovertext is not None for h in trace.hovertext]
    emits = [a.text for a in fig.layout.annotations if a.text.startswith("emits")]
    assert labels and hovers and emits
    for s in labels + hovers + [e.replace("<b>", "", 1).replace("</b>", "") for e in emits]:
        assert "<" not in s, s
    assert all(plotly_shows(s) == shorten(visible(hostile), vc.NODE_LABEL) for s in labels)
    assert all(hostile[:4] in plotly_shows(e) for e in emits)
