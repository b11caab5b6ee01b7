"""The pair kinds `load_pair` knows (pairs.py says what each one is), in a module with no imports, so a CLI can
offer them as --pair choices without loading torch or transformers first."""

KINDS = ("embedded", "embedded-fast", "embedded-head", "head-lookup", "lookup", "toy", "custom")
BUILT_IN = KINDS[:-1]  # the kinds that need no model path: every CLI's --pair choices
