"""HSD with its whole-draft coin capped like every other position: lossless, and block verification.

docs/verifiers.md §14.5. The published HSD (`hsd.py`) caps each prefix's joint target by the running
max of the prefix ratios, P~_k = P_k / M_k, for every branch below a prefix, but accepts the whole
draft with the uncapped min(1, r_g). Capping that last test too, min(1, P~_g / Q_g) = r_g / M_g, is
the one change that makes it lossless. It is then block verification (Sun et al. 2025) written in
HSD's terms, step law for step law (tests/verify/test_hsd.py): r_k / M_k is block's weight w_k,
S+ / max(S+, S-) its h_k, and (P~_k p_k - Q_k q_k)_+ its weighted residual. Block verification is
optimal among lossless verifiers of one draft chain, so no lossless form of HSD on a chain accepts more.
"""

from __future__ import annotations

from decoding.verify.tree_rules.hsd import Prefixes, judge_with, law_with
from decoding.verify.tree_rules.hsd import shape as shape  # the same shapes: one chain


def capped_final(pre: Prefixes) -> float:
    """min(1, r_g / M_g) = P~_g / Q_g: the whole draft tested on the capped joint, as every branch is."""
    return min(1.0, pre.capped(pre.g))


step_law = law_with(capped_final)
judge = judge_with(capped_final, "min(1, r_g/M_g), capped (lossless)")
