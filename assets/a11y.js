// specscope: what Gradio 6.31's markup lacks for assistive technology, mended in the page (app.head).
//
// axe-core (tests/browser/test_axe_browser.py) found: an empty File box is a <div aria-label="..."> with no
// role (an aria-label a plain div may not carry): it gets role="img", which the label then names.
(() => {
  const mend = () => {
    document.querySelectorAll("div.empty[aria-label]:not([role])").forEach((d) => d.setAttribute("role", "img"));
  };
  new MutationObserver(mend).observe(document.documentElement, { childList: true, subtree: true });
})();
