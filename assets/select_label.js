// specscope: a dropdown's chosen label shown whole when it is wider than its box (e.g. "Recursive rejection
// sampling without replacement (rrs_wor)" in the verifier menu). Gradio draws a dropdown's value in an <input>,
// which never wraps: the label was cut, under the caret. Here a copy of the label (.specscope-label) stands
// beside the input and wraps; app.CSS shows it, with the input laid transparent over it, while the dropdown is
// not being typed in (:focus-within), so a click still opens the menu. Loaded in the page's <head> (app.head).
(() => {
  const sync = () => {
    document.querySelectorAll(".secondary-wrap > input[role=combobox]").forEach((input) => {
      const wrap = input.parentElement;
      let label = wrap.querySelector(":scope > .specscope-label");
      if (!label) {
        label = document.createElement("div");
        label.className = "specscope-label";
        label.setAttribute("aria-hidden", "true");  // the input keeps the value for readers
        input.after(label);
      }
      if (wrap.contains(document.activeElement)) return;  // typing: the input as Gradio draws it
      const seen = `${wrap.clientWidth}:${input.value}`;
      if (wrap.dataset.seen === seen) return;  // measured already: no layout forced every look
      wrap.dataset.seen = seen;
      label.textContent = input.value;
      wrap.classList.remove("specscope-long");  // measured at its own width, in its place
      wrap.classList.toggle("specscope-long", input.scrollWidth > input.clientWidth + 1);
    });
  };
  // the value changes with no DOM event (a menu pick, a server update): a cheap look, a few times a second
  setInterval(sync, 300);
})();
