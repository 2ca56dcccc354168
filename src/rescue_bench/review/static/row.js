// rescue review: the row editor. The form is filled from the page's JSON data (never via HTML), a save
// sends only the fields that changed with the version the edit started from, and a 409 opens the
// merge panel with the other person's values beside yours. Nothing typed is ever thrown away.
"use strict";

(() => {
  const { api, toast, detail, el } = Review;
  const data = JSON.parse(document.getElementById("page-data").textContent);
  window.ROW_PAGE = data;
  const form = document.getElementById("row-form");
  const fieldEls = [...form.querySelectorAll(".field[data-field]")];
  const byName = Object.fromEntries(fieldEls.map((f) => [f.dataset.field, f]));
  const SELECTS = new Set(["speaker", "person", "name", "utterance", "pattern", "strategy"]);
  const TEXTS = new Set(["text", "longtext"]);
  const NUMBERS = new Set(["int", "number", "intensity"]);

  let version = data.version;
  let base = data.row; // the saved row this form's edits start from
  const server = { version: data.version, row: data.row }; // the row as the page got it
  let reviewed = data.reviewed;
  const baseline = {}; // field -> JSON of the form's value for `base`
  let pending = null; // the 409 answer being merged

  class FieldError extends Error {
    constructor(field, message) { super(message); this.field = field; }
  }

  // ---------------------------------------------------------------------------------------------
  // values <-> controls
  // ---------------------------------------------------------------------------------------------
  function normScalar(kind, v) {
    if (SELECTS.has(kind) || TEXTS.has(kind)) return typeof v === "string" ? v : v == null ? "" : String(v);
    if (NUMBERS.has(kind)) return typeof v === "number" ? v : null;
    if (kind === "names") return Array.isArray(v) ? v.filter((x) => typeof x === "string") : [];
    if (kind === "ints") return Array.isArray(v) ? v.filter((x) => Number.isInteger(x)) : [];
    return v;
  }

  const subsCache = new Map();
  function subsOf(f) {
    if (!subsCache.has(f)) {
      const tpl = f.querySelector("template.item-template");
      subsCache.set(f, [...tpl.content.querySelectorAll(".sub")].map((s) => [s.dataset.sub, s.dataset.kind]));
    }
    return subsCache.get(f);
  }

  function normList(f, v) {
    if (!Array.isArray(v)) return [];
    const subs = subsOf(f);
    return v.map((item) => {
      const obj = item && typeof item === "object" ? item : {};
      const out = {};
      for (const [name, kind] of subs) out[name] = normScalar(kind, obj[name]);
      for (const [k, val] of Object.entries(obj)) if (!(k in out)) out[k] = val;
      return out;
    });
  }

  function norm(f, v) {
    return f.dataset.kind === "list" ? normList(f, v) : normScalar(f.dataset.kind, v);
  }

  function setChips(ctrl, v) {
    const values = normScalar("names", v);
    const choices = JSON.parse(ctrl.dataset.choices || "[]");
    ctrl.textContent = "";
    const order = [...new Set([...values, ...choices])];
    for (const name of order) {
      const input = el("input", { type: "checkbox", value: name });
      input.checked = values.includes(name);
      ctrl.append(el("label", { class: "chip" + (choices.includes(name) ? "" : " unknown"), title: choices.includes(name) ? "" : "not among the participants" }, input, " " + name));
    }
  }

  function setControl(ctrl, kind, v) {
    if (kind === "names") return setChips(ctrl, v);
    const val = normScalar(kind, v);
    if (SELECTS.has(kind)) {
      if (val && ![...ctrl.options].some((o) => o.value === val)) {
        ctrl.append(el("option", { value: val, class: "unknown" }, val + " (not in the list)"));
      }
      ctrl.value = val;
      return;
    }
    if (kind === "ints") { ctrl.value = val.join(", "); return; }
    ctrl.value = val == null ? "" : String(val);
  }

  function getControl(ctrl, kind, field) {
    if (kind === "names") return [...ctrl.querySelectorAll("input:checked")].map((i) => i.value);
    if (SELECTS.has(kind) || TEXTS.has(kind)) return ctrl.value;
    if (NUMBERS.has(kind)) {
      if (ctrl.validity && ctrl.validity.badInput) throw new FieldError(field, "not a number");
      const t = ctrl.value.trim();
      if (t === "") return null;
      const n = Number(t);
      if (!Number.isFinite(n)) throw new FieldError(field, "not a number");
      if (kind === "int" && !Number.isInteger(n)) throw new FieldError(field, "must be a whole number");
      if (kind === "intensity" && (n < 0 || n > 10)) throw new FieldError(field, "intensity must be between 0 and 10");
      return n;
    }
    if (kind === "ints") {
      const parts = ctrl.value.split(/[,\s]+/).filter(Boolean);
      const out = parts.map(Number);
      if (out.some((n) => !Number.isInteger(n))) throw new FieldError(field, "row numbers: whole numbers separated by commas");
      return out;
    }
    return ctrl.value;
  }

  function addItem(f, item) {
    const tpl = f.querySelector("template.item-template");
    const node = tpl.content.firstElementChild.cloneNode(true);
    const subs = subsOf(f).map(([n]) => n);
    const extra = {};
    for (const [k, val] of Object.entries(item || {})) if (!subs.includes(k)) extra[k] = val;
    node.dataset.extra = JSON.stringify(extra);
    for (const sub of node.querySelectorAll(".sub")) {
      setControl(sub.querySelector("[data-kind]"), sub.dataset.kind, (item || {})[sub.dataset.sub]);
    }
    f.querySelector(".items").append(node);
    for (const sel of node.querySelectorAll("select")) showHint(sel);
    return node;
  }

  function setField(f, v) {
    if (f.dataset.kind === "list") {
      f.querySelector(".items").textContent = "";
      for (const item of normList(f, v)) addItem(f, item);
    } else {
      setControl(f.querySelector(".control [data-kind]"), f.dataset.kind, v);
    }
  }

  function collectField(f) {
    const name = f.dataset.field;
    if (f.dataset.kind === "list") {
      return [...f.querySelectorAll(".items > .item")].map((node) => {
        const out = {};
        for (const sub of node.querySelectorAll(".sub")) out[sub.dataset.sub] = getControl(sub.querySelector("[data-kind]"), sub.dataset.kind, name);
        return Object.assign(out, JSON.parse(node.dataset.extra || "{}"));
      });
    }
    return getControl(f.querySelector(".control [data-kind]"), f.dataset.kind, name);
  }

  function changes() {
    const out = {};
    for (const f of fieldEls) {
      const v = collectField(f);
      if (JSON.stringify(v) !== baseline[f.dataset.field]) out[f.dataset.field] = v;
    }
    return out;
  }

  // label keys as people read them (the option text without its hotkey number)
  const readable = {};
  for (const o of form.querySelectorAll('select[data-kind="pattern"] option, select[data-kind="strategy"] option, select[data-kind="utterance"] option')) {
    if (o.value) readable[o.value] = o.textContent.replace(/^[0-9A-Z] · /, "");
  }
  function fieldLabel(name) {
    const f = byName[name];
    const l = f && f.querySelector(".lbl");
    return l ? l.textContent : name;
  }
  function shown(name, v) {
    const f = byName[name];
    if (f && SELECTS.has(f.dataset.kind) && typeof v === "string" && readable[v]) return readable[v];
    if (Array.isArray(v)) return compact(v.map((x) => (x && typeof x === "object" && typeof x.strategy_type === "string" && readable[x.strategy_type] ? { ...x, strategy_type: readable[x.strategy_type] } : x)));
    return compact(v);
  }

  function compact(v) {
    if (v == null) return "(empty)";
    if (typeof v === "string") return v.trim() ? v : '""';
    if (typeof v === "number" || typeof v === "boolean") return String(v);
    if (Array.isArray(v)) return v.length ? v.map((x) => (x && typeof x === "object" && !Array.isArray(x) ? item(x) : compact(x))).join(" | ") : "(none)";
    if (typeof v === "object") return item(v);
    return String(v);
  }
  function item(o) {
    const parts = Object.entries(o).filter(([, x]) => !(x == null || x === "" || (Array.isArray(x) && !x.length))).map(([k, x]) => `${k}: ${Array.isArray(x) ? x.join(", ") : x}`);
    return parts.length ? parts.join("; ") : "(empty item)";
  }

  // ---------------------------------------------------------------------------------------------
  // state shown on the page
  // ---------------------------------------------------------------------------------------------
  function markField(f) {
    const name = f.dataset.field;
    let value;
    try { value = collectField(f); } catch (e) { return; }
    const differs = JSON.stringify(value) !== JSON.stringify(norm(f, data.draft[name]));
    f.classList.toggle("changed", differs);
    f.querySelector(".draft").hidden = !differs;
    f.classList.toggle("dirty", JSON.stringify(value) !== baseline[name]);
  }

  function isDirty() {
    try { return Object.keys(changes()).length > 0; } catch (e) { return true; }
  }

  function refreshDirty() {
    document.getElementById("dirty").hidden = !isDirty();
  }

  function clearErrors() {
    for (const e of form.querySelectorAll(".field-error")) { e.hidden = true; e.textContent = ""; }
  }

  function showError(field, message) {
    const f = byName[field];
    if (f) {
      const box = f.querySelector(".field-error");
      box.textContent = message;
      box.hidden = false;
      f.scrollIntoView({ block: "center" });
    }
    toast((field ? fieldLabel(field) + ": " : "") + message, "error");
  }

  function showStatus() {
    const status = reviewed ? "reviewed" : data.flag ? data.flag : data.edited ? "edited" : "pending";
    const badge = document.getElementById("row-status");
    badge.textContent = status;
    badge.className = "badge " + status;
    const meta = document.getElementById("row-meta");
    meta.textContent = `v${version}` + (data.updatedBy ? ` · last saved by ${data.updatedBy}` : "");
    document.getElementById("save-reviewed").textContent = reviewed ? "Save (reviewed)" : "Save & mark reviewed";
    document.getElementById("flag-banner").hidden = !data.flag;
    document.getElementById("flag-text").textContent = data.flag ? `This row is ${data.flag}: ${data.flagReason || ""}` : "";
  }

  function loadBase(row) {
    base = row;
    for (const f of fieldEls) {
      const name = f.dataset.field;
      let current;
      try { current = JSON.stringify(collectField(f)); } catch (e) { current = null; }
      if (current !== JSON.stringify(norm(f, row[name]))) setField(f, row[name]);
      baseline[name] = JSON.stringify(collectField(f));
      markField(f);
    }
    refreshDirty();
  }

  // ---------------------------------------------------------------------------------------------
  // saving and merging
  // ---------------------------------------------------------------------------------------------
  // A save shows its state in the toolbar and keeps the save buttons off while it runs; a second
  // Ctrl+S then says so (it never queues a save nor drops one silently). A save without an answer
  // in SAVE_TIMEOUT_MS is given up with the changes kept, and Retry sends it again: if the lost
  // request did reach the server, the retry's 409 shows our own save, which counts as saved.
  const SAVE_TIMEOUT_MS = 10000;
  const saveState = document.getElementById("save-state");
  const retry = document.getElementById("save-retry");
  let inflight = null; // {started} while a save runs
  let failed = null; // {mark, flag} of the save that got no answer
  const saveButtons = () => ["save", "save-reviewed", "unreview", "row-skip"].map((id) => document.getElementById(id)).filter(Boolean);

  function setSaving(on) {
    document.body.classList.toggle("busy", on);
    for (const b of saveButtons()) b.disabled = on || data.segmentStatus === "discarded";
    saveState.className = "save-state" + (on ? " saving" : "");
    saveState.textContent = on ? "Saving…" : "";
  }

  function saveFailed(why, short, mark, flag) {
    failed = { mark, flag };
    saveState.className = "save-state failed";
    saveState.textContent = `Not saved: ${short}`;
    retry.hidden = false;
    toast(`Not saved: ${why}. Your changes are still here: Retry, or Ctrl+S.`, "error");
  }

  function clearFailed() {
    failed = null;
    retry.hidden = true;
    if (saveState.classList.contains("failed")) { saveState.className = "save-state"; saveState.textContent = ""; }
  }

  // a 409 that is our own save (a retry of a request that did reach the server): one version on,
  // by us, holding every value we sent
  function ourOwn(cur, fields, markReviewed, flag) {
    if (!cur || cur.updated_by !== data.user || cur.version !== version + 1) return false;
    if (markReviewed !== undefined && cur.reviewed !== markReviewed) return false;
    if (flag && (cur.flag || null) !== flag.state) return false;
    return Object.keys(fields).every((n) => !byName[n] || JSON.stringify(norm(byName[n], cur.row[n])) === JSON.stringify(norm(byName[n], fields[n])));
  }

  function saved(body) {
    version = body.version;
    reviewed = body.reviewed;
    data.edited = body.edited;
    data.updatedBy = body.updated_by;
    data.flag = body.flag;
    data.flagReason = body.flag_reason;
    loadBase(body.row);
    showStatus();
    forgetLocal();
    showStale();
    hideRestored();
  }

  // flag: {state, reason} skips or discards the row (state null clears its flag), with the edits
  async function save(markReviewed, flag) {
    if (inflight) {
      toast(`Still saving (${Math.round((Date.now() - inflight.started) / 1000)} s): this save goes on; if it fails, Retry sends it again`, "wait");
      return false;
    }
    clearErrors();
    let fields;
    try { fields = changes(); } catch (e) { showError(e.field, e.message); return false; }
    if (!Object.keys(fields).length && (markReviewed === undefined || markReviewed === reviewed) && !flag) {
      clearFailed();
      toast("Nothing to save");
      return true;
    }
    const body = { version, fields };
    if (markReviewed !== undefined) body.reviewed = markReviewed;
    if (flag) body.flag = flag;
    inflight = { started: Date.now() };
    clearFailed();
    setSaving(true);
    let resp = null;
    let error = null;
    try {
      resp = await api("PUT", `/api/segments/${data.segment}/rows/${data.position}`, body, { timeout: SAVE_TIMEOUT_MS });
    } catch (e) {
      error = e;
    } finally {
      inflight = null;
      setSaving(false);
    }
    if (error) {
      const late = error.name === "TimeoutError";
      saveFailed(late ? `no answer from the server in ${SAVE_TIMEOUT_MS / 1000} s` : "the server could not be reached", late ? `no answer in ${SAVE_TIMEOUT_MS / 1000} s` : "server unreachable", markReviewed, flag);
      return false;
    }
    if (resp.status === 200 || (resp.status === 409 && ourOwn(resp.body, fields, markReviewed, flag))) {
      saved(resp.body);
      toast(flag ? (flag.state ? `Row ${flag.state}` : "Flag cleared") : markReviewed ? "Saved and marked reviewed" : "Saved");
      return true;
    }
    if (resp.status === 409) { showConflict(resp.body, fields); return false; }
    if (resp.status === 422) { showError(resp.body && resp.body.field, detail(resp)); return false; }
    toast(detail(resp), "error");
    return false;
  }

  function showConflict(cur, mine) {
    pending = { cur, mine };
    const theirs = fieldEls.filter((f) => JSON.stringify(norm(f, cur.row[f.dataset.field])) !== JSON.stringify(norm(f, base[f.dataset.field]))).map((f) => f.dataset.field);
    const names = [...new Set([...theirs, ...Object.keys(mine)])];
    const tbody = document.querySelector("#conflict-table tbody");
    tbody.textContent = "";
    for (const name of names) {
      const both = theirs.includes(name) && name in mine;
      let keep;
      if (both) {
        keep = el("span", { class: "keep" });
        for (const who of ["mine", "theirs"]) {
          const radio = el("input", { type: "radio", name: "keep-" + name, value: who });
          radio.checked = who === "mine";
          keep.append(el("label", {}, radio, " " + who));
        }
      } else {
        keep = el("span", { class: "small muted" }, theirs.includes(name) ? "theirs (you did not change it)" : "mine (they did not change it)");
      }
      tbody.append(el("tr", { "data-field": name }, el("td", {}, fieldLabel(name)), el("td", {}, shown(name, cur.row[name])), el("td", {}, name in mine ? shown(name, mine[name]) : "(unchanged)"), el("td", {}, keep)));
    }
    const when = cur.updated_at ? new Date(cur.updated_at).toLocaleString() : "";
    document.getElementById("conflict-who").textContent = `(${cur.updated_by || "someone"}${when ? ", " + when : ""}; now version ${cur.version})`;
    const panel = document.getElementById("conflict");
    panel.hidden = false;
    panel.scrollIntoView({ block: "nearest" });
  }

  function merge() {
    if (!pending) return;
    const { cur, mine } = pending;
    for (const f of fieldEls) {
      const name = f.dataset.field;
      const theirsChanged = JSON.stringify(norm(f, cur.row[name])) !== JSON.stringify(norm(f, base[name]));
      const radio = document.querySelector(`input[name="keep-${name}"]:checked`);
      const takeTheirs = theirsChanged && (!(name in mine) || (radio && radio.value === "theirs"));
      if (takeTheirs) setField(f, cur.row[name]);
    }
    version = cur.version;
    reviewed = cur.reviewed;
    data.edited = cur.edited;
    data.updatedBy = cur.updated_by;
    base = cur.row;
    for (const f of fieldEls) {
      baseline[f.dataset.field] = JSON.stringify(norm(f, cur.row[f.dataset.field]));
      markField(f);
    }
    pending = null;
    document.getElementById("conflict").hidden = true;
    showStatus();
    refreshDirty();
    writeLocal();
    toast("Merged: your values are in the form. Save to apply them.");
  }

  // ---------------------------------------------------------------------------------------------
  // hints, speaker roles, hotkeys
  // ---------------------------------------------------------------------------------------------
  // the definition and boundary rules of the chosen label, under its select
  function showHint(sel) {
    const opt = sel.selectedOptions[0];
    const text = (opt && opt.dataset.hint) || "";
    const f = sel.closest(".field");
    const box = sel.id ? document.getElementById(sel.id + "-hint") : sel.parentElement.querySelector(".hint");
    if (box) box.textContent = text;
    sel.title = (opt && opt.title) || "";
    return f;
  }

  const therapist = form.dataset.therapist || "Therapist";
  const groups = JSON.parse(form.dataset.groups || "[]");
  function roleOf(speaker) {
    const name = (speaker || "").trim();
    if (!name) return "";
    if (name === therapist) return "therapist";
    return groups.includes(name) ? "group" : "client";
  }
  function safeValue(f) {
    try { return collectField(f); } catch (e) { return undefined; }
  }
  function hasValue(f) {
    const v = safeValue(f);
    return v === undefined || !(v == null || v === "" || (Array.isArray(v) && !v.length));
  }
  // fields SPEC scopes to therapist or client rows show on those rows only; one holding a value on
  // another row stays visible, with a note, so nothing is ever hidden that export would write
  function applyRole() {
    const role = byName.primary_speaker ? roleOf(safeValue(byName.primary_speaker)) : "";
    for (const f of fieldEls) {
      if (!f.dataset.role) continue;
      const off = role !== "" && role !== f.dataset.role;
      const filled = off && hasValue(f);
      f.classList.toggle("off-role", off);
      f.classList.toggle("has-value", filled);
      const note = f.querySelector(".role-note");
      note.hidden = !filled;
      note.querySelector(".role-note-text").textContent = filled
        ? `For ${f.dataset.role} rows only, yet this ${role === "group" ? "group-speaker" : role} row holds a value (from the draft or a save). Export writes it as it is: clear it unless the speaker is wrong.`
        : "";
    }
    // a section left with nothing to show (support strategy on a client row) is not an empty box
    for (const set of form.querySelectorAll("fieldset")) {
      const fields = [...set.querySelectorAll(".field")];
      set.hidden = fields.length > 0 && fields.every((f) => f.classList.contains("off-role") && !f.classList.contains("has-value"));
    }
    checkSoon();
  }

  // ---------------------------------------------------------------------------------------------
  // what the annotator has seen: marking a row reviewed confirms its fields, so every field shown
  // must have been in view (at least half of it, or half the visible height for a tall one) first
  // ---------------------------------------------------------------------------------------------
  const seen = new Set();
  const toolbar = document.querySelector(".toolbar");
  function shownFields() {
    return fieldEls.filter((f) => f.offsetParent !== null && f.getClientRects().length > 0);
  }
  // the top of what shows of the form: below the toolbar, which stays in view over a page that scrolls
  function shownTop() {
    return Math.max(form.getBoundingClientRect().top, toolbar.getBoundingClientRect().bottom, 0);
  }
  function checkSeen() {
    const formBox = form.getBoundingClientRect();
    const top = shownTop();
    const bottom = Math.min(formBox.bottom, window.innerHeight);
    const height = bottom - top;
    if (height <= 0) return;
    for (const f of shownFields()) {
      if (seen.has(f)) continue;
      const r = f.getBoundingClientRect();
      const inView = Math.min(r.bottom, bottom) - Math.max(r.top, top);
      if (r.height > 0 && inView >= Math.min(r.height, height / 2) - 1) {
        seen.add(f);
        f.classList.remove("unseen");
      }
    }
  }
  let seenFrame = 0;
  const checkSoon = () => { if (!seenFrame) seenFrame = requestAnimationFrame(() => { seenFrame = 0; checkSeen(); }); };
  document.addEventListener("scroll", checkSoon, true); // capture: the form and the page both scroll
  const toolbarHeight = () => document.documentElement.style.setProperty("--row-toolbar", `${toolbar.offsetHeight}px`);
  toolbarHeight();
  window.addEventListener("resize", () => { toolbarHeight(); checkSoon(); });
  form.addEventListener("toggle", checkSoon, true); // a definitions list opened or closed moves what follows
  // the fields shown that were never in view: marking reviewed scrolls to the first and waits
  function unseenFields() {
    checkSeen();
    return shownFields().filter((f) => !seen.has(f));
  }
  function showUnseen(unseen) {
    form.dataset.asks = String(Number(form.dataset.asks || 0) + 1); // how often marking reviewed was held back
    for (const f of unseen) f.classList.add("unseen");
    unseen[0].scrollIntoView({ block: "start" });
    const covered = shownTop() + 6 - unseen[0].getBoundingClientRect().top;  // under the sticky toolbar
    if (covered > 0) window.scrollBy(0, -covered);
    checkSeen();
    const still = unseenFields();
    const names = unseen.map((f) => fieldLabel(f.dataset.field));
    toast(`Not marked reviewed yet: ${names.length} field(s) not yet in view (${names.slice(0, 3).join(", ")}${names.length > 3 ? ", …" : ""}) are marked. Check them, then ${still.length ? "Ctrl+Enter shows the next ones" : "Ctrl+Enter marks the row reviewed"}.`, "lasting");
  }

  // with a select focused, the key printed on a choice picks it (0 = none); any other letter or
  // digit does nothing (the browser's type-ahead would pick a choice by its text instead)
  form.addEventListener("keydown", (ev) => {
    const t = ev.target;
    if (t.tagName !== "SELECT" || ev.ctrlKey || ev.metaKey || ev.altKey || !/^[0-9a-z]$/i.test(ev.key)) return;
    ev.preventDefault();
    const key = ev.key.toUpperCase();
    const i = key === "0" ? 0 : [...t.options].findIndex((o) => o.dataset.key === key);
    if (i < 0) { toast(`No choice has the key ${key} here: the keys are printed on the choices`); return; }
    t.selectedIndex = i;
    t.dispatchEvent(new Event("change", { bubbles: true }));
  });

  // ---------------------------------------------------------------------------------------------
  // unsaved edits kept in this browser: they survive an ended session, a reload or a crash
  // ---------------------------------------------------------------------------------------------
  const localKey = `rescue-review:edits:${data.user}:${data.segment}:${data.position}`;
  let localTimer = null;
  function writeLocal() {
    clearTimeout(localTimer);
    const fields = {};
    for (const f of fieldEls) {
      const v = safeValue(f);
      if (v !== undefined && JSON.stringify(v) !== baseline[f.dataset.field]) fields[f.dataset.field] = v;
    }
    try {
      if (!Object.keys(fields).length) { localStorage.removeItem(localKey); return; }
      const from = {};
      for (const k of Object.keys(fields)) from[k] = base[k] === undefined ? null : base[k];
      localStorage.setItem(localKey, JSON.stringify({ version, fields, base: from, at: new Date().toISOString() }));
    } catch (e) { /* storage full or disabled: the form still holds the edits */ }
  }
  function keepLocal() { clearTimeout(localTimer); localTimer = setTimeout(writeLocal, 200); }
  function forgetLocal() {
    clearTimeout(localTimer);
    try { localStorage.removeItem(localKey); } catch (e) { /* nothing kept */ }
  }
  function restoreLocal() {
    let saved = null;
    try { saved = JSON.parse(localStorage.getItem(localKey) || "null"); } catch (e) { saved = null; }
    if (!saved || !saved.fields) return;
    const names = Object.keys(saved.fields).filter((n) => byName[n]);
    if (!names.length) return;
    if (saved.version !== version) {
      // saved by someone since: save from the old version, so the server answers with the merge panel
      version = saved.version;
      base = Object.assign({}, base, saved.base || {});
      for (const n of names) baseline[n] = JSON.stringify(norm(byName[n], base[n]));
    }
    for (const n of names) { setField(byName[n], saved.fields[n]); markField(byName[n]); }
    refreshDirty();
    const when = saved.at ? new Date(saved.at).toLocaleString() : "";
    document.getElementById("restored-text").textContent =
      `${names.length} unsaved change(s) kept in this browser${when ? " since " + when : ""} are back in the form (${names.map(fieldLabel).join(", ")}): save to apply them, or discard them.`;
    document.getElementById("restored").hidden = false;
  }
  function hideRestored() { document.getElementById("restored").hidden = true; }
  // "Discard my local changes": the form goes back to the row as the server holds it
  function discardLocal() {
    version = server.version;
    base = server.row;
    for (const f of fieldEls) setField(f, base[f.dataset.field]);
    loadBase(base);
    for (const sel of form.querySelectorAll("select")) showHint(sel);
    applyRole();
    showStale();
    forgetLocal();
    hideRestored();
    clearFailed();
    toast("Your local changes are discarded: the form shows the saved row");
  }
  let dropLocal = false; // left without saving on purpose: nothing is kept for later
  window.addEventListener("pagehide", () => { if (!dropLocal) writeLocal(); });

  // ---------------------------------------------------------------------------------------------
  // the clip: speed, padding from the segment video, loop, keys; stale when the times changed
  // ---------------------------------------------------------------------------------------------
  const video = document.getElementById("row-video");
  const media = { keys: {} };
  function timesNow() {
    const s = byName.start_time ? safeValue(byName.start_time) : null;
    const e = byName.end_time ? safeValue(byName.end_time) : null;
    return typeof s === "number" && typeof e === "number" && e > s ? [s, e] : null;
  }
  function clipStale() {
    const t = timesNow();
    return !!(video && video.dataset.clip && t && (t[0] !== data.draft.start_time || t[1] !== data.draft.end_time));
  }
  function showStale() {
    const box = document.getElementById("clip-stale");
    if (!box) return;
    const t = timesNow();
    box.hidden = !clipStale();
    if (!box.hidden) {
      box.textContent = `Times changed: this clip was cut for ${data.draft.start_time}–${data.draft.end_time} s, the row is now ${t[0]}–${t[1]} s, so the clip is stale.`
        + (video.dataset.video ? " Playing the new times from the segment video." : "")
        + " Re-cut it from the exported file with rescue annotate clips --data.";
    }
    if (media.configure) media.configure();
  }
  if (video) {
    const speed = document.getElementById("clip-speed");
    const pad = document.getElementById("clip-pad");
    const loop = document.getElementById("clip-loop");
    const prefsKey = "rescue-review:media";
    let win = null; // [start, end] in the segment video, or null for the clip as cut
    try {
      const prefs = JSON.parse(localStorage.getItem(prefsKey) || "{}");
      const rate = [...speed.options].findIndex((o) => Number(o.value) === prefs.speed);
      if (rate >= 0) speed.selectedIndex = rate;
      const padding = [...pad.options].findIndex((o) => Number(o.value) === prefs.pad);
      if (padding >= 0 && !pad.disabled) pad.selectedIndex = padding;
      loop.checked = !!prefs.loop;
    } catch (e) { /* defaults */ }
    media.configure = () => {
      const p = Number(pad.value) || 0;
      const t = timesNow();
      const useWindow = !!video.dataset.video && !!t && (!video.dataset.clip || p > 0 || clipStale());
      const src = useWindow ? video.dataset.video : video.dataset.clip;
      win = useWindow ? [Math.max(0, t[0] - p), t[1] + p] : null;
      if (src && (video.getAttribute("src") || "").split("#")[0] !== src) video.src = src;
      video.loop = !win && loop.checked;
      video.defaultPlaybackRate = Number(speed.value);
      video.playbackRate = Number(speed.value);
      if (win && (video.currentTime < win[0] || video.currentTime > win[1])) video.currentTime = win[0];
      try { localStorage.setItem(prefsKey, JSON.stringify({ speed: Number(speed.value), pad: p, loop: loop.checked })); } catch (e) { /* fine */ }
    };
    video.addEventListener("loadedmetadata", () => media.configure());
    video.addEventListener("timeupdate", () => {
      if (!win || video.currentTime < win[1]) return;
      if (loop.checked) video.currentTime = win[0]; else video.pause();
    });
    video.addEventListener("play", () => { if (win && (video.currentTime < win[0] - 0.05 || video.currentTime >= win[1])) video.currentTime = win[0]; });
    for (const c of [speed, pad, loop]) c.addEventListener("change", () => media.configure());
    const step = (d) => { speed.selectedIndex = Math.min(speed.options.length - 1, Math.max(0, speed.selectedIndex + d)); media.configure(); toast(`Speed ${speed.value}×`); };
    media.keys = {
      KeyK: () => { if (video.paused) video.play(); else video.pause(); },
      KeyR: () => { video.currentTime = win ? win[0] : 0; video.play(); },
      Comma: () => step(-1),
      Period: () => step(1),
      KeyL: () => { loop.checked = !loop.checked; media.configure(); toast(loop.checked ? "Loop on" : "Loop off"); },
    };
    media.configure();
  }

  // ---------------------------------------------------------------------------------------------
  // wiring
  // ---------------------------------------------------------------------------------------------
  for (const f of fieldEls) setField(f, base[f.dataset.field]);
  for (const f of fieldEls) {
    f.querySelector(".draft-value").textContent = shown(f.dataset.field, data.draft[f.dataset.field]);
  }
  loadBase(base);
  restoreLocal();
  showStatus();
  for (const sel of form.querySelectorAll("select")) showHint(sel);
  applyRole();
  showStale();
  // arrive in the form region, not in a field: arrow and page keys scroll it and change no value
  form.focus({ preventScroll: true });
  checkSeen();

  function edited(ev) {
    const f = ev.target.closest(".field");
    if (f) markField(f);
    if (ev.target.tagName === "SELECT") showHint(ev.target);
    if (f && f.dataset.field === "primary_speaker") applyRole();
    if (f && (f.dataset.field === "start_time" || f.dataset.field === "end_time")) showStale();
    refreshDirty();
    keepLocal();
  }
  form.addEventListener("input", edited);
  form.addEventListener("change", edited);
  form.addEventListener("click", (ev) => {
    const f = ev.target.closest(".field");
    if (!f) return;
    if (ev.target.closest(".add-item")) {
      const node = addItem(f, {});
      const first = node.querySelector("select, input, textarea");
      if (first) first.focus();
    } else if (ev.target.closest(".remove-item")) {
      ev.target.closest(".item").remove();
    } else if (ev.target.closest(".use-draft")) {
      setField(f, data.draft[f.dataset.field]);
    } else if (ev.target.closest(".clear-value")) {
      setField(f, f.dataset.kind === "list" || f.dataset.kind === "names" || f.dataset.kind === "ints" ? [] : null);
      applyRole();
      form.focus({ preventScroll: true });
      toast(`${fieldLabel(f.dataset.field)} cleared: save to apply it`);
    } else {
      return;
    }
    markField(f);
    refreshDirty();
    keepLocal();
  });
  form.addEventListener("submit", (ev) => { ev.preventDefault(); save(); });

  document.getElementById("save").addEventListener("click", () => save());
  // mark reviewed: only once every field shown has been in view (else show the ones that were not)
  async function saveReviewed() {
    if (!reviewed) {
      const unseen = unseenFields();
      if (unseen.length) { showUnseen(unseen); return false; }
    }
    return save(true);
  }
  document.getElementById("save-reviewed").addEventListener("click", () => saveReviewed());
  const unreview = document.getElementById("unreview");
  if (unreview) unreview.addEventListener("click", () => save(false));
  document.getElementById("conflict-merge").addEventListener("click", merge);
  document.getElementById("conflict-theirs").addEventListener("click", () => {
    if (pending) { loadBase(pending.cur.row); version = pending.cur.version; reviewed = pending.cur.reviewed; data.updatedBy = pending.cur.updated_by; }
    pending = null;
    document.getElementById("conflict").hidden = true;
    for (const f of fieldEls) setField(f, base[f.dataset.field]);
    loadBase(base);
    showStatus();
    forgetLocal();
    hideRestored();
  });
  document.getElementById("discard-local").addEventListener("click", discardLocal);
  retry.addEventListener("click", () => save(failed ? failed.mark : undefined, failed ? failed.flag : undefined));

  if (data.segmentStatus === "discarded") {
    for (const id of ["save", "save-reviewed", "row-skip", "flag-clear"]) document.getElementById(id).disabled = true;
  }

  // leaving a row with unsaved changes asks: save and go on, leave without saving (the changes are
  // dropped, also from this browser), or stay
  const leave = document.getElementById("leave");
  let leaveTo = null;
  function navigate(href) {
    leaving = true;
    window.location.href = href;
  }
  function go(id) {
    const link = document.getElementById(id);
    if (!link || link.classList.contains("disabled")) return;
    if (!isDirty()) { navigate(link.href); return; }
    leaveTo = link.href;
    let names = [];
    try { names = Object.keys(changes()).map(fieldLabel); } catch (e) { names = []; }
    document.getElementById("leave-text").textContent = names.length ? `Not saved yet: ${names.join(", ")}.` : "Your changes are not saved yet.";
    leave.showModal();
    document.getElementById("leave-save").focus();
  }
  // any other link of the page (the breadcrumbs, the adjudication link) asks the same way
  document.addEventListener("click", (ev) => {
    const link = ev.target.closest("a[href]");
    if (!link || ev.defaultPrevented || ev.button !== 0 || ev.ctrlKey || ev.metaKey || ev.shiftKey || ev.altKey) return;
    if (link.target || link.hasAttribute("download") || link.origin !== window.location.origin || link.getAttribute("href").startsWith("#")) return;
    if (!isDirty()) return;
    ev.preventDefault();
    leaveTo = link.href;
    leave.showModal();
    document.getElementById("leave-save").focus();
  });
  document.getElementById("leave-stay").addEventListener("click", () => leave.close());
  document.getElementById("leave-drop").addEventListener("click", () => {
    leave.close();
    forgetLocal();
    dropLocal = true;
    navigate(leaveTo);
  });
  document.getElementById("leave-save").addEventListener("click", async () => {
    leave.close();
    if (await save()) navigate(leaveTo);
  });
  let leaving = false;
  for (const id of ["prev-row", "next-row", "next-segment"]) {
    document.getElementById(id).addEventListener("click", (ev) => { ev.preventDefault(); go(id); });
  }
  // skip or discard the row with a reason (Ctrl+Space): the edits in the form are saved with it, and
  // the next row opens
  const flagDialog = document.getElementById("flag");
  const flagReason = document.getElementById("flag-reason");
  function askFlag() {
    if (data.segmentStatus === "discarded") return;
    flagReason.value = data.flag ? data.flagReason || "" : "";
    flagDialog.showModal();
    flagReason.focus();
  }
  async function flagRow(state) {
    const reason = flagReason.value.trim();
    if (!reason) { flagReason.reportValidity(); return; }
    flagDialog.close();
    if (!(await save(undefined, { state, reason }))) return;
    Review.flash(`Row ${data.position} ${state}: ${reason}`);
    const next = document.getElementById("next-row");
    navigate(next.classList.contains("disabled") ? document.getElementById("next-segment").href : next.href);
  }
  document.getElementById("row-skip").addEventListener("click", askFlag);
  document.getElementById("flag-form").addEventListener("submit", (ev) => { ev.preventDefault(); flagRow("skipped"); });
  document.getElementById("flag-discard").addEventListener("click", () => flagRow("discarded"));
  document.getElementById("flag-cancel").addEventListener("click", () => flagDialog.close());
  // Ctrl+Enter confirms here as everywhere (skip, like Enter); discarding has its own key, printed on its button
  flagDialog.addEventListener("keydown", (ev) => {
    if ((ev.ctrlKey || ev.metaKey) && ev.key === "Enter") { ev.preventDefault(); flagRow("skipped"); }
    else if (Review.altShortcut(ev) && ev.code === "KeyD") { ev.preventDefault(); flagRow("discarded"); }
  });
  document.getElementById("flag-clear").addEventListener("click", () => save(undefined, { state: null }));
  flagDialog.addEventListener("close", () => form.focus({ preventScroll: true }));

  // every key, in a dialog (?); the most used stay in view at the bottom of the page
  const keys = document.getElementById("keys");
  document.getElementById("keys-open").addEventListener("click", () => keys.showModal());
  document.getElementById("keys-close").addEventListener("click", () => keys.close());
  keys.addEventListener("close", () => form.focus({ preventScroll: true }));

  // The row's shortcuts. The Alt keys act from anywhere, a text field too (Review.altShortcut); a text
  // field keeps its other keys: one of the form keeps Ctrl+S and Ctrl+Enter (they save what was
  // typed), the comment box Ctrl+Enter (it posts the comment); Esc leaves a field for the form
  // region, where every shortcut acts. An open dialog has the keys.
  const alt = {
    KeyC: () => {
      const box = document.getElementById("comment-text");
      box.scrollIntoView({ block: "nearest" });
      box.focus();
    },
    KeyN: (shift) => go(shift ? "next-segment" : "next-row"),
    KeyP: (shift) => { if (!shift) go("prev-row"); },
    KeyJ: (shift) => jump(shift ? -1 : 1),
  };
  document.addEventListener("keydown", (ev) => {
    if (document.querySelector("dialog[open]")) return;
    const t = ev.target;
    const mod = ev.ctrlKey || ev.metaKey;
    const isSave = mod && !ev.altKey && (ev.key === "s" || ev.key === "S");
    const typing = Review.isTyping(t);
    if (ev.key === "Escape" && t !== form && (form.contains(t) || typing)) { ev.preventDefault(); form.focus({ preventScroll: true }); return; }
    if (Review.altShortcut(ev)) {
      const act = alt[ev.code] || (!ev.shiftKey && media.keys[ev.code]);
      if (act) { ev.preventDefault(); act(ev.shiftKey); }
      return;
    }
    if (typing && !form.contains(t)) {
      if (isSave) { ev.preventDefault(); toast("Ctrl+S saves the row's form; this box is not part of it (Esc leaves the box)"); }
      return;
    }
    if (isSave) { ev.preventDefault(); save(); }
    else if (mod && ev.key === "Enter") { ev.preventDefault(); saveAndNext(); }
    else if (typing) return;
    else if (ev.ctrlKey && ev.code === "Space") { ev.preventDefault(); askFlag(); }
    else if (ev.key === "?" && !mod && !ev.altKey) { ev.preventDefault(); keys.showModal(); }
  });

  // Alt+J / Alt+Shift+J: the next / previous label list of this row (utterance type, relation cycle
  // state or pattern, support strategies), skipping those the speaker's role hides
  function jump(step) {
    const lists = [...form.querySelectorAll('select[data-kind="utterance"], select[data-kind="pattern"], select[data-kind="strategy"]')].filter((s) => s.offsetParent !== null && !s.closest(".field.off-role"));
    if (!lists.length) return;
    const at = lists.indexOf(document.activeElement);
    const next = lists[(at < 0 ? (step > 0 ? 0 : lists.length - 1) : (at + step + lists.length) % lists.length)];
    next.focus();
    next.scrollIntoView({ block: "nearest" });
  }

  // Ctrl+Enter: save, mark reviewed, and move on (the last row of a segment goes on to the next segment)
  async function saveAndNext() {
    if (!(await saveReviewed())) return;
    Review.flash(`Row ${data.position} saved and marked reviewed (v${version})`);
    const next = document.getElementById("next-row");
    navigate(next.classList.contains("disabled") ? document.getElementById("next-segment").href : next.href);
  }
  window.addEventListener("beforeunload", (ev) => {
    if (!leaving && isDirty()) { ev.preventDefault(); ev.returnValue = ""; }
  });
})();
