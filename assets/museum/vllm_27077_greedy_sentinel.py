"""MUSEUM: vllm-project/vllm PR #27077 ("Fix greedy temperature detection after sampler refactor", merged
2025-10-17). A crash, not a law: this file is refused by specscope's probe, as vLLM's sampler should have been.

Commit a676e668 moved the greedy requests' temperature from -1.0 to 0.0, but the rejection sampler still
recognised greedy rows by GREEDY_TEMPERATURE = -1. A greedy row then took the random path, its logits divided by
0.0: inf/NaN probabilities, empty generated_token_ids and a negative acceptance count (len([]) - 1 = -1). Here
the rule re-tempers p by the temperature it read (0.0) exactly as that path did, so its law is NaN.
Fix: GREEDY_TEMPERATURE = 0, greedy rows take the argmax path (the registry's `greedy`, lossless at T = 0,
where p is one-hot).
"""

import torch

from decoding.verify.verdict import NodeVerdict

LAW = "topk"  # vLLM V1's argmax drafts
NAME = "museum_vllm_27077_greedy_sentinel"
TITLE = "vLLM #27077: greedy rows divided by temperature 0 (museum; NaN)"
MAX_CANDIDATES = 1
TEMPERATURE_READ = 0.0  # a greedy row's temperature after a676e668; the sampler still expected -1 for greedy


def _tempered(v):
    with torch.no_grad():
        return torch.softmax(torch.log(v.double()) / TEMPERATURE_READ, dim=0)  # division by zero: NaN


def conditional(p, q, candidates):
    p, q = _tempered(p), _tempered(q)
    x = int(candidates[0])
    a = torch.minimum(p[x] / q[x], torch.tensor(1.0, dtype=torch.float64))
    return a.reshape(1), torch.clamp(p - q, min=0.0)


def verify(p, q, candidates, generator):
    accept, residual = conditional(p, q, candidates)
    if float(torch.rand((), generator=generator, dtype=torch.float64)) < float(accept[0]):  # NaN: never
        return NodeVerdict(accepted=0, token=int(candidates[0]))
    return NodeVerdict(accepted=None, token=-1)  # no token: vLLM's empty generated_token_ids
