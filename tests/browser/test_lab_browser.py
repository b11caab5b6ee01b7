"""The verifier lab in the real page (headless Chromium): the app launched with one good and one bad
--verifier-file; the bad one is reported and the built-ins still served; pick a preset, edit one
probability, the bars are redrawn. Screenshots: tests/output/lab_preset.png and lab_edited.png."""

from __future__ import annotations

import pytest

from tests.browser.waits import wait_text, wait_value
from tests.served import OUTPUT, ROOT, TOY, open_tab, opened, served

pytestmark = pytest.mark.browser
PLOT = "#lab-node-plot .js-plotly-plot"
# the first trace's bars once the plot's status tracker is hidden (nothing pending) and plotly has drawn them
IDLE_BARS = f"""() => {{ const t = document.querySelector('#lab-node-plot [data-testid=status-tracker]');
  const el = document.querySelector('{PLOT}');
  return (!t || t.classList.contains('hide')) && document.querySelector('{PLOT} .barlayer .point')
    ? Array.from(el.data[0].y) : null; }}"""


@pytest.fixture(scope="module")
def lab_app(tmp_path_factory):
    bad = tmp_path_factory.mktemp("lab") / "broken_verifier.py"
    bad.write_text("LAW = 'iid'\ndef verify(:\n")
    good = ROOT / "assets" / "examples" / "wrong_verifier.py"
    with served(*TOY, "--verifier-file", str(good), "--verifier-file", str(bad), log_name="lab_app.log") as server:
        yield server.url, server.log


@pytest.fixture(scope="module")
def page(browser, lab_app):
    with opened(browser, lab_app[0], width=1300, height=1500) as page:
        yield page


def _wait_idle(page) -> list[float]:
    """Until the plot's status tracker is hidden (no computation pending) and plotly has drawn its bars; the first
    trace's bars then, as that wait saw them."""
    bars = wait_value(page, IDLE_BARS)
    page.wait_for_timeout(500)  # plotly's drawing settled, for the screenshots
    return bars


def _wait_bars(page, n: int, first: float | None = None) -> list[float]:
    """Until the first trace has `n` bars (the first `first`); those bars, as the wait saw them."""
    check = f"el.data[0].y.length == {n}" + ("" if first is None else f" && Math.abs(el.data[0].y[0] - {first}) < 1e-9")
    return wait_value(page, f"() => {{ const el = document.querySelector('{PLOT}'); "
                            f"return el && {check} ? Array.from(el.data[0].y) : null; }}")


def test_a_bad_verifier_file_is_reported_and_the_built_ins_served(lab_app, page):
    assert "--verifier-file ignored" in lab_app[1].read_text() and "syntax error" in lab_app[1].read_text()
    assert "--verifier-file ignored" in page.inner_text("body")
    open_tab(page, "Verifier lab")
    page.wait_for_selector(PLOT, timeout=60_000)
    boxes = page.inner_text("#lab-verifiers")
    assert "rrs_wor" in boxes and "wrong_rrs_dedup [custom]" in boxes and "greedy [lossy]" in boxes


def test_preset_then_one_edit_redraws_the_bars(page):
    open_tab(page, "Verifier lab")
    _wait_bars(page, 4)  # the worked example: A B C D
    page.click("#lab-preset input")
    page.get_by_role("option", name="context3").click()
    _wait_bars(page, 3, 0.5)  # context3's root p = [.5, .3, .2]
    assert _wait_idle(page) == pytest.approx([0.5, 0.3, 0.2])
    page.locator("#lab-node-plot").screenshot(path=str(OUTPUT / "lab_preset.png"))
    page.screenshot(path=str(OUTPUT / "lab_preset_page.png"), full_page=True)
    cell = page.locator('#lab-table [data-testid="cell-0-1"]')  # p of the first token
    cell.dblclick()
    page.keyboard.press("Control+A")
    page.keyboard.type("0.9")
    page.keyboard.press("Enter")
    _wait_bars(page, 3, 0.9 / 1.4)  # renormalised: [.9, .3, .2] / 1.4
    assert _wait_idle(page) == pytest.approx([0.9 / 1.4, 0.3 / 1.4, 0.2 / 1.4])
    assert "summed to 1.4; normalised" in page.inner_text("#lab-notes")
    colors = page.evaluate(f"() => document.querySelector('{PLOT}').data"
                           ".filter(t => t.name == 'exact output law').map(t => t.marker.color)")
    assert "#D55E00" in colors and "#009E73" in colors  # greedy off p, the lossless ones on it
    page.locator("#lab-node-plot").screenshot(path=str(OUTPUT / "lab_edited.png"))
    page.screenshot(path=str(OUTPUT / "lab_edited_page.png"), full_page=True)
    assert "Traceback" not in page.content()


def test_sequence_level_certify_shows_a_lossy_verifier_off(page):
    open_tab(page, "Verifier lab")
    page.click("#lab-seq-verifier input")
    page.get_by_role("option", name="typical [lossy]").click()
    page.click("#lab-certify-btn")
    assert "worst case" in wait_text(page, "#lab-seq-md", "NOT lossless")
    page.wait_for_selector("#lab-seq-plot .js-plotly-plot .barlayer .point", timeout=30_000)
    page.wait_for_timeout(500)
    page.locator("#lab-seq-plot").screenshot(path=str(OUTPUT / "lab_sequence.png"))


def test_lossy_tradeoff_chart_draws_fuzzy_and_the_zero_line(page):
    """The trade-off button on context3, tree 2,2: fuzzy's points from (0, 1 token) to every draft accepted,
    the lossless verifiers on TV = 0, greedy and typical off it. Screenshot: tests/output/lab_tradeoff.png."""
    open_tab(page, "Verifier lab")
    for name in ("uniform_draft", "context3"):  # a fresh context3 (an earlier test edited its root row)
        page.click("#lab-preset input")
        page.get_by_role("option", name=name).click()
        page.wait_for_timeout(1500)  # the preset's table and redraw first
    page.locator("#lab-verifiers").get_by_text("ot_optimal", exact=True).click()  # check it: drawn on TV = 0
    page.wait_for_timeout(1500)
    page.fill("#lab-shape textarea", "2,2")
    page.click("#lab-tradeoff-btn")
    plot = "#lab-tradeoff-plot .js-plotly-plot"
    data = wait_value(page, f"() => {{ const el = document.querySelector('{plot}'); return el && el.data && "
                            "el.data.some(t => t.name == 'lossy') && el.data.map(t => ({name: t.name, x: t.x, y: t.y, "
                            "text: t.text, group: t.legendgroup})); }", timeout_ms=120_000)
    fuzzy = data[0]
    assert fuzzy["name"] == "fuzzy, threshold T moving" and len(fuzzy["x"]) >= 4
    assert fuzzy["y"][0] == pytest.approx(1.0) and fuzzy["y"][-1] == pytest.approx(3.0)  # T = 0 .. ln 2
    zero = {t["name"].split(":")[0]: t for t in data if t["group"] == "lossless"}
    assert {"rrs", "rrs_wor", "spectr", "ot_optimal"} <= set(zero) and all(t["x"][0] < 1e-9 for t in zero.values())
    assert max(zero, key=lambda k: zero[k]["y"][0]) == "ot_optimal"  # alpha* at every node: the most tokens here
    assert {"greedy", "typical"} <= set(data[-1]["text"])
    page.wait_for_timeout(800)
    page.locator("#lab-tradeoff-plot").screenshot(path=str(OUTPUT / "lab_tradeoff.png"))
    assert "Traceback" not in page.content()
