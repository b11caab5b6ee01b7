"""Engine speculative-decoding records read into one plain `EngineRecord` (docs/verifiers.md §22).

Three engines report what their verifier did on a request, each in its own words:
- vLLM (PR #48915, `--per-request-spec-decode-metrics summary|detailed`): `metrics.speculative_decoding` with
  `num_spec_steps`, `num_draft_tokens`, `num_accepted_draft_tokens`, `num_spec_tokens` (k), the dense
  `acceptance_histogram` (index j: steps that accepted exactly j drafts), `mean_acceptance_length`
  (1 + accepted / steps) and `draft_acceptance_rate`; `detailed` adds `per_step_accepted` / `per_step_drafted`.
- SGLang (PR #34814, `--speculative-decoding-stats summary|detailed`): `speculative_decoding_stats` with
  `num_verification_steps`, `num_verified_draft_tokens`, `num_accepted_draft_tokens`, `mean_accept_length`,
  `draft_acceptance_rate`; `detailed` adds `verify_lengths` / `accept_lengths`, each counting the root/bonus
  token too (a step that verified 5 drafts and accepted 3 reads 6 and 4).
- llama.cpp: the server's `timings` (`draft_n`, `draft_n_accepted`; PR #12603), and its log lines (PR #24536):
  the per-request `draft acceptance = ... acceptance rate per position = (...)` and the per-implementation
  `statistics ... #gen drafts = N ... #acc rate/pos = (...)`, where rate/pos[i] is the share of steps that
  accepted position i.

Every reader checks the record against itself (the counts, the histogram, the derived numbers it reports) and
refuses a bad one with one line that names the field: a missing field, a negative count, more accepted than
drafted, a histogram that does not sum to the steps. Plain data, no torch: viz reads it.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

ENGINES = ("vllm", "sglang", "llamacpp")
ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang", "llamacpp": "llama.cpp"}
MAX_RECORD_BYTES = 8 * 1024 * 1024  # a per-request record is a few kB; a longer file is refused unread
REL_TOL = 1e-6  # a reported float (mean length, rate) against the one its counts give


@dataclass(frozen=True)
class EngineRecord:
    """What one engine says its verifier did on one request (or, for llama.cpp's statistics, on one drafter).

    drafted / accepted: draft tokens proposed and accepted over the whole record (bonus tokens excluded).
    steps: verification steps (None when the record does not say: llama.cpp's timings).
    max_draft: the most drafts a step may verify (vLLM's k; the longest step seen elsewhere), None if unknown.
    histogram: steps that accepted exactly j drafts, j = 0..max_draft (None when the record has none).
    per_step: (drafted, accepted) of every step in order (None in summary records).
    position_rates: llama.cpp's per-position rates as printed (accepted at position i over all steps).
    reported: the record's own derived numbers, as given, for display (name, value).
    """

    engine: str
    mode: str
    drafted: int
    accepted: int
    steps: int | None = None
    max_draft: int | None = None
    histogram: tuple[int, ...] | None = None
    per_step: tuple[tuple[int, int], ...] | None = None
    position_rates: tuple[float, ...] | None = None
    reported: tuple[tuple[str, float], ...] = ()

    @property
    def title(self) -> str:
        return f"{ENGINE_NAMES.get(self.engine, self.engine)} record ({self.mode})"

    @property
    def acceptance_rate(self) -> float | None:
        """Accepted over drafted draft tokens (None when nothing was drafted)."""
        return self.accepted / self.drafted if self.drafted else None

    @property
    def mean_acceptance_length(self) -> float | None:
        """Tokens a step emits on average, bonus included: 1 + accepted / steps (None without steps)."""
        return 1.0 + self.accepted / self.steps if self.steps else None


# ---- reading -------------------------------------------------------------------------------------------------


def read_file(path: str | Path, fmt: str | None = None) -> EngineRecord:
    """An engine record from a file (JSON, or llama.cpp's log text); `fmt` one of ENGINES or None (detect)."""
    path = Path(path)
    size = path.stat().st_size
    if size > MAX_RECORD_BYTES:
        raise ValueError(f"{path.name} is {size / 1e6:.1f} MB; an engine record is a few kB "
                         f"(at most {MAX_RECORD_BYTES // 2**20} MB read)")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{path.name} is not UTF-8 text: an engine record is JSON or llama.cpp's log text") from None
    return parse_text(text, fmt)


def parse_text(text: str, fmt: str | None = None) -> EngineRecord:
    """An engine record from the text of a file: JSON for vLLM, SGLang and llama.cpp's timings, a log line
    for llama.cpp's statistics."""
    check_format(fmt)
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            data = json.loads(text)
        except ValueError as err:
            raise ValueError(f"not valid JSON ({err})") from None
        return parse(data, fmt)
    if fmt not in (None, "llamacpp"):
        raise ValueError(f"a {ENGINE_NAMES[fmt]} record is JSON; this file is not")
    return parse_llamacpp_log(text)


def check_format(fmt: str | None) -> None:
    if fmt is not None and fmt not in ENGINES:
        raise ValueError(f"unknown engine format {fmt!r}; one of {', '.join(ENGINES)}")


def parse(data: object, fmt: str | None = None) -> EngineRecord:
    """An engine record from parsed JSON: the engine's object found where its responses put it (or given bare)."""
    check_format(fmt)
    for engine in (fmt,) if fmt else ENGINES:
        found = FINDERS[engine](data)
        if found is not None:
            return READERS[engine](found)
    if fmt:
        raise ValueError(f"no {ENGINE_NAMES[fmt]} record here: expected {WHERE[fmt]}")
    raise ValueError("no engine record found: expected vLLM's metrics.speculative_decoding, SGLang's "
                     "speculative_decoding_stats or llama.cpp's timings (draft_n, draft_n_accepted)")


WHERE = {"vllm": "metrics.speculative_decoding (or an object with num_spec_steps)",
         "sglang": "meta_info.speculative_decoding_stats, sglext.speculative_decoding_stats or an object with "
                   "num_verification_steps",
         "llamacpp": "timings with draft_n and draft_n_accepted, or llama.cpp's log line"}


def _at(data: object, *path: str | int) -> object:
    for key in path:
        if isinstance(key, int):
            if not isinstance(data, list) or len(data) <= key:
                return None
        elif not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def _first_dict(data: object, paths: tuple[tuple, ...], marker: str) -> dict | None:
    """The first object at one of `paths` (or `data` itself) holding the key `marker`; None if none does."""
    for path in paths:
        found = _at(data, *path)
        if isinstance(found, dict) and marker in found:
            return found
    return None


def find_vllm(data: object) -> dict | None:
    """vLLM puts it at the response's metrics.speculative_decoding (a streamed final chunk under "data"); an earlier
    revision of the PR put it on each choice (choices[0].speculative_decoding_stats)."""
    return _first_dict(data, ((), ("metrics", "speculative_decoding"), ("data", "metrics", "speculative_decoding"),
                              ("choices", 0, "speculative_decoding_stats")), "num_spec_steps")


def find_sglang(data: object) -> dict | None:
    """SGLang puts it at meta_info.speculative_decoding_stats (native /generate) or sglext.speculative_decoding_stats
    (OpenAI endpoints: a list, one per choice; a single choice is read)."""
    stats = _at(data, "sglext", "speculative_decoding_stats")
    if isinstance(stats, list) and len(stats) > 1:
        raise ValueError(f"this SGLang response holds {len(stats)} choices' stats; keep one per file")
    return _first_dict(data, ((), ("meta_info", "speculative_decoding_stats"),
                              ("sglext", "speculative_decoding_stats", 0)), "num_verification_steps")


def find_llamacpp(data: object) -> dict | None:
    return _first_dict(data, ((), ("timings",)), "draft_n")


# ---- field checks --------------------------------------------------------------------------------------------


def count(obj: dict, key: str, who: str, required: bool = True) -> int | None:
    """A non-negative integer field, or the one-line reason it is not one."""
    if key not in obj or obj[key] is None:
        if required:
            raise ValueError(f"{who} record: missing field {key!r}")
        return None
    value = obj[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{who} record: {key} must be a whole number, got {value!r}")
    if value < 0:
        raise ValueError(f"{who} record: {key} is negative ({value})")
    return value


def counts(obj: dict, key: str, who: str) -> tuple[int, ...] | None:
    """A list of non-negative integers (None when absent)."""
    values = obj.get(key)
    if values is None:
        return None
    if not isinstance(values, list):
        raise ValueError(f"{who} record: {key} must be a list of whole numbers")
    return tuple(count({key: v}, key, who) for v in values)


def reported_float(obj: dict, key: str, who: str) -> float | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{who} record: {key} must be a finite number, got {value!r}")
    return float(value)


def agrees(who: str, key: str, given: float | None, derived: float | None, how: str) -> None:
    """A derived number the record reports must be the one its counts give."""
    if given is None or derived is None:
        return
    if not math.isclose(given, derived, rel_tol=REL_TOL, abs_tol=1e-9):
        raise ValueError(f"{who} record: {key} is {given:.6g} but {how} gives {derived:.6g}")


def not_more(who: str, accepted_name: str, accepted: int, drafted_name: str, drafted: int) -> None:
    if accepted > drafted:
        raise ValueError(f"{who} record: {accepted_name} ({accepted}) exceeds {drafted_name} ({drafted})")


def histogram_of(values: tuple[int, ...], size: int) -> tuple[int, ...]:
    """Steps that accepted exactly j drafts, j = 0..size-1, from per-step accepted counts."""
    return tuple(sum(1 for v in values if v == j) for j in range(size))


def check_histogram(who: str, histogram: tuple[int, ...], steps: int, accepted: int) -> None:
    """The histogram sums to the steps and its accepted drafts (sum of j h_j) to the accepted count."""
    if sum(histogram) != steps:
        raise ValueError(f"{who} record: the acceptance histogram sums to {sum(histogram)} steps, "
                         f"but the record counts {steps}")
    weighted = sum(j * h for j, h in enumerate(histogram))
    if weighted != accepted:
        raise ValueError(f"{who} record: the acceptance histogram holds {weighted} accepted drafts, "
                         f"but the record counts {accepted}")


def check_steps(who: str, per_step: tuple[tuple[int, int], ...], steps: int, drafted: int, accepted: int,
                max_draft: int | None = None) -> None:
    """Per-step (drafted, accepted): one per step, accepted <= drafted <= k each, summing to the totals."""
    if len(per_step) != steps:
        raise ValueError(f"{who} record: {len(per_step)} per-step entries for {steps} steps")
    for i, (d, a) in enumerate(per_step):
        if a > d:
            raise ValueError(f"{who} record: step {i} accepted {a} drafts of {d} drafted")
        if max_draft is not None and d > max_draft:
            raise ValueError(f"{who} record: step {i} drafted {d}, more than the record's k = {max_draft}")
    if sum(d for d, _ in per_step) != drafted:
        raise ValueError(f"{who} record: the steps drafted {sum(d for d, _ in per_step)} in all, "
                         f"but the record counts {drafted}")
    if sum(a for _, a in per_step) != accepted:
        raise ValueError(f"{who} record: the steps accepted {sum(a for _, a in per_step)} in all, "
                         f"but the record counts {accepted}")


# ---- vLLM ----------------------------------------------------------------------------------------------------


def read_vllm(obj: dict) -> EngineRecord:
    who = "vLLM"
    steps = count(obj, "num_spec_steps", who)
    drafted = count(obj, "num_draft_tokens", who)
    accepted = count(obj, "num_accepted_draft_tokens", who)
    k = count(obj, "num_spec_tokens", who)
    not_more(who, "num_accepted_draft_tokens", accepted, "num_draft_tokens", drafted)
    if drafted > steps * k:
        raise ValueError(f"{who} record: num_draft_tokens ({drafted}) exceeds num_spec_steps x num_spec_tokens "
                         f"({steps} x {k})")
    histogram = vllm_histogram(obj, k)
    check_histogram(who, histogram, steps, accepted)
    per_step = paired_steps(obj, "per_step_drafted", "per_step_accepted", who)
    if per_step is not None:
        check_steps(who, per_step, steps, drafted, accepted, k)
        if histogram_of(tuple(a for _, a in per_step), k + 1) != histogram:
            raise ValueError(f"{who} record: acceptance_histogram is not the histogram of per_step_accepted")
    mean = reported_float(obj, "mean_acceptance_length", who)
    rate = reported_float(obj, "draft_acceptance_rate", who)
    agrees(who, "mean_acceptance_length", mean, 1 + accepted / steps if steps else None,
           "1 + num_accepted_draft_tokens / num_spec_steps")
    agrees(who, "draft_acceptance_rate", rate, accepted / drafted if drafted else None,
           "num_accepted_draft_tokens / num_draft_tokens")
    return EngineRecord("vllm", "detailed" if per_step is not None else "summary", drafted, accepted, steps, k,
                        histogram, per_step, None, _named(("mean_acceptance_length", mean),
                                                          ("draft_acceptance_rate", rate)))


def vllm_histogram(obj: dict, k: int) -> tuple[int, ...]:
    """The dense list (index j: steps accepting exactly j drafts), length k + 1; the earlier revision's
    {"j": count} object is read too."""
    raw = obj.get("acceptance_histogram")
    if raw is None:
        raise ValueError("vLLM record: missing field 'acceptance_histogram'")
    if isinstance(raw, dict):
        raw = _dense(raw, k)
    values = counts({"acceptance_histogram": raw}, "acceptance_histogram", "vLLM")
    if len(values) != k + 1:
        raise ValueError(f"vLLM record: acceptance_histogram has {len(values)} entries; num_spec_tokens = {k} "
                         f"needs {k + 1} (0..{k} accepted)")
    return values


def _dense(sparse: dict, k: int) -> list:
    dense = [0] * (k + 1)
    for key, value in sparse.items():
        if not str(key).isdigit() or int(key) > k:
            raise ValueError(f"vLLM record: acceptance_histogram key {key!r} is not a count 0..{k}")
        dense[int(key)] = value
    return dense


def paired_steps(obj: dict, drafted_key: str, accepted_key: str, who: str,
                 minus: int = 0) -> tuple[tuple[int, int], ...] | None:
    """(drafted, accepted) per step from two ordered lists (both or neither), each less `minus` (SGLang's
    lengths count the root/bonus token)."""
    drafted, accepted = counts(obj, drafted_key, who), counts(obj, accepted_key, who)
    if drafted is None and accepted is None:
        return None
    if drafted is None or accepted is None:
        missing = drafted_key if drafted is None else accepted_key
        raise ValueError(f"{who} record: missing field {missing!r} (the per-step lists come in pairs)")
    if len(drafted) != len(accepted):
        raise ValueError(f"{who} record: {drafted_key} has {len(drafted)} entries, {accepted_key} {len(accepted)}")
    if minus and any(v < minus for v in (*drafted, *accepted)):
        raise ValueError(f"{who} record: a length in {drafted_key} / {accepted_key} is below {minus} (each counts "
                         "the root/bonus token)")
    return tuple((d - minus, a - minus) for d, a in zip(drafted, accepted, strict=True))


def _named(*pairs: tuple[str, float | None]) -> tuple[tuple[str, float], ...]:
    return tuple((name, value) for name, value in pairs if value is not None)


# ---- SGLang --------------------------------------------------------------------------------------------------


def read_sglang(obj: dict) -> EngineRecord:
    who = "SGLang"
    steps = count(obj, "num_verification_steps", who)
    drafted = count(obj, "num_verified_draft_tokens", who)
    accepted = count(obj, "num_accepted_draft_tokens", who)
    not_more(who, "num_accepted_draft_tokens", accepted, "num_verified_draft_tokens", drafted)
    per_step = paired_steps(obj, "verify_lengths", "accept_lengths", who, minus=1)
    histogram, k = None, None
    if per_step is not None:
        check_steps(who, per_step, steps, drafted, accepted)
        k = max((d for d, _ in per_step), default=0)
        histogram = histogram_of(tuple(a for _, a in per_step), k + 1)
    mean = reported_float(obj, "mean_accept_length", who)
    rate = reported_float(obj, "draft_acceptance_rate", who)
    agrees(who, "mean_accept_length", mean, 1 + accepted / steps if steps else None,
           "1 + num_accepted_draft_tokens / num_verification_steps")
    agrees(who, "draft_acceptance_rate", rate, accepted / drafted if drafted else None,
           "num_accepted_draft_tokens / num_verified_draft_tokens")
    return EngineRecord("sglang", "detailed" if per_step is not None else "summary", drafted, accepted, steps, k,
                        histogram, per_step, None,
                        _named(("mean_accept_length", mean), ("draft_acceptance_rate", rate)))


# ---- llama.cpp -----------------------------------------------------------------------------------------------


def read_llamacpp_timings(obj: dict) -> EngineRecord:
    """The server's timings: draft_n, draft_n_accepted (and draft_n_verif_steps where a build reports it)."""
    who = "llama.cpp"
    drafted = count(obj, "draft_n", who)
    accepted = count(obj, "draft_n_accepted", who)
    steps = count(obj, "draft_n_verif_steps", who, required=False)
    not_more(who, "draft_n_accepted", accepted, "draft_n", drafted)
    if steps is not None and accepted > 0 and steps == 0:
        raise ValueError(f"{who} record: draft_n_accepted is {accepted} over 0 verification steps")
    predicted = count(obj, "predicted_n", who, required=False)
    return EngineRecord("llamacpp", "timings", drafted, accepted, steps, None, None, None, None,
                        _named(("predicted_n", predicted)))


_NUMBER = r"([0-9]+(?:\.[0-9]+)?)"
STATISTICS = re.compile(r"#gen drafts\s*=\s*(\d+),\s*#acc drafts\s*=\s*(\d+),\s*#gen tokens\s*=\s*(\d+),\s*"
                        r"#acc tokens\s*=\s*(\d+)(?:,\s*#mean acc len\s*=\s*" + _NUMBER + r")?"
                        r"(?:,\s*#acc rate/pos\s*=\s*\(([^)]*)\))?")
PER_REQUEST = re.compile(r"draft acceptance\s*=\s*" + _NUMBER + r"\s*\(\s*(\d+)\s*accepted\s*/\s*(\d+)\s*generated\)"
                         r",\s*mean acceptance length\s*=\s*" + _NUMBER +
                         r"(?:,\s*acceptance rate per position\s*=\s*\(([^)]*)\))?")


def parse_llamacpp_log(text: str) -> EngineRecord:
    """llama.cpp's log: the `statistics` line (counts per drafter, PR #24536) or the per-request `draft acceptance`
    line; the first one found is read."""
    found = STATISTICS.search(text)
    if found:
        return read_llamacpp_statistics(found)
    found = PER_REQUEST.search(text)
    if found:
        return read_llamacpp_request(found)
    raise ValueError("no llama.cpp record here: expected its timings JSON (draft_n, draft_n_accepted), a "
                     "'statistics ... #gen drafts = ...' line or a 'draft acceptance = ...' line")


def rates_of(text: str | None) -> tuple[float, ...] | None:
    if text is None or not text.strip():
        return None
    try:
        rates = tuple(float(v) for v in text.split(","))
    except ValueError:
        raise ValueError(f"llama.cpp record: the rates per position ({text.strip()}) are not numbers") from None
    if any(not 0 <= r <= 1 for r in rates):
        raise ValueError(f"llama.cpp record: a rate per position is outside [0, 1] ({text.strip()})")
    return rates


def read_llamacpp_statistics(found: re.Match) -> EngineRecord:
    """#gen drafts = steps, #acc drafts = steps that accepted position 1, #gen/#acc tokens = drafted/accepted,
    #acc rate/pos[i] = accepted at position i+1 / steps (printed to 3 decimals)."""
    who = "llama.cpp"
    steps, first, drafted, accepted = (int(found.group(i)) for i in range(1, 5))
    mean = float(found.group(5)) if found.group(5) else None
    rates = rates_of(found.group(6))
    not_more(who, "#acc tokens", accepted, "#gen tokens", drafted)
    not_more(who, "#acc drafts", first, "#gen drafts", steps)
    if rates is not None:
        check_rates(rates, steps, accepted, first)
    if mean is not None and steps and abs(mean - (1 + accepted / steps)) > 0.005 + 1e-9:
        raise ValueError(f"{who} record: #mean acc len is {mean} but 1 + #acc tokens / #gen drafts gives "
                         f"{1 + accepted / steps:.4f}")
    return EngineRecord("llamacpp", "statistics", drafted, accepted, steps, len(rates) if rates else None,
                        None, None, rates, _named(("mean acceptance length", mean)))


def check_rates(rates: tuple[float, ...], steps: int, accepted: int, first: int | None = None) -> None:
    """The printed rates, times the steps, are whole counts (to the print's 3 decimals) summing to the accepted."""
    got = position_counts_of_rates(rates, steps)
    if any(abs(r * steps - c) > 0.0005 * steps + 1e-9 for r, c in zip(rates, got, strict=True)):
        raise ValueError(f"llama.cpp record: the rates per position times {steps} steps are not whole counts")
    if sum(got) != accepted:
        raise ValueError(f"llama.cpp record: the rates per position give {sum(got)} accepted drafts "
                         f"({' + '.join(map(str, got))}), but the record counts {accepted}")
    if first is not None and got and got[0] != first:
        raise ValueError(f"llama.cpp record: position 1's rate gives {got[0]} steps, #acc drafts is {first}")
    if any(b > a for a, b in zip(got, got[1:], strict=False)):
        raise ValueError("llama.cpp record: a deeper position accepted more often than the one above it")


def position_counts_of_rates(rates: tuple[float, ...], steps: int) -> tuple[int, ...]:
    """Steps that accepted each position, from llama.cpp's printed rates (accepted at i / steps)."""
    return tuple(round(r * steps) for r in rates)


def read_llamacpp_request(found: re.Match) -> EngineRecord:
    """The per-request line prints no step count: it is the one whole number n with 1 + accepted / n equal to the
    printed mean (2 decimals) whose per-position counts sum to the accepted; refused when it is not unique."""
    who = "llama.cpp"
    rate, accepted, drafted, mean = (float(found.group(1)), int(found.group(2)), int(found.group(3)),
                                     float(found.group(4)))
    rates = rates_of(found.group(5))
    not_more(who, "accepted", accepted, "generated", drafted)
    if drafted and abs(rate - accepted / drafted) > 0.000005 + 1e-9:
        raise ValueError(f"{who} record: draft acceptance is {rate} but {accepted} / {drafted} gives "
                         f"{accepted / drafted:.5f}")
    steps = steps_from_mean(accepted, drafted, mean, rates)
    if rates is not None:
        check_rates(rates, steps, accepted)
    return EngineRecord("llamacpp", "per request", drafted, accepted, steps, len(rates) if rates else None,
                        None, None, rates, _named(("draft acceptance", rate), ("mean acceptance length", mean)))


def steps_from_mean(accepted: int, drafted: int, mean: float, rates: tuple[float, ...] | None) -> int:
    if accepted == 0:
        raise ValueError("llama.cpp record: nothing accepted, so the mean length cannot tell the number of steps")
    if mean <= 1:
        raise ValueError(f"llama.cpp record: mean acceptance length {mean} with {accepted} accepted drafts")
    low, high = accepted / (mean - 1 + 0.005), accepted / max(mean - 1 - 0.005, 1e-12)
    fits = [n for n in range(max(1, math.ceil(low)), min(drafted, math.floor(high)) + 1)
            if round(1 + accepted / n, 2) == round(mean, 2)
            and (rates is None or sum(position_counts_of_rates(rates, n)) == accepted)]
    if len(fits) != 1:
        raise ValueError(f"llama.cpp record: the printed mean length {mean} fits {len(fits)} step counts "
                         f"({', '.join(map(str, fits[:4]))}{'...' if len(fits) > 4 else ''}); use the statistics line")
    return fits[0]


FINDERS = {"vllm": find_vllm, "sglang": find_sglang, "llamacpp": find_llamacpp}
READERS = {"vllm": read_vllm, "sglang": read_sglang, "llamacpp": read_llamacpp_timings}
