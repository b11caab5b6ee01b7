"""The earlier `AcceptTest` form, still read: a user's verifier file written against the earlier README is an API.

Until the lazy denominators (khisti_is), an AcceptTest stored its threshold:
    AcceptTest(candidate, token, numerator, denominator, threshold, uniform, passed, label="")
Now the threshold is derived (min(1, numerator / denominator), clipped at 0) and the fields after the
numerator are (denominator, uniform, passed, label). This module tells the two apart and maps the earlier
one onto the current fields. A threshold given the earlier way must be the one the numbers define: a test
whose stored threshold disagreed would show (and certify) a decision the numbers do not make, so it is
refused with one line that says what changed.

How the forms are told apart (after candidate, token, numerator):
- a `threshold=` keyword: the earlier form (`denominator=` is read in both forms);
- five positional values, or four whose last is not a str (the label): the earlier form;
- otherwise the current form (denominator, uniform, passed[, label]) by position or keyword.
"""

from __future__ import annotations

import math
from collections.abc import Callable

Ratio = Callable[[float, float], float]  # verdict.threshold_of, passed in (verdict imports this module)

CURRENT = ("denominator_value", "uniform", "passed", "label")
EARLIER = ("denominator", "threshold", "uniform", "passed", "label")
CHANGED = ("AcceptTest no longer takes a threshold: it is min(1, numerator/denominator); build it as "
           "AcceptTest(candidate, token, numerator, denominator, uniform, passed, label)")
TOLERANCE = 1e-9


def accept_test_fields(numerator: float, args: tuple, kwargs: dict, threshold_of: Ratio) -> tuple:
    """(denominator, uniform, passed, label) from the arguments after (candidate, token, numerator)."""
    if is_earlier(args, kwargs):
        values = bind(EARLIER, args, kwargs)
        check_threshold(numerator, values["denominator"], values["threshold"], threshold_of)
        return values["denominator"], values["uniform"], values["passed"], values["label"]
    if "denominator" in kwargs:  # the readable keyword for the field denominator_value
        kwargs = {("denominator_value" if key == "denominator" else key): value for key, value in kwargs.items()}
    values = bind(CURRENT, args, kwargs)
    return values["denominator_value"], values["uniform"], values["passed"], values["label"]


def is_earlier(args: tuple, kwargs: dict) -> bool:
    if "threshold" in kwargs:
        return True
    return len(args) >= 5 or (len(args) == 4 and not isinstance(args[3], str))


def bind(names: tuple[str, ...], args: tuple, kwargs: dict) -> dict:
    """Positional then keyword arguments onto `names` (label defaults to ""); a TypeError in one line."""
    if len(args) > len(names):
        raise TypeError(f"AcceptTest takes at most {len(names) + 3} positional arguments, got {len(args) + 3}. "
                        + CHANGED)
    values = dict(zip(names, args, strict=False))  # fewer args than names: bound by keyword
    for key, value in kwargs.items():
        if key not in names:
            raise TypeError(f"AcceptTest got an unexpected keyword {key!r}. {CHANGED}")
        if key in values:
            raise TypeError(f"AcceptTest got {key!r} twice (by position and by keyword)")
        values[key] = value
    values.setdefault("label", "")
    missing = [name for name in names if name not in values]
    if missing:
        raise TypeError(f"AcceptTest is missing {', '.join(missing)}. {CHANGED}")
    return values


def check_threshold(numerator: float, denominator: float, threshold: float, threshold_of: Ratio) -> None:
    """Refuse an earlier-form threshold that is not min(1, numerator / denominator) (clipped at 0)."""
    want = threshold_of(float(numerator), float(denominator))  # the earlier form held plain floats
    if not math.isclose(float(threshold), want, rel_tol=TOLERANCE, abs_tol=TOLERANCE):
        raise ValueError(f"AcceptTest was given threshold {float(threshold):.6g} but min(1, numerator/denominator) = "
                         f"{float(numerator):.6g}/{float(denominator):.6g} -> {want:.6g}; the threshold is "
                         "now derived from the numerator and denominator: drop it")
