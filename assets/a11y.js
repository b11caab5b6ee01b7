// specscope: what Gradio 6.31's markup lacks for assistive technology, mended in the page (app.head).
//
// axe-core (tests/browser/test_axe_browser.py) found: an empty File box is a <div aria-label="..."> with no
// role (an aria-label a plain div may not carry): it gets role="img", which the label then names. An upload box
// (.boundedheight) is named by its label alone while it shows "Drop File Here - or - Click to Upload": its name
// starts with that visible text, then the label (axe's label-content-name-mismatch).
(() => {
  const mend = () => {
    document.querySelectorAll("div.empty[aria-label]:not([role])").forEach((d) => d.setAttribute("role", "img"));
    document.querySelectorAll(".boundedheight[aria-label]").forEach((box) => {
      const seen = (box.innerText || "").replace(/\s+/g, " ").trim();
      const name = box.getAttribute("aria-label");
      if (seen && !name.includes(seen)) box.setAttribute("aria-label", `${seen}: ${name}`);
    });
  };
  new MutationObserver(mend).observe(document.documentElement, { childList: true, subtree: true });
})();
