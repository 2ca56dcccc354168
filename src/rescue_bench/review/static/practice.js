// rescue review: the practice page. The list page starts an episode (POST); the episode page shows
// the transcript and takes one step at a time. Everything is rendered with textContent (el), never
// innerHTML: the turns are typed by people.
"use strict";

(() => {
  const { api, toast, detail, el } = Review;

  for (const button of document.querySelectorAll(".practice-play")) {
    button.addEventListener("click", async () => {
      button.disabled = true;
      const resp = await api("POST", "/api/practice/episodes", { start: Number(button.dataset.start) });
      if (resp.status !== 201) { toast(detail(resp), "error"); button.disabled = false; return; }
      window.location.href = `/practice/${resp.body.id}`;
    });
  }

  const data = document.getElementById("practice-data");
  const form = document.getElementById("step-form");
  if (!data || !form) return;
  let view = JSON.parse(data.textContent);

  const LABELS = {
    J: "J (discounted utility minus max distress)",
    final_max_distress: "final max distress (0-1)",
    peak_max_distress: "peak max distress (0-1)",
    initial_max_distress: "max distress at the start",
    deescalated: "de-escalated (ends in repair)",
    neglect: "turns leaving the most distressed out",
    left_out: "steps leaving the most distressed out",
    attention_balance: "balance of attention (0-1)",
    interventions: "turns taken",
  };

  function fmt(value) {
    if (value === null || value === undefined) return "—";
    if (typeof value === "boolean") return value ? "yes" : "no";
    if (typeof value === "number" && !Number.isInteger(value)) return value.toFixed(3);
    return String(value);
  }

  function renderTranscript() {
    const list = document.getElementById("transcript");
    list.replaceChildren();
    for (const r of view.transcript) {
      const cls = [r.simulated ? "simulated" : "", r.you ? "you" : ""].join(" ").trim();
      const item = el("li", { class: cls, "data-row": String(r.row) }, el("span", { class: "speaker-name" }, r.you ? "You (therapist)" : r.speaker));
      if (r.to.length) item.append(el("span", { class: "to" }, "→ " + r.to.join(", ")));
      item.append(el("span", { class: "text" }, r.text));
      if (r.simulated && !r.you) item.append(el("span", { class: "tag" }, "(simulated)"));
      list.append(item);
    }
    const box = list.closest(".practice-transcript");  // the newest row in view, the page itself stays put
    if (box) box.scrollTop = box.scrollHeight;
  }

  function fill(select, options) {
    const before = select.value;
    select.replaceChildren(...options.map((o) => el("option", { value: o }, o)));
    if (options.includes(before)) select.value = before;
  }

  function renderForm() {
    const done = view.done;
    form.hidden = done;
    document.getElementById("score").hidden = !done;
    document.getElementById("step-title").textContent = done ? "Episode over" : "Your move";
    document.getElementById("step-count").textContent = done ? `${view.horizon} of ${view.horizon} steps` : `step ${view.step} of ${view.horizon}`;
    if (done) {
      const s = view.score;
      const rows = [
        ["J", s.J], ["final_max_distress", s.final_max_distress], ["peak_max_distress", s.peak_max_distress],
        ["initial_max_distress", s.initial_max_distress], ["deescalated", s.deescalated],
        ["neglect", `${s.neglect_hits} of ${s.neglect_turns}`], ["left_out", `${s.left_out_hits} of ${s.left_out_steps}`],
        ["attention_balance", s.attention_balance], ["interventions", `${s.interventions} of ${s.steps}`],
      ];
      const list = document.getElementById("score-list");
      list.replaceChildren(...rows.flatMap(([k, v]) => [el("dt", {}, LABELS[k]), el("dd", { id: `score-${k}` }, fmt(v))]));
      return;
    }
    fill(document.getElementById("whom"), view.targets);
    fill(document.getElementById("how"), view.strategies);
    showHelp();
    toggle();
  }

  function showHelp() {
    const how = document.getElementById("how").value;
    document.getElementById("how-help").textContent = view.strategy_help[how] || "";
  }

  function speaking() { return document.getElementById("speak-yes").checked; }
  function toggle() { document.getElementById("speak-fields").hidden = !speaking(); }

  async function step() {
    const button = document.getElementById("take-step");
    const body = { step: view.step, speak: speaking() };
    if (body.speak) {
      body.whom = document.getElementById("whom").value;
      body.how = document.getElementById("how").value;
      body.turn = document.getElementById("turn").value;
      if (!body.turn.trim()) { toast("Write what you say first (or choose Keep listening)", "error"); return; }
    }
    button.disabled = true;
    const resp = await api("POST", `/api/practice/episodes/${view.id}/steps`, body);
    button.disabled = false;
    if (resp.status !== 200) { toast(detail(resp), "error"); return; }
    view = resp.body;
    document.getElementById("turn").value = "";
    renderTranscript();
    renderForm();
    toast(view.done ? "Episode over: see your score" : "The clients answered");
  }

  form.addEventListener("change", (ev) => { if (ev.target.name === "speak") toggle(); if (ev.target.id === "how") showHelp(); });
  form.addEventListener("submit", (ev) => { ev.preventDefault(); step(); });
  renderTranscript();
  renderForm();
})();
