"""axe-core, the accessibility checker, run in a page the browser tests have open.

The script comes from npm (tests/browser/package.json; `./specscope test` installs it into
tests/browser/node_modules on a fresh machine, as it installs chromium) and is injected inline, so it runs in a
file:// page with the network blocked too. `violations(page)` returns every violation of the WCAG 2 A/AA rules and
axe's best practices, each with its impact, rule, help text and the elements that break it; the tests require no
serious or critical one."""

from __future__ import annotations

from pathlib import Path

AXE = Path(__file__).resolve().parent / "node_modules" / "axe-core" / "axe.min.js"
SERIOUS = ("serious", "critical")
RUN = """async (context) => {
  const result = await axe.run(context || document, {resultTypes: ['violations'],
    runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice']}});
  return result.violations.map((v) => ({id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map((n) => n.target.join(' ')).slice(0, 8), count: v.nodes.length}));
}"""


def violations(page, context: str | None = None) -> list[dict]:
    """axe's violations in `page` (or inside the CSS selector `context`)."""
    if not AXE.is_file():
        raise FileNotFoundError(f"axe-core is missing ({AXE}): npm install --prefix tests/browser")
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(content=AXE.read_text(encoding="utf-8"))
    return page.evaluate(RUN, context)


def serious(found: list[dict]) -> list[dict]:
    return [v for v in found if v["impact"] in SERIOUS]


def summary(found: list[dict]) -> str:
    """One line per violation: impact, rule, how many elements, the first of them."""
    return "\n".join(f"{v['impact']}: {v['id']} ({v['count']}): {v['help']} e.g. {v['nodes'][:2]}" for v in found)
