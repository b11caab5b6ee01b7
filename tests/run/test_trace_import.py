"""Importing a trace is importing untrusted data: size-capped, depth-capped, strictly typed, and
never evaluated. Every refusal is a one-line ValueError that names what is wrong."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from decoding.run import schema
from decoding.run.schema import MAX_NESTING, nesting_depth, read_trace_file, trace_from_json, trace_to_json
from tests import fixtures_records as fx
from viz import checks

ROOT = Path(__file__).resolve().parents[2]


def body() -> dict:
    return json.loads(trace_to_json(fx.trace()))


def refused(text: str) -> str:
    with pytest.raises(ValueError) as err:
        trace_from_json(text)
    message = str(err.value)
    assert "\n" not in message and len(message) < 300
    return message


# ---- format, version, types ---------------------------------------------------------------------------
def test_a_valid_trace_round_trips_exactly():
    assert trace_from_json(trace_to_json(fx.trace())) == fx.trace()


def _set(path: str, value):
    def change(b: dict) -> None:
        *head, last = re.findall(r"\w+", path)
        target = b
        for key in head:
            target = target[int(key)] if key.isdigit() else target[key]
        target[int(last) if last.isdigit() else last] = value
    return change


@pytest.mark.parametrize("change, message", [
    (_set("format", "other"), "not a specscope trace"),
    (_set("version", 2), "trace version 2 is not supported"),
    (_set("version", "1"), "trace version '1' is not supported"),
    (_set("steps.0.nodes.1.p_token", "0.5"), "Trace.steps[0].nodes[1].p_token: expected a finite number, got '0.5'"),
    (_set("steps.0.nodes.1.id", True), "Trace.steps[0].nodes[1].id: expected a whole number, got True"),
    (_set("steps.0.nodes.2.text", ["<b>"]), "Trace.steps[0].nodes[2].text: expected text, got a list of 1"),
    (_set("steps.1.visits.0.tests.0.passed", "yes"), "steps[1].visits[0].tests[0].passed: expected true/false"),
    (_set("steps.0.nodes", {"0": {}}), "Trace.steps[0].nodes: expected a list, got an object of 1"),
    (_set("steps.0.nodes", "abc"), "Trace.steps[0].nodes: expected a list, got 'abc'"),
    (_set("config", [1, 2]), "Trace.config: expected an object, got a list of 2"),
    (_set("steps.0.emitted.0", 7), "Trace.steps[0].emitted[0]: expected an object for EmittedRecord, got 7"),
])
def test_a_wrong_value_is_named_by_its_path(change, message):
    b = body()
    change(b)
    assert message in refused(json.dumps(b))


def test_a_missing_field_is_named():
    b = body()
    del b["steps"][1]["visits"][0]["tests"][0]["uniform"]
    assert "steps[1].visits[0].tests[0]: TestRecord is missing fields: uniform" in refused(json.dumps(b))


@pytest.mark.parametrize("text, message", [
    ("not json at all", "not a JSON file"),
    ("", "not a JSON file"),
    ("[1, 2", "not a JSON file"),
    ('{"format": "specscope-trace", "version": 1, "prompt": NaN}', "holds NaN"),
    ('{"format": "specscope-trace", "version": 1, "prompt": -Infinity}', "holds -Infinity"),
    ("[]", "not a specscope trace"),
])
def test_text_that_is_not_a_trace_is_refused(text, message):
    assert message in refused(text)


# ---- size and nesting: refused before parsing ---------------------------------------------------------------
@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000, "[{\"a\":" * 5_000 + "1" + "}]" * 5_000,
                                  '{"x": ' + "[1, " * (MAX_NESTING + 1) + "]" * (MAX_NESTING + 1) + "}"])
def test_deep_nesting_is_refused_before_json_parses_it(text, monkeypatch):
    monkeypatch.setattr(schema.json, "loads", _never)
    assert f"nests objects/lists more than {MAX_NESTING} deep" in refused(text)


def _never(*args, **kwargs):
    raise AssertionError("json.loads must not see this text")


def test_nesting_depth_ignores_brackets_inside_strings():
    assert nesting_depth('{"a\\"[[[": ["\\\\", {"b": "]]}}"}]}', 32) == 3
    assert nesting_depth(trace_to_json(fx.trace()), 32) == 9
    assert nesting_depth('"' + "[" * 100 + '"', 32) == 0


def test_a_huge_text_or_file_is_refused_before_it_is_read(tmp_path, monkeypatch):
    monkeypatch.setattr(schema, "MAX_TRACE_BYTES", 1000)
    monkeypatch.setattr(schema.json, "loads", _never)
    assert "the limit is 0 MB" in refused(" " * 1001)
    path = tmp_path / "big.json"
    path.write_text(" " * 1001)
    monkeypatch.setattr(Path, "read_text", _never)
    with pytest.raises(ValueError, match="a trace is at most 0 MB"):
        read_trace_file(path)


def test_a_file_that_is_not_utf8_is_refused(tmp_path):
    path = tmp_path / "bin.json"
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ValueError, match="not UTF-8"):
        read_trace_file(path)


def test_records_larger_than_any_real_run_are_refused_by_the_checks(monkeypatch):
    trace = fx.trace()
    step = trace.steps[0]
    long = step.nodes[1].__class__(**{**step.nodes[1].__dict__, "text": "x" * (checks.MAX_TEXT + 1)})
    assert "a token text has 1001 characters" in checks.step_problems(
        step.__class__(**{**step.__dict__, "nodes": (step.nodes[0], long, *step.nodes[2:])}))[0]
    monkeypatch.setattr(checks, "MAX_NODES", 5)
    assert "the tree has 10 nodes; at most 5" in checks.trace_problems(trace)[0]
    monkeypatch.setattr(checks, "MAX_STEPS", 1)
    assert checks.trace_problems(trace) == ["the trace has 2 steps; at most 1 are drawn"]


# ---- nothing a user sends is evaluated ---------------------------------------------------------------------
PAYLOADS = {
    "__class__": "os.system",
    "__reduce__": ["os.system", ["touch {sentinel}"]],
    "__init__": {"__globals__": "x"},
    "py/object": "subprocess.Popen",
    "!!python/object/apply:os.system": ["touch {sentinel}"],
}
HOSTILE_TEXTS = ("<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "**bold**",
                 "[a](javascript:alert(1))", "{{7*7}}", "${7*7}")


def hostile_body(sentinel: Path) -> dict:
    """A valid trace with injection payloads as extra keys of every object and as token texts."""
    payloads = json.loads(json.dumps(PAYLOADS).replace("{sentinel}", str(sentinel)))
    b = body()

    def walk(x):
        if isinstance(x, dict):
            for v in list(x.values()):
                walk(v)
            x.update(payloads)
            for key in ("text", "label", "note"):
                if isinstance(x.get(key), str):
                    x[key] = HOSTILE_TEXTS[len(x[key]) % len(HOSTILE_TEXTS)]
        elif isinstance(x, list):
            for v in x:
                walk(v)
    walk(b["steps"])
    b["config"].update(payloads)
    b["prompt"] = "gASVIQAAAAAAAACMAm9zlIwGc3lzdGVtlJOUjAl0b3VjaCAvdG1wlIWUUpQu"  # a pickle, base64
    return b


def test_a_crafted_trace_is_only_data(tmp_path):
    sentinel = tmp_path / "pwned"
    trace = trace_from_json(json.dumps(hostile_body(sentinel)))
    assert not sentinel.exists()
    assert trace.prompt.startswith("gASV")  # a string stays a string
    assert trace.config["__reduce__"] == ["os.system", [f"touch {sentinel}"]]  # plain data, never called
    texts = {n.text for s in trace.steps for n in s.nodes}
    assert texts <= set(HOSTILE_TEXTS) and len(texts) > 1
    assert all(type(s) is schema.StepRecord for s in trace.steps)
    assert checks.trace_problems(trace) == []


# No builtin eval/exec/compile, no pickle/marshal/shelve, no yaml.load, no torch.load of a file a user
# sends: a trace is read with json.loads only, and model weights with from_pretrained (safetensors).
FORBIDDEN = re.compile(r"(?<![\w.])(eval|exec|compile|__import__)\s*\(|\b(pickle|cPickle|marshal|shelve|dill)\b"
                       r"|yaml\.(unsafe_)?load\(|torch\.load\(|weights_only\s*=\s*False|trust_remote_code\s*=\s*True")


def source_files() -> list[Path]:
    folders = [ROOT / name for name in ("decoding", "viz", "ui") if (ROOT / name).is_dir()]
    return [ROOT / "app.py", *(p for folder in folders for p in folder.rglob("*.py"))]


def test_no_source_file_evaluates_or_unpickles_anything():
    hits = [f"{p.relative_to(ROOT)}:{i}: {line.strip()}" for p in source_files()
            for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
            if FORBIDDEN.search(line.split("#")[0])]
    assert hits == []


@pytest.mark.parametrize("line", ["x = eval(text)", "exec(body)", "import pickle", "yaml.load(f)",
                                  "torch.load(path)", "from_pretrained(x, trust_remote_code=True)"])
def test_the_source_scan_would_see_each_forbidden_call(line):
    assert FORBIDDEN.search(line)
    assert not FORBIDDEN.search("model.eval()") and not FORBIDDEN.search("spec.loader.exec_module(m)")
