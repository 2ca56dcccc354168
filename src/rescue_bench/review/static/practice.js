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
    final_max_distress: "distress of the most distressed, at the end (0-1)",
    peak_max_distress: "highest distress of anyone, during the episode",
    initial_max_distress: "distress of the most distressed, at the start",
    deescalated: "de-escalated (the pattern ends in repair or working together)",
    neglect: "your turns the clients heard that left the most distressed out",
    group: "of those turns, turns to everyone at once",
    left_out: "steps that left the most distressed out (silence too)",
    attention_balance: "balance of attention across clients (0-1)",
    interventions: "turns you took",
  };

  // numbers with two decimals and a true minus sign; counts and yes/no as they are
  function num(value) { return value === null || value === undefined ? "—" : (value < 0 ? "−" : "") + Math.abs(value).toFixed(2); }
  function signed(value) { return value === null || value === undefined ? "—" : (value > 0 ? "+" : "") + num(value); }
  function fmt(value) {
    if (value === null || value === undefined) return "—";
    if (typeof value === "boolean") return value ? "yes" : "no";
    if (typeof value === "number" && !Number.isInteger(value)) return num(value);
    return String(value);
  }
  function words(label) { return label ? label.replaceAll("_", " ") : "—"; }
  function names(list) { return list.length === view.clients.length && list.length > 1 ? `everyone (${list.join(", ")})` : list.join(", "); }

  // how one of the person's turns was heard: silence (no words in it), or words of a tone to some clients
  function heardText(h) {
    if (h.silent) return "silence: there are no words in this turn, so it reached no one";
    const tone = view.simulator.reads_tone && h.affect ? `${h.affect} words` : "words";
    return `${tone}, reaching ${names(h.recipients)}`;
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
      if (r.heard) item.append(el("span", { class: r.heard.silent ? "heard unheard" : "heard" }, "Heard as: " + heardText(r.heard)));
      list.append(item);
    }
    const box = list.closest(".practice-transcript");  // the newest row in view, the page itself stays put
    if (box) box.scrollTop = box.scrollHeight;
  }

  // the debrief: J on its scale, this episode's worst / floor / optimum, the steps
  function renderDebrief() {
    const d = view.debrief, s = view.score;
    const box = document.getElementById("debrief");
    box.hidden = false;
    document.getElementById("score-J").textContent = `J = ${num(d.J)}`;
    const discount = d.gamma === 1 ? "every step counts the same" : `each step counts ${d.gamma} times the one before`;
    document.getElementById("scale-text").textContent =
      `What J means: after each of your ${d.horizon} steps the group gets a step score: how the relationship stands ` +
      `(from −1 to +1: how the clients feel toward each other and the pattern between them) minus ${d.lambda} × the distress of ` +
      `the most distressed client (0 calm to 1 the most intense negative feeling). J adds the step scores (${discount}), ` +
      `so any episode of ${d.horizon} steps lies between ${num(d.scale[0])} and ${signed(d.scale[1])}; higher is better. ` +
      (d.worst !== null && d.optimum !== null ? `In this episode no sequence of moves scores below ${num(d.worst)} or above ${num(d.optimum)}.` : "");

    const bar = document.getElementById("scale-bar");
    bar.replaceChildren();
    bar.hidden = !(d.worst !== null && d.optimum !== null && d.optimum > d.worst);  // no range to draw without both ends
    if (!bar.hidden) {
      const at = (v) => `${Math.max(0, Math.min(100, (100 * (v - d.worst)) / (d.optimum - d.worst)))}%`;
      const marks = [["worst", d.worst, "worst"], ["floor", d.floor, "best fixed rule"], ["you", d.J, "you"], ["optimum", d.optimum, "optimum"]];
      for (const [key, value, label] of marks) {
        if (value === null) continue;
        const mark = el("span", { class: `mark ${key}` }, el("span", { class: "mark-label" }, `${label} ${num(value)}`));
        mark.style.left = at(value);  // CSSOM: allowed by the page's style-src 'self'
        bar.append(mark);
      }
    }

    const ref = [];
    if (d.floor !== null) {
      ref.push(["Best fixed rule (the floor)", `${num(d.floor)}: ${d.floor_words}. The best of ${d.constant_policies} rules that never look at the session, picked with hindsight for this episode.` +
        (d.floor_says ? ` Its sentence: “${d.floor_says}”` : "")]);
    }
    ref.push(["Best possible (the optimum)", d.optimum === null ? "not searched (too many states)" : `${num(d.optimum)}: the best any sequence of moves reaches, found by exhaustive search.`]);
    ref.push(["Your normalised score", d.normalised === null ? `none: ${d.normalised_note}.` :
      `${num(d.normalised)} (0 = the best fixed rule, 1 = the optimum${d.normalised < 0 ? "; below 0: a rule that never looks at the session did better" : ""}).`]);
    document.getElementById("reference").replaceChildren(...ref.flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));

    const measures = [
      ["final_max_distress", num(s.final_max_distress)], ["peak_max_distress", num(s.peak_max_distress)], ["initial_max_distress", num(s.initial_max_distress)],
      ["deescalated", s.deescalated], ["neglect", `${s.neglect_hits} of ${s.neglect_turns}`], ["group", `${s.group_turns} of ${s.neglect_turns}`],
      ["left_out", `${s.left_out_hits} of ${s.left_out_steps}`], ["attention_balance", num(s.attention_balance)], ["interventions", `${s.interventions} of ${s.steps}`],
    ];
    document.getElementById("score-list").replaceChildren(...measures.flatMap(([k, v]) => [el("dt", {}, LABELS[k]), el("dd", { id: `score-${k}` }, fmt(v))]));

    const body = document.querySelector("#breakdown tbody");
    body.replaceChildren(...d.steps.map((st) => {
      const tied = view.clients.filter((c) => c !== st.most_distressed && Math.abs(st.distress_before[c] - st.their_distress) < 1e-9);
      const top = st.most_distressed
        ? `${st.most_distressed} (${num(st.their_distress)})${tied.length ? `; tied with ${tied.join(", ")}: the first listed counts` : ""}`
        : "no one distressed";
      const move = st.spoke
        ? el("div", {}, el("div", {}, `To ${st.whom} (strategy: ${words(st.how)})`), el("q", { class: "said" }, st.turn || ""))
        : el("div", {}, "Kept listening");
      const heard = st.heard.silent ? (st.wordless ? "silence: no words in your turn" : "silence") : heardText(st.heard);
      const left = st.left_out === null ? "— (no one distressed)" : !st.left_out ? "no" : st.group_address ? "yes: a turn to everyone at once" : st.heard.silent ? "yes: silence" : "yes: someone else";
      const did = el("ul", { class: "did" });
      if (st.distress_after) {
        for (const c of view.clients) {
          const b = st.distress_before[c], a = st.distress_after[c];
          const change = a > b + 1e-9 ? "up" : a < b - 1e-9 ? "down" : "same";
          const fb = st.feeling_before[c], fa = st.feeling_after[c];
          const why = [fa.valence !== fb.valence ? `turned ${fa.valence}` : "", fa.intensity !== fb.intensity ? `intensity ${fb.intensity} → ${fa.intensity}` : ""].filter(Boolean).join(", ");
          did.append(el("li", { class: change }, `${c} ${num(b)} → ${num(a)}${change === "same" ? "" : change === "up" ? " ▲" : " ▼"}${why ? ` (${why})` : ""}`));
        }
        did.append(el("li", { class: "pattern" }, st.pattern_after === st.pattern_before ? `pattern stays ${words(st.pattern_before)}` : `pattern: ${words(st.pattern_before)} → ${words(st.pattern_after)}`));
      } else {
        did.append(el("li", {}, "no answer from the simulator: this step is not scored"));
      }
      return el("tr", { class: st.left_out ? "left-out" : "" },
        el("td", { class: "num" }, String(st.t)), el("td", {}, top), el("td", {}, move), el("td", {}, heard),
        el("td", {}, left), el("td", {}, did), el("td", { class: "num" }, signed(st.reward)));
    }));

    document.getElementById("patterns").replaceChildren(...Object.entries(d.patterns).flatMap(([p, info]) => [
      el("dt", {}, `${words(p)} (counts ${signed(info.value)} toward the relationship)`), el("dd", {}, info.definition),
    ]));
  }

  // a label key as people read it: goal_align -> Goal align (the row page's options read the same)
  function label(key) { const text = key.replaceAll("_", " "); return text.charAt(0).toUpperCase() + text.slice(1); }

  function fill(select, options, text = (o) => o) {
    const before = select.value;
    select.replaceChildren(...options.map((o) => el("option", { value: o }, text(o))));
    if (options.includes(before)) select.value = before;
  }

  function renderForm() {
    const done = view.done;
    form.hidden = done;
    document.getElementById("over").hidden = !done;
    document.getElementById("step-title").textContent = done ? "Episode over" : "Your move";
    document.getElementById("step-count").textContent = done ? `${view.horizon} of ${view.horizon} steps` : `step ${view.step} of ${view.horizon}`;
    if (done) {
      // scores and debriefs open once every session of the catalogue is played (they would teach the simulator)
      document.getElementById("debrief-ready").hidden = !view.debrief;
      const later = document.getElementById("debrief-later");
      later.hidden = !!view.debrief;
      later.textContent = `The episode is over. Your score and the step-by-step debrief open once you have played every session: ${view.starts_left} left.`;
      if (view.debrief) renderDebrief();
      return;
    }
    fill(document.getElementById("whom"), view.targets);
    fill(document.getElementById("how"), view.strategies, label);
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
    document.getElementById("listening").open = false;  // read before the first step; it stays one click away
    const mine = view.transcript.filter((r) => r.you);
    const unheard = body.speak && mine.length && mine[mine.length - 1].heard.silent;
    if (view.done && !view.debrief) {
      toast(unheard ? "Your last turn had no words, so it counted as silence. The episode is over." : "Episode over", "lasting");
      document.getElementById("debrief-later").focus();
    } else if (view.done) {
      toast(unheard ? "Your last turn had no words, so it counted as silence. The episode is over." : "Episode over: see how it went below", "lasting");
      const title = document.getElementById("debrief-title");
      title.scrollIntoView({ block: "start" });
      title.focus({ preventScroll: true });
    } else {
      toast(unheard ? "Your turn had no words the clients could hear: it counted as silence" : "The clients answered", unheard ? "lasting" : undefined);
      form.querySelector("input[name=speak]:checked").focus();  // the next step's first control, not the page top
    }
  }

  form.addEventListener("change", (ev) => { if (ev.target.name === "speak") toggle(); if (ev.target.id === "how") showHelp(); });
  form.addEventListener("submit", (ev) => { ev.preventDefault(); step(); });
  renderTranscript();
  renderForm();
  if (!view.done) form.querySelector("input[name=speak]:checked").focus({ preventScroll: true });
})();
