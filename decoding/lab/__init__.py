"""The verifier lab: exact certification of any verifier on tiny languages, the user's own included.

- `language`: tiny context-dependent draft/target pairs (a JSON file format, presets, random ones);
- `trees`: every drafted tree of a shape under a verifier's candidate law, with its probability;
- `certify`: mix each verifier's exact step law (`entry.step_law`) over those trees and compare the
  emitted sequences with the target's joint law, plus a seeded Monte-Carlo check of `verify`;
- `custom`: load and validate a verifier from a local Python file.

Imports decoding.verify (and nothing that loads a model).
"""
