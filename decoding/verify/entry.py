"""The registry entry: one verifier described once, with its metadata and three pure functions."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from types import ModuleType

import torch

from decoding.verify import laws
from decoding.verify.entry_base import EntryBase
from decoding.verify.node_keys import NodeKeys
from decoding.verify.rules.common import conditional_chain, verify_chain
from decoding.verify.rules.node_cache import NodeCache
from decoding.verify.step_law import Outcome, node_level_law
from decoding.verify.tree import DraftTree
from decoding.verify.verdict import NodeVerdict
from decoding.verify.walk import Walk, walk

VerifyFn = Callable[[torch.Tensor, torch.Tensor, Sequence[int], torch.Generator], NodeVerdict]
ConditionalFn = Callable[[torch.Tensor, torch.Tensor, Sequence[int]], tuple[torch.Tensor, torch.Tensor]]
AcceptanceFn = Callable[[torch.Tensor, torch.Tensor, int], float]
BonusFn = Callable[[torch.Tensor, torch.Generator], int]


def _law_chain(chain: Callable) -> Callable:
    """The chain an exact law runs: with recycled rows (keep=False) where the chain offers it, since the law
    reads only the thresholds and the final residual, never the rows its Updates show (rules/common.Rows)."""
    return partial(chain, keep=False) if "keep" in inspect.signature(chain).parameters else chain


@dataclass(frozen=True)
class Verifier(EntryBase):
    """A token-level verifier.

    verify(p, q, candidates, generator) -> NodeVerdict
        p: [V] warped target law at the node; q: [V] the law the candidates were drawn from.
    conditional(p, q, candidates) -> (accept [k], residual [V])
        accept[i]: exact probability that candidate i is accepted given the candidates;
        residual: law of the emitted token when none is accepted (zeros if that never happens).
    acceptance(p, q, k) -> float, optional
        the closed-form P(some candidate accepted), averaged over the candidate law (float64,
        normalised p and q); None where no closed form exists (theory enumerates or samples).

    Optional hooks, part of the contract (a rule module or a user's verifier file may define each; every caller
    reads them through this entry, never by the rule's name):
    verify_with(cache: NodeCache) -> verify
        a verify that keeps per-node work in `cache` between calls on the same (p, q) (khisti_is's induced law;
        the compare view's Monte-Carlo walks repeat a node); None: verify is called as is.
    bonus(p, generator) -> int
        the token emitted after a fully accepted path, when it is not a plain draw from p (gls's race draws it
        from the node's keyed exponentials); None: a draw from p.
    rule, params
        a rule with settings (fuzzy's threshold, cactus's delta): `params` pairs the rule's keyword with the
        DecodeConfig field that sets it, `rule` is the module `configured` rebuilds the entry from.
    bonus_from_p
        a lossy rule whose leaf bonus is still a draw from p (cactus, as the engines run it).
    """

    name: str
    title: str
    lossless: bool
    law: laws.Law  # a law's name is accepted and looked up (laws.get)
    max_candidates: int | None
    description: str
    paper: str
    verify: VerifyFn
    conditional: ConditionalFn
    acceptance: AcceptanceFn | None = None
    verify_with: Callable[[NodeCache], VerifyFn] | None = None  # verify with a per-node cache (khisti_is)
    bonus: BonusFn | None = None
    rule: ModuleType | None = None  # the rule module, kept where the entry has `params` to rebuild it with
    params: tuple[tuple[str, str], ...] = ()  # (the rule's keyword, the DecodeConfig field that sets it) pairs
    bonus_from_p: bool = False  # a lossy rule whose leaf bonus is still a draw from p (cactus, as the engines do)

    level = "node"  # a tree-level verifier (block, traversal) judges a whole tree at once

    @classmethod
    def from_rule(cls, rule: ModuleType, **metadata) -> Verifier:
        """An entry from a rule module: `verify`/`conditional` come from its `chain` of events
        (rules/common.py runs or sums it) unless it defines them itself; `acceptance` if it has one.
        A rule file written as its paper reads may name a fast twin (`FAST`, a module under rules/fast/ held
        to the same verdicts and laws by tests/verify/test_fast_rules.py): the entry is built from the twin."""
        rule = getattr(rule, "FAST", rule)
        verify = getattr(rule, "verify", None) or partial(verify_chain, rule.chain)
        conditional = getattr(rule, "conditional", None) or partial(conditional_chain, _law_chain(rule.chain))
        acceptance = getattr(rule, "acceptance", None)
        verify_with, bonus = getattr(rule, "verify_with", None), getattr(rule, "bonus", None)
        rule_kept = rule if metadata.get("params") else None
        return cls(verify=verify, conditional=conditional, acceptance=acceptance, verify_with=verify_with,
                   bonus=bonus, rule=rule_kept, **metadata)

    def with_params(self, **values: float) -> Verifier:
        """This entry with its rule's keyword parameters set (fuzzy's threshold): `verify`, `conditional` and
        `acceptance` rebuilt from the rule's chain with those values. Why: a tunable rule stays ONE registry
        entry (one key, one dropdown item) while a run, the lab or a sweep picks the value."""
        known = [kw for kw, _ in self.params]
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise ValueError(f"verifier {self.name!r} takes no parameter {', '.join(unknown)}"
                             f" (it takes: {', '.join(known) or 'none'})")
        if not values:
            return self
        chain = partial(self.rule.chain, **values)
        acceptance = getattr(self.rule, "acceptance", None)
        return replace(self, verify=partial(verify_chain, chain), conditional=partial(conditional_chain, chain),
                       acceptance=partial(acceptance, **values) if acceptance else None)

    def configured(self, config) -> Verifier:
        """This entry with the parameters a DecodeConfig holds for it (`params` names the fields)."""
        return self.with_params(**{kw: getattr(config, name) for kw, name in self.params})

    def memoised(self, cache: NodeCache | None = None) -> Verifier:
        """This entry verifying through a per-node cache of what its rule precomputes for a node (khisti_is's
        induced law), for a caller that verifies the same nodes many times (a Monte-Carlo check). The cache
        is the caller's: a fresh one unless passed, dropped with the returned entry. Entries whose rule
        precomputes nothing come back as they are."""
        if self.verify_with is None:
            return self
        return replace(self, verify=self.verify_with(cache if cache is not None else NodeCache()))

    def __post_init__(self) -> None:
        object.__setattr__(self, "law", laws.get(self.law))

    def judge(self, tree: DraftTree, p: torch.Tensor, q: torch.Tensor, generator: torch.Generator,
              keys: NodeKeys | None = None) -> Walk:
        """Verify a whole drafted tree (p, q: [N, V]): the walk lifts this node-level rule to the tree.
        keys: per-node generators for a keyed law (gumbel), the ones its drafting read (node_keys.py)."""
        return walk(tree, p, q, self, generator, keys=keys)

    def step_law(self, tree: DraftTree, p: torch.Tensor, q: torch.Tensor) -> list[Outcome]:
        """The exact law of this step's outcome given the tree (see step_law.py)."""
        return node_level_law(self, tree, p, q)
