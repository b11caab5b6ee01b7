"""bench forwards' measuring loop and table (the model variants themselves are timed, never asserted)."""

import pytest

from bench import forwards as bench_forwards


def test_measure_interleaves_every_variant_and_report_divides_by_the_one_token_target() -> None:
    order: list[str] = []
    calls = {name: (lambda name=name: order.append(name)) for name in ("target, 1 token", "draft")}
    times = bench_forwards.measure(calls, rounds=2, per_round=3)
    assert order == ["target, 1 token", "draft"] + (["target, 1 token"] * 3 + ["draft"] * 3) * 2  # warm-up, rounds
    assert {name: len(ms) for name, ms in times.items()} == {"target, 1 token": 6, "draft": 6}
    table = bench_forwards.report({"target, 1 token": [40.0, 50.0, 60.0], "draft": [20.0, 25.0, 30.0]})
    assert "| target, 1 token | 50.0 |" in table and table.splitlines()[-1].endswith("| 0.50 |")


@pytest.mark.parametrize("argv", [["--rounds", "0"], ["--calls", "1"], ["--rows", "0"], ["--rows", ""]])
def test_bad_arguments_exit_2(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        bench_forwards.main(argv)
    assert exit_.value.code == 2
