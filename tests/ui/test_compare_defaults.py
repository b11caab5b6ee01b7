"""The compare tab's default selection: every lossless verifier the shape allows, except the ones that are only
quick on a tiny vocabulary (ot_optimal's LP) when the pair is a real model; gls is ticked on every pair again
(its verify and its exact law are quick at V = 49152, docs/verifiers.md §17.7)."""

from ui.compare import SMALL_VOCABULARY_ONLY, default_keys
from ui.session import Controls


def test_a_real_pair_leaves_the_tiny_vocabulary_verifiers_unticked():
    keys = default_keys(Controls(pair="embedded", branching="3,2,2"))
    assert "rrs_wor" in keys and "traversal" in keys
    assert not set(SMALL_VOCABULARY_ONLY) & set(keys)
    assert "gls" in keys and "gls" not in SMALL_VOCABULARY_ONLY


def test_the_toy_pair_ticks_them():
    keys = default_keys(Controls(pair="toy", branching="3,2,2"))
    assert set(SMALL_VOCABULARY_ONLY) <= set(keys)
