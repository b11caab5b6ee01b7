"""Examples to teach with: each a shareable link (ui/link_query.py) and what to look at, shown in the app and
listed in the README (tests/ui/test_teach.py keeps the two the same)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ui.link_query import Link, link_query
from ui.session import Controls

TOY = replace(Controls(), pair="toy", prompt="the cat")


@dataclass(frozen=True)
class Example:
    title: str
    link: Link
    look: str  # two or three sentences: what to look at

    @property
    def query(self) -> str:
        return "?" + link_query(self.link)


EXAMPLES = (
    Example("One draft chain, standard SD on the toy language",
            Link(replace(TOY, verifier="sd", branching="1,1,1", seed=2), 1),
            "The draft proposes three words; SD accepts the first and rejects the second. Press ▶ through the "
            "story: the rejected word's test shows p, q and a uniform u above "
            "min(1, p/q), then the residual max(p − q, 0) renormalised, from which the emitted word is drawn."),
    Example("Why several candidates help",
            Link(replace(TOY, verifier="rrs", branching="3,1", seed=2), 1, ("rrs", "rrs_wor", "spectr")),
            "Three candidates at the root instead of one: the paragraph's exact expected tokens for this tree is "
            "higher than a one-candidate chain's (tree 1,1, same seed), and a rejected candidate hands its mass "
            "to the next one through the residual. SD takes one candidate per node, so compare it on the previous "
            "example's chain."),
    Example("With versus without replacement",
            Link(replace(TOY, verifier="rrs_wor", branching="4", temperature=1.0, seed=9), 1, ("rrs_wor", "rrs")),
            "The Compare tab draws both trees from the same uniforms: rrs (i.i.d.) drafts ' sat' three times, "
            "rrs_wor four different words. A repeated candidate is a wasted test: after its first rejection its "
            "residual mass is 0, so on this step the per-node table's \"given these drafts\" acceptance and the "
            "expected tokens are higher without replacement."),
    Example("Temperature 0 is greedy decoding",
            Link(replace(TOY, verifier="rrs", branching="2,2", temperature=0.0), 4, ("rrs", "greedy")),
            "At temperature 0, p puts all its mass on its argmax, so every lossless verifier emits the target's "
            "greedy text, and the lossy greedy verifier agrees with it: compare the two trees and the texts."),
    Example("A verifier that looks right but is biased",
            Link(TOY, 0, (), "lab"),
            "Launch with `./specscope app --verifier-file assets/examples/wrong_verifier.py`: it skips repeated "
            "drafts, which looks harmless. At one node its acceptance seems fine; certify it on a tree shape and the "
            "exact check finds its output law differs from p (the CLI exits 3)."),
    Example("Block verification keeps the chain up to the last passed coin",
            Link(replace(TOY, verifier="block", branching="1,1,1", seed=2), 1),
            "Block verification tosses one coin per position of the chain and keeps it up to τ, the last position "
            "whose coin passed. Here the coin at position 2 fails and the one at position 3 passes, so all three "
            "drafted words are kept, where SD would have stopped at position 2."),
)


def build() -> None:
    """The list in the page, under the controls (links relative to the page: opening one runs it here)."""
    import gradio as gr

    with gr.Accordion("examples to teach with", open=False, elem_id="teach"):
        gr.Markdown(markdown(), elem_id="teach-list")


def markdown(examples: tuple[Example, ...] = EXAMPLES) -> str:
    """The list as Markdown links relative to the page (opening one runs it in this app)."""
    return "\n".join(f"- [{e.title}]({e.query}): {e.look}" for e in examples)
