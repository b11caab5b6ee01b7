// specscope replay file (viz/replay_html.py): one step shown at a time, no server, no network.
//
// Each step waits in a <template class="replay-step">; showing it clones it into #replay-stage, where
// assets/story.js (also in this file's <head>) finds #story as on the live page. The inspector follows the
// story at once (story.js's "specscope:story-node" event) or the node menu. A compared step's other verifiers'
// stories wait in <template class="replay-story">. ?present=1 opens in projector mode, ?theme=dark dark, and
// #step-3 at step 3; the two toggles switch the modes. Keys: story.js (n: #replay-next-step), p here.
(() => {
  const $ = (sel, root = document) => root.querySelector(sel);
  const steps = () => document.querySelectorAll("template.replay-step");
  let current = -1;

  const inspect = (node) => {
    const stage = $("#replay-stage");
    const panels = stage.querySelectorAll(".node-panel");
    if (!panels.length) return;
    const wanted = String(node);
    if (![...panels].some((p) => p.dataset.node === wanted)) return;
    panels.forEach((p) => { p.hidden = p.dataset.node !== wanted; });
    const menu = $("#node-select", stage);
    if (menu && menu.value !== wanted) menu.value = wanted;
  };

  const showStep = (i) => {
    const all = steps();
    if (!all.length) return;
    i = Math.max(0, Math.min(all.length - 1, i));
    if (i === current) return;
    current = i;
    $("#replay-stage").replaceChildren(all[i].content.cloneNode(true));
    document.querySelectorAll("#replay-steps button[data-step]").forEach((b) => {
      if (Number(b.dataset.step) === i + 1) b.setAttribute("aria-current", "step");
      else b.removeAttribute("aria-current");
    });
    document.querySelectorAll("#generated-text .tok").forEach((t) => {
      const s = Number(t.dataset.step);
      t.hidden = s > i + 1;
      t.classList.toggle("now", s === i + 1);
    });
    $("#replay-step-position").textContent = `step ${i + 1} of ${all.length}`;
    $("#replay-prev-step").disabled = i === 0;
    $("#replay-next-step").disabled = i === all.length - 1;
    if (location.hash !== `#step-${i + 1}`) history.replaceState(null, "", `#step-${i + 1}`);
  };

  const whose = (key) => {
    const tpl = document.querySelector(
      `template.replay-story[data-step="${current + 1}"][data-verifier="${CSS.escape(key)}"]`);
    const fresh = (tpl ? tpl.content : steps()[current].content).querySelector("#story");
    const old = $("#replay-stage #story");
    if (fresh && old) old.replaceWith(fresh.cloneNode(true));
  };

  const toggle = (id, cls, on) => {
    const root = document.documentElement;
    const value = on === undefined ? !root.classList.contains(cls) : on;
    root.classList.toggle(cls, value);
    $(`#${id}`)?.setAttribute("aria-pressed", String(value));
  };

  document.addEventListener("specscope:story-node", (ev) => inspect(ev.detail.node));
  document.addEventListener("change", (ev) => {
    if (ev.target.id === "node-select") inspect(ev.target.value);
    if (ev.target.id === "story-verifier") whose(ev.target.value);
  });
  document.addEventListener("click", (ev) => {
    const b = ev.target.closest && ev.target.closest("button");
    if (!b) return;
    if (b.dataset.step && b.closest("#replay-steps")) showStep(Number(b.dataset.step) - 1);
    else if (b.id === "replay-next-step") showStep(current + 1);
    else if (b.id === "replay-prev-step") showStep(current - 1);
    else if (b.id === "present-toggle") toggle("present-toggle", "present");
    else if (b.id === "theme-toggle") toggle("theme-toggle", "dark");
  });
  document.addEventListener("keydown", (ev) => {
    if (ev.defaultPrevented || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (ev.target.closest && ev.target.closest("input, textarea, select")) return;
    if (ev.key === "p" || ev.key === "P") { ev.preventDefault(); showStep(current - 1); }
  });
  window.addEventListener("hashchange", () => {  // a #step-N link inside the file, or typed after it opened
    const at = /^#step-(\d+)$/.exec(location.hash);
    if (at) showStep(Number(at[1]) - 1);
  });
  document.addEventListener("DOMContentLoaded", () => {
    const query = new URLSearchParams(location.search);
    toggle("present-toggle", "present", query.get("present") === "1");
    toggle("theme-toggle", "dark", query.get("theme") === "dark");
    const at = /^#step-(\d+)$/.exec(location.hash);
    showStep(at ? Number(at[1]) - 1 : 0);
  });
})();
