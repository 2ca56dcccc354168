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
    toast((field ? field + ": " : "") + message, "error");
  }

  function showStatus() {
    const status = reviewed ? "reviewed" : data.edited ? "edited" : "draft";
    const badge = document.getElementById("row-status");
    badge.textContent = status;
    badge.className = "badge " + status;
    const meta = document.getElementById("row-meta");
    meta.textContent = `v${version}` + (data.updatedBy ? ` · last saved by ${data.updatedBy}` : "");
    document.getElementById("save-reviewed").textContent = reviewed ? "Save (reviewed)" : "Save & mark reviewed";
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
  let busy = false;
  async function save(markReviewed) {
    if (busy) return false;
    clearErrors();
    let fields;
    try { fields = changes(); } catch (e) { showError(e.field, e.message); return false; }
    if (!Object.keys(fields).length && (markReviewed === undefined || markReviewed === reviewed)) {
      toast("Nothing to save");
      return true;
    }
    const body = { version, fields };
    if (markReviewed !== undefined) body.reviewed = markReviewed;
    busy = true;
    document.body.classList.add("busy");
    let resp;
    try {
      resp = await api("PUT", `/api/segments/${data.segment}/rows/${data.position}`, body);
    } catch (e) {
      toast("Could not reach the server; your changes are still here. Try again.", "error");
      return false;
    } finally {
      busy = false;
      document.body.classList.remove("busy");
    }
    if (resp.status === 200) {
      version = resp.body.version;
      reviewed = resp.body.reviewed;
      data.edited = resp.body.edited;
      data.updatedBy = resp.body.updated_by;
      loadBase(resp.body.row);
      showStatus();
      toast(markReviewed ? "Saved and marked reviewed" : "Saved");
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
      tbody.append(el("tr", { "data-field": name }, el("td", {}, el("code", {}, name)), el("td", {}, compact(cur.row[name])), el("td", {}, name in mine ? compact(mine[name]) : "(unchanged)"), el("td", {}, keep)));
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
    toast("Merged: your values are in the form. Save to apply them.");
  }

  // ---------------------------------------------------------------------------------------------
  // wiring
  // ---------------------------------------------------------------------------------------------
  for (const f of fieldEls) setField(f, base[f.dataset.field]);
  for (const f of fieldEls) {
    f.querySelector(".draft-value").textContent = compact(data.draft[f.dataset.field]);
  }
  loadBase(base);
  showStatus();

  form.addEventListener("input", (ev) => {
    const f = ev.target.closest(".field");
    if (f) markField(f);
    refreshDirty();
  });
  form.addEventListener("change", (ev) => {
    const f = ev.target.closest(".field");
    if (f) markField(f);
    refreshDirty();
  });
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
    } else {
      return;
    }
    markField(f);
    refreshDirty();
  });
  form.addEventListener("submit", (ev) => { ev.preventDefault(); save(); });

  document.getElementById("save").addEventListener("click", () => save());
  document.getElementById("save-reviewed").addEventListener("click", () => save(true));
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
  });

  if (data.segmentStatus === "discarded") {
    for (const id of ["save", "save-reviewed"]) document.getElementById(id).disabled = true;
  }

  function go(id) {
    const link = document.getElementById(id);
    if (!link || link.classList.contains("disabled")) return;
    if (isDirty() && !window.confirm("You have unsaved changes. Leave this row without saving them?")) return;
    leaving = true;
    window.location.href = link.href;
  }
  let leaving = false;
  for (const id of ["prev-row", "next-row"]) {
    document.getElementById(id).addEventListener("click", (ev) => { ev.preventDefault(); go(id); });
  }
  document.addEventListener("keydown", (ev) => {
    const mod = ev.ctrlKey || ev.metaKey;
    if (mod && (ev.key === "s" || ev.key === "S")) { ev.preventDefault(); save(); }
    else if (mod && ev.key === "Enter") { ev.preventDefault(); save(true); }
    else if (ev.altKey && ev.code === "KeyN") { ev.preventDefault(); go("next-row"); }
    else if (ev.altKey && ev.code === "KeyP") { ev.preventDefault(); go("prev-row"); }
  });
  window.addEventListener("beforeunload", (ev) => {
    if (!leaving && isDirty()) { ev.preventDefault(); ev.returnValue = ""; }
  });
})();
