// rescue review: the adjudication page. For each row, the chosen value of every disputed field is
// sent as "take this annotator's value" / "the draft" / a typed value, with the final copy's version;
// the server fills the agreed fields, checks the version (409 when someone adjudicated since) and
// writes the audit log.
"use strict";

(() => {
  const { api, toast, detail } = Review;
  const root = document.getElementById("adjudication");
  if (!root) return;
  const segment = root.dataset.segment;

  // a value of the adjudicator's own, in the field's kind: a choice, names or row numbers separated
  // by commas, a number, or text (never JSON to type)
  function typed(tr) {
    const input = tr.querySelector(".custom-value");
    const text = input.value;
    const kind = tr.dataset.kind;
    const label = tr.querySelector(".fieldcol").textContent.trim();
    if (kind === "names") return text.split(",").map((x) => x.trim()).filter(Boolean);
    if (kind === "ints") {
      const out = text.split(/[,\s]+/).filter(Boolean).map(Number);
      if (out.some((n) => !Number.isInteger(n))) throw new Error(`${label}: row numbers, whole numbers separated by commas`);
      return out;
    }
    if (kind === "number" || kind === "int") {
      if (text.trim() === "") return null;
      const n = Number(text);
      if (!Number.isFinite(n) || (kind === "int" && !Number.isInteger(n))) throw new Error(`${label}: not a ${kind === "int" ? "whole " : ""}number`);
      return n;
    }
    return text;
  }

  // the player: a row's own clip, else its window of the segment video
  const video = document.getElementById("adj-video");
  let win = null;
  function play(card) {
    if (!video) return;
    const clip = card.dataset.clip;
    const start = Number(card.dataset.start), end = Number(card.dataset.end);
    const src = clip || video.dataset.video;
    win = clip ? null : [start, end];
    if ((video.getAttribute("src") || "") !== src) video.src = src;
    const go = () => { video.currentTime = win ? win[0] : 0; video.play().catch(() => {}); };
    if (video.readyState >= 1) go(); else video.addEventListener("loadedmetadata", go, { once: true });
    for (const c of document.querySelectorAll(".adj-row.playing")) c.classList.remove("playing");
    card.classList.add("playing");
    const note = document.getElementById("adj-playing");
    if (note) note.textContent = `Row ${card.dataset.row}` + (card.dataset.start ? `: ${card.dataset.start}–${card.dataset.end} s` : "") + (clip ? " (its clip)" : " (segment video)");
    const subs = card.querySelector(".adj-subs");
    if (subs) subs.open = true;
  }
  if (video) {
    video.addEventListener("timeupdate", () => { if (win && video.currentTime >= win[1]) video.pause(); });
    document.addEventListener("keydown", (ev) => {
      // as on the row page: from anywhere, unless the layout types a character with it in a text field
      if (!Review.altShortcut(ev) || document.querySelector("dialog[open]")) return;
      if (ev.code === "KeyK") { ev.preventDefault(); if (video.paused) video.play().catch(() => {}); else video.pause(); }
      if (ev.code === "KeyR") { ev.preventDefault(); video.currentTime = win ? win[0] : 0; video.play().catch(() => {}); }
    });
  }

  // returns whether the row was adjudicated
  async function adjudicate(card) {
    const error = card.querySelector(".adj-error");
    error.hidden = true;
    const take = {};
    const values = {};
    try {
      for (const tr of card.querySelectorAll("tr[data-field]")) {
        const field = tr.dataset.field;
        const picked = tr.querySelector("input[type=radio]:checked");
        if (!picked) throw new Error(`${tr.querySelector(".fieldcol").textContent.trim()}: choose a value`);
        if (picked.value === "draft") take[field] = "draft";
        else if (picked.value === "custom") values[field] = typed(tr);
        else take[field] = picked.value.slice("take:".length);
      }
    } catch (e) {
      error.textContent = e.message;
      error.hidden = false;
      return false;
    }
    const row = card.dataset.row;
    const resp = await api("PUT", `/api/segments/${segment}/rows/${row}/adjudication`, { version: Number(card.dataset.version), take, values });
    if (resp.status === 200) {
      const done = document.getElementById("adj-done");
      if (done && !card.classList.contains("done")) done.textContent = String(Number(done.textContent) + 1);
      card.dataset.version = resp.body.version;
      card.classList.add("done");
      const badge = card.querySelector(".adj-status");
      badge.textContent = "adjudicated";
      badge.className = "badge reviewed adj-status";
      const button = card.querySelector(".adj-save");
      button.textContent = card.classList.contains("compact") ? "Accept again" : "Adjudicate again";
      toast(`Row ${row} adjudicated`);
      return true;
    }
    error.textContent = resp.status === 409 ? "Someone adjudicated this row since you opened the page: reload to see their choice." : detail(resp);
    error.hidden = false;
    return false;
  }

  // ---------------------------------------------------------------------------------------------
  // the keys: a row (or one of its fields) has the focus; the key printed on a value takes it (an
  // annotator's digit, D the draft, O a value of one's own) for every field the row disputes, or
  // for the field in focus; Enter adjudicates and goes on to the next row to decide; N / P move
  // between the rows to decide; the arrow keys between a row's fields
  // ---------------------------------------------------------------------------------------------
  const cards = [...document.querySelectorAll(".adj-row")];
  const sticky = document.getElementById("adj-player");
  // a row brought into view lands below the sticky header and player, not under them
  function margin() {
    const bottom = Math.max(document.querySelector(".topbar").getBoundingClientRect().bottom, sticky && getComputedStyle(sticky).position === "sticky" ? sticky.getBoundingClientRect().bottom : 0);
    document.documentElement.style.setProperty("--adj-sticky", `${Math.ceil(bottom) + 8}px`);
  }
  // focus a row or field; scrolled to when it is not wholly in view below the sticky parts (a row a
  // link names: always)
  function show(node, always = false) {
    margin();
    node.focus({ preventScroll: true });
    const card = node.closest(".adj-row") || node;
    const box = card.getBoundingClientRect();
    const limit = parseFloat(getComputedStyle(document.documentElement).getPropertyValue("--adj-sticky")) || 0;
    const keys = document.getElementById("adj-keys");
    const bottom = keys && getComputedStyle(keys).position === "sticky" ? keys.getBoundingClientRect().top : window.innerHeight;
    if (always || box.top < limit || box.bottom > bottom) card.scrollIntoView({ block: "start" });
    if (node !== card) node.scrollIntoView({ block: "nearest" });
  }
  const toDecide = () => cards.filter((c) => !c.classList.contains("done") && !c.classList.contains("compact"));
  function onward(from, step) {
    const open = toDecide();
    if (!open.length) return null;
    const at = from ? cards.indexOf(from) : -1;
    const later = step > 0 ? open.filter((c) => cards.indexOf(c) > at) : open.filter((c) => cards.indexOf(c) < at).reverse();
    return later[0] || null;
  }
  function goOn(from) {
    const next = onward(from, 1) || onward(null, 1);
    if (next) { show(next); return; }
    const link = document.querySelector("#adj-onward a.btn");
    if (link) { link.focus({ preventScroll: true }); link.scrollIntoView({ block: "nearest" }); }
    toast("Every row of this segment is decided", "lasting");
  }
  function pick(card, tr, key) {
    const fields = tr ? [tr] : [...card.querySelectorAll("tr[data-field]")];
    let missing = 0;
    for (const f of fields) {
      const option = [...f.querySelectorAll("label.option[data-keys]")].find((o) => o.dataset.keys.split(" ").includes(key));
      if (!option) { missing += 1; continue; }
      option.querySelector("input[type=radio]").checked = true;
    }
    if (missing === fields.length) toast(`No value has the key ${key.toUpperCase()} here: the keys are printed on the values`);
    else if (missing) toast(`${missing} field(s) have no value with the key ${key.toUpperCase()}: choose them field by field (↓)`);
  }
  function own(card, tr) {
    const field = tr || card.querySelector("tr[data-field]");
    const input = field && field.querySelector(".custom-value");
    if (!input) { toast("This field takes no typed value here: choose the closest and edit the final row"); return; }
    input.closest("label").querySelector("input[type=radio]").checked = true;
    input.focus();
  }
  document.addEventListener("keydown", async (ev) => {
    if (document.querySelector("dialog[open]") || ev.altKey || ev.metaKey) return;
    const t = ev.target;
    const card = t.closest ? t.closest(".adj-row") : null;
    const tr = t.closest ? t.closest("tr[data-field]") : null;
    if (Review.isTyping(t) || t.tagName === "SELECT") {
      // a value of one's own: Enter adjudicates, Esc goes back to its field
      if (!card) return;
      if (ev.key === "Escape") { ev.preventDefault(); show(tr || card); }
      else if (ev.key === "Enter" && t.tagName !== "SELECT") { ev.preventDefault(); if (await adjudicate(card)) goOn(card); }
      return;
    }
    const key = ev.key.length === 1 ? ev.key.toLowerCase() : ev.key;
    if (!ev.ctrlKey && (key === "n" || key === "p")) {
      ev.preventDefault();
      const next = onward(card, key === "n" ? 1 : -1);
      if (next) show(next); else toast(key === "n" ? "No row to decide after this one" : "No row to decide before this one");
      return;
    }
    if (!card) return;
    if (ev.key === "Enter" && (t === card || t === tr || t.type === "radio")) {
      ev.preventDefault();
      if (await adjudicate(card)) goOn(card);
    } else if (ev.ctrlKey) {
      return;
    } else if (/^[1-9d]$/.test(key)) {
      ev.preventDefault();
      pick(card, tr, key);
    } else if (key === "o") {
      ev.preventDefault();
      own(card, tr);
    } else if ((ev.key === "ArrowDown" || ev.key === "ArrowUp") && t.type !== "radio") {
      ev.preventDefault();
      const fields = [...card.querySelectorAll("tr[data-field]")];
      const at = fields.indexOf(tr);
      if (ev.key === "ArrowDown" && at < fields.length - 1) show(fields[at + 1]);
      else if (ev.key === "ArrowUp") show(at > 0 ? fields[at - 1] : card);
    }
  });
  // arrival: the row a link names (#adj-4), else the first row to decide, has the focus, in view
  const named = window.location.hash.startsWith("#adj-") ? document.getElementById(window.location.hash.slice(1)) : null;
  const first = named && named.classList.contains("adj-row") ? named : onward(null, 1);
  if (first) requestAnimationFrame(() => show(first, first === named));
  window.addEventListener("hashchange", () => {
    const target = document.getElementById(window.location.hash.slice(1));
    if (target && target.classList.contains("adj-row")) show(target, true);
  });
  window.addEventListener("resize", margin);

  for (const card of document.querySelectorAll(".adj-row")) {
    card.querySelector(".adj-save").addEventListener("click", () => adjudicate(card));
    const button = card.querySelector(".adj-play");
    if (button) button.addEventListener("click", () => play(card));
    // typing a value of one's own selects "other"
    for (const input of card.querySelectorAll(".custom-value")) {
      const pick = () => { input.closest("label").querySelector("input[type=radio]").checked = true; };
      input.addEventListener("input", pick);
      input.addEventListener("change", pick);
    }
  }
  const accept = document.getElementById("accept-agreed");
  if (accept) accept.addEventListener("click", async () => {
    const resp = await api("POST", `/api/segments/${segment}/adjudication/accept-agreed`);
    if (resp.status === 200) { toast(`${resp.body.accepted} row(s) accepted`); setTimeout(() => window.location.reload(), 800); }
    else toast(detail(resp), "error");
  });
})();
