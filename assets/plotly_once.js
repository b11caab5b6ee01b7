// specscope: draw each new figure once. Loaded in the page's <head> (app.serve).
//
// Gradio 6.31's Plot remounts its plotly component on every new value (a {#key} block): the outgoing
// component first redraws its own div, about to be removed, with the new figure, then the new one
// draws it again on a fresh div. Every figure of a Step was drawn twice, in one long browser task.
// Here Plotly.react waits one microtask (the rest of the update) and skips a div that has left the
// page by then. Gradio also calls Plots.resize after every draw, a full relayout 100 ms later; it
// is skipped when the plot already has its container's width (a real resize still relayouts).
(() => {
  const once = (P) => {
    if (!P || P.__specscopeOnce) return;
    P.__specscopeOnce = true;
    const react = P.react.bind(P);
    P.react = (gd, ...args) => new Promise((resolve, reject) => queueMicrotask(() => {
      if (gd && gd.isConnected === false) { resolve(gd); return; }
      react(gd, ...args).then(resolve, reject);
    }));
    const resize = P.Plots.resize.bind(P.Plots);
    P.Plots.resize = (gd) => new Promise((resolve) => setTimeout(() => {
      const full = gd && gd._fullLayout;
      if (!gd || !gd.isConnected || (full && gd.clientWidth > 0 && Math.abs(gd.clientWidth - full.width) < 1)) {
        resolve(gd);
        return;
      }
      resize(gd).then(resolve, () => resolve(gd));
    }, 100));
  };
  let current = window.Plotly;
  once(current);
  Object.defineProperty(window, "Plotly", {
    configurable: true,
    get: () => current,
    set: (value) => { current = value; once(value); },
  });
})();
