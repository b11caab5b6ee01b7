"""Several verifiers judge the same step: one drafted tree per candidate law, one forest, one target forward.

`selection` validates the chosen verifiers against the tree shape; `drafting` drafts the per-law
trees level by level with common random numbers, feeding the draft model the merged forest;
`judging` runs every verifier on its tree and computes its exact numbers; `montecarlo` checks the
real judge against the exact accepted-length law; `session` is the step loop; `contract` writes the
CLI's JSON; `runs` the run-level comparison. May import decoding.run, models, verify.
"""
