"""The pair kinds `load_pair` knows (pairs.py says what each one is), in a module with no imports, so a CLI can
offer them as --pair choices without loading torch or transformers first."""

KINDS = ("embedded", "embedded-head", "lookup", "toy", "custom")
BUILT_IN = KINDS[:-1]  # the kinds that need no model path: every CLI's --pair choices

# Kinds an earlier release shipped, with what to use now (docs/speed.md records both as tried and not kept).
REMOVED = {
    "embedded-fast": "the embedded-fast pair was removed (its head over the first 16384 ids gave no measurable "
                     "gain, docs/speed.md); use 'embedded' (the same int8 self-draft) or 'embedded-head'",
    "head-lookup": "the head-lookup pair was removed (prompt lookup before the head accepted more but ran no "
                   "faster, docs/speed.md); use 'embedded-head' or 'lookup'",
}


def kind_error(kind: str) -> str | None:
    """One line saying why `kind` is not a pair kind (None when it is one)."""
    if kind in KINDS:
        return None
    return REMOVED.get(kind) or f"unknown model pair {kind!r}; choose one of: {', '.join(KINDS)}"


def built_in_kind(text: str) -> str:
    """argparse `type=` of the CLIs' --pair: a built-in kind, else an error naming what changed or the choices."""
    import argparse

    if text in BUILT_IN:
        return text
    error = kind_error(text) or "a custom pair is named with --target and --draft"
    raise argparse.ArgumentTypeError(error)


def any_kind(text: str) -> str:
    """argparse `type=` of a --pair that also takes 'custom'."""
    return text if text == "custom" else built_in_kind(text)


CHOICES = "{" + ",".join(BUILT_IN) + "}"  # the metavar: what --help lists
