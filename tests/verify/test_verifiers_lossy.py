"""The lossy entries are labelled as such and miss p by exactly the amount computed by hand.

Case (docs/verifiers.md §12): p = [.50, .30, .15, .05], q = [.20, .50, .20, .10] over {A, B, C, D}.
"""

from __future__ import annotations

import pytest
import torch

from decoding.verify.registry import VERIFIERS, lossless_keys
from tests.verifier_oracles import mixed_law, tv

F64 = torch.float64
P = torch.tensor([0.50, 0.30, 0.15, 0.05], dtype=F64)
Q = torch.tensor([0.20, 0.50, 0.20, 0.10], dtype=F64)


def test_lossy_entries_are_labelled():
    assert [k for k, e in VERIFIERS.items() if not e.lossless] == ["greedy", "typical", "fuzzy", "cactus",
                                                                    "typical_medusa", "hsd"]
    assert set(lossless_keys()).isdisjoint({"greedy", "typical"})


@pytest.mark.parametrize("law,k", [("topk", 2), ("iid", 2), ("iid", 1)])
def test_greedy_always_emits_argmax_p(law, k):
    # Output is delta_A whatever the candidates (A accepted when drafted, else A emitted): TV = 1 - p(A) = .5
    out = mixed_law(VERIFIERS["greedy"].conditional, P, Q, k, law)
    assert out.tolist() == pytest.approx([1.0, 0.0, 0.0, 0.0], abs=1e-15)
    assert tv(out, P) == pytest.approx(0.5, abs=1e-15)


def test_typical_one_iid_candidate():
    # tau = .09 (H = 1.142): A, B, C are typical, D is not. One draft x ~ q: A (.2) -> A, B (.5) -> B,
    # C (.2) -> C, D (.1) -> argmax p = A. Output [.3, .5, .2, 0]; TV = (.2 + .2 + .05 + .05) / 2 = .25
    out = mixed_law(VERIFIERS["typical"].conditional, P, Q, 1, "iid")
    assert out.tolist() == pytest.approx([0.3, 0.5, 0.2, 0.0], abs=1e-15)
    assert tv(out, P) == pytest.approx(0.25, abs=1e-15)


def test_typical_top2_candidates():
    # top-2 of q = (B, A); B is typical and tested first, so B is always emitted: TV = 1 - p(B) = .7
    out = mixed_law(VERIFIERS["typical"].conditional, P, Q, 2, "topk")
    assert tv(out, P) == pytest.approx(0.7, abs=1e-15)
