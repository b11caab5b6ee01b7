"""The fast twins of rule files that are written as their papers read (rules/rrs_wor.py, rules/khisti_is.py).

Why two copies: a rule file should show the algorithm line by line as the paper states it, while the registry
needs it at V = 49152 in well under a millisecond, which takes buffers updated in place, rows built only when a
view reads them, bounds that decide most tests without the exact number, and a fitted induced law. Each rule file
names its twin (`FAST = <module>`) and `Verifier.from_rule` builds the entry from the twin. The pair is held
equal by tests/verify/test_fast_rules.py: the same verdicts, tokens and shown rows under the same seeds, and the
same exact conditional laws, on many random nodes (docs/verifiers.md §4 and §7.2)."""
