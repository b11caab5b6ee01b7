// specscope: the step's story (viz/story_html.py), moved through in the page: no server round trip per event.
//
// ◀ / ▶ show the previous / next event: its narration in #story-text, "event i of n" in #story-position, the
// tree points it is about highlighted (the rest dimmed, straight on the drawn SVG: no plotly redraw), and
// the node it is about sent to the inspector through the hidden #story-node box (one server call, after).
// ▶▶ plays the events at the pace of #story-pace. Loaded in the page's <head> (app.head), and in the replay
// file's (viz/replay_html.py), whose tree is plain SVG (points carry data-node) and whose inspector is in the
// file: it listens for the "specscope:story-node" event, sent at once with each event shown.
// Keys (outside text boxes, menus and sliders): ← / → the previous / next event, space plays or pauses,
// n the next step (the replay file's next step; the page's Step button).
(() => {
  let timer = null;
  let shown = null;  // the #story element the page shows now (a new step replaces it)
  const story = () => document.getElementById("story");
  const items = (s) => s.querySelectorAll("#story-events > li");

  const stop = () => {
    if (timer) clearTimeout(timer);
    timer = null;
    const play = document.getElementById("story-play");
    if (play) play.textContent = "▶▶";
  };

  const highlight = (focus) => {
    const keep = focus ? new Set(focus) : null;
    const svgPoints = document.querySelectorAll("#tree-plot svg g.point[data-node]");
    if (svgPoints.length) {  // the replay file's SVG tree: each point names its node
      svgPoints.forEach((g) => { g.style.opacity = !keep || keep.has(Number(g.dataset.node)) ? "" : "0.15"; });
      document.querySelectorAll("#tree-plot svg path.edge").forEach((e) => { e.style.opacity = keep ? "0.3" : ""; });
      return;
    }
    const gd = document.querySelector("#tree-plot .js-plotly-plot");
    if (!gd || !gd.data) return;
    gd.querySelectorAll(".scatterlayer .trace").forEach((g, i) => {
      const ids = gd.data[i] && gd.data[i].customdata;
      if (!ids) { g.style.opacity = keep ? "0.3" : ""; return; }  // edges
      const points = g.querySelectorAll("path.point");
      const texts = g.querySelectorAll(".textpoint");
      ids.forEach((row, j) => {
        const o = !keep || keep.has(Number(row[0])) ? "" : "0.15";
        if (points[j]) points[j].style.opacity = o;
        if (texts[j]) texts[j].style.opacity = o;
      });
    });
  };

  // The inspector follows once the story rests (120 ms without a move): quick ◀/▶ presses send one call.
  let pending = null;
  const follow = (s, node) => {
    document.dispatchEvent(new CustomEvent("specscope:story-node", { detail: { key: s.dataset.key, node } }));
    if (!document.getElementById("story-node")) return;  // no server to tell (the replay file)
    if (pending) clearTimeout(pending);
    pending = setTimeout(() => {
      pending = null;
      const box = document.querySelector("#story-node textarea, #story-node input");
      const value = `${s.dataset.key}:${node}`;
      if (!box || box.value === value) return;
      box.value = value;
      box.dispatchEvent(new Event("input", { bubbles: true }));
    }, 120);
  };

  const show = (s, i) => {
    const all = items(s);
    if (!all.length) return;
    i = Math.max(0, Math.min(all.length - 1, i));
    const e = all[i];
    s.dataset.at = String(i);
    document.getElementById("story-text").textContent = e.textContent;
    document.getElementById("story-position").textContent = `event ${i + 1} of ${all.length}`;
    highlight(e.dataset.focus ? e.dataset.focus.split(",").map(Number) : []);
    follow(s, e.dataset.node);
  };

  const tick = () => {
    const s = story();
    if (!s) return stop();
    const at = Number(s.dataset.at || 0);
    if (at + 1 >= items(s).length) return stop();
    show(s, at + 1);
    const pace = Number(document.getElementById("story-pace")?.value || 1500);
    timer = setTimeout(tick, pace);
  };

  const press = (id) => {
    const s = story();
    if (!s || !items(s).length) return;
    const at = Number(s.dataset.at || 0);
    if (id === "story-play") {
      if (timer) return stop();
      if (at + 1 >= items(s).length) show(s, 0);
      const button = document.getElementById("story-play");
      if (button) button.textContent = "❚❚";
      const pace = Number(document.getElementById("story-pace")?.value || 1500);
      timer = setTimeout(tick, pace);
      return;
    }
    stop();
    show(s, at + (id === "story-next" ? 1 : -1));
  };

  document.addEventListener("click", (ev) => {
    const button = ev.target.closest && ev.target.closest("#story-prev, #story-next, #story-play");
    if (button) press(button.id);
  });

  // Keys, except where a key already means something: typing, a menu, a slider, a tab bar, a focused button
  // (space presses it), or with a modifier held (the browser's own shortcuts).
  const KEYS = { ArrowLeft: "story-prev", ArrowRight: "story-next", " ": "story-play" };
  const busy = (el) => !!(el && el.closest && el.closest(
    "input, textarea, select, [contenteditable=''], [contenteditable=true], [role=slider], [role=combobox], "
    + "[role=listbox], [role=option], [role=tab], [role=menu], [role=menuitem], [role=spinbutton], [role=textbox]"));
  document.addEventListener("keydown", (ev) => {
    if (ev.defaultPrevented || ev.ctrlKey || ev.metaKey || ev.altKey || busy(ev.target)) return;
    if (ev.key === " " && ev.target.closest && ev.target.closest("button, a")) return;
    if (ev.key === "n" || ev.key === "N") {
      const next = document.getElementById("replay-next-step") || document.getElementById("step-btn");
      if (next && !next.disabled) { ev.preventDefault(); next.click(); }
      return;
    }
    if (!KEYS[ev.key] || !story() || !items(story()).length) return;
    ev.preventDefault();  // no page scroll
    press(KEYS[ev.key]);
  });

  // No story yet (before a Step, after Reset): its controls are disabled (app.CSS greys them at once).
  const enable = (s) => {
    const none = !s || !items(s).length;
    s?.querySelectorAll(".story-bar button, #story-pace").forEach((c) => { c.disabled = none; });
  };

  // A new step (or another verifier's story) replaces #story: stop playing and undim the tree.
  new MutationObserver(() => {
    const s = story();
    if (s !== shown) { shown = s; stop(); highlight(null); enable(s); }
  }).observe(document.documentElement, { childList: true, subtree: true });
})();
