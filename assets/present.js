// specscope: projector mode and the dark theme on the page (loaded in the page's <head>, app.head).
//
// ?present=1 (or the "projector mode" button, ui/present.py) puts class specscope-present on <html>: app.CSS
// then folds the controls away (the "controls" button brings them back), enlarges the type and gives the
// story, the tree and the inspector the whole width. The "dark theme" button switches Gradio's own dark class
// on <body> (what ?__theme=dark sets); the figures follow through CSS (app.CSS). No server call.
(() => {
  const root = () => document.documentElement;
  const press = (id, on) => document.getElementById(id)?.setAttribute("aria-pressed", String(on));
  const present = (on) => {
    root().classList.toggle("specscope-present", on);
    root().classList.remove("specscope-controls-open");
    press("present-toggle", on);
    press("controls-toggle", false);
    window.dispatchEvent(new Event("resize"));  // plotly figures take their new width
  };
  const dark = (on) => {
    document.body.classList.toggle("dark", on);
    press("theme-toggle", on);
  };
  document.addEventListener("click", (ev) => {
    const b = ev.target.closest && ev.target.closest("#present-toggle, #theme-toggle, #controls-toggle");
    if (!b) return;
    if (b.id === "present-toggle") present(!root().classList.contains("specscope-present"));
    else if (b.id === "theme-toggle") dark(!document.body.classList.contains("dark"));
    else {
      const open = root().classList.toggle("specscope-controls-open");
      press("controls-toggle", open);
      window.dispatchEvent(new Event("resize"));
    }
  });
  const query = new URLSearchParams(location.search);
  if (query.get("present") === "1") root().classList.add("specscope-present");
  // The buttons arrive with the page's components: mark their state once they are there.
  new MutationObserver(() => {
    press("present-toggle", root().classList.contains("specscope-present"));
    press("theme-toggle", document.body.classList.contains("dark"));
    press("controls-toggle", root().classList.contains("specscope-controls-open"));
  }).observe(document.documentElement, { childList: true, subtree: true, attributes: true, attributeFilter: ["class"] });
})();
