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

  function typed(tr) {
    const text = tr.querySelector(".custom-value").value;
    if (tr.dataset.text === "1") return text;
    try { return JSON.parse(text); } catch (e) { throw new Error(`${tr.dataset.field}: type a JSON value (e.g. ["Dana"], 6, "text")`); }
  }

  async function adjudicate(card) {
    const error = card.querySelector(".adj-error");
    error.hidden = true;
    const take = {};
    const values = {};
    try {
      for (const tr of card.querySelectorAll("tr[data-field]")) {
        const field = tr.dataset.field;
        const picked = tr.querySelector("input[type=radio]:checked");
        if (!picked) throw new Error(`${field}: choose a value`);
        if (picked.value === "draft") take[field] = "draft";
        else if (picked.value === "custom") values[field] = typed(tr);
        else take[field] = picked.value.slice("take:".length);
      }
    } catch (e) {
      error.textContent = e.message;
      error.hidden = false;
      return;
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
      return;
    }
    error.textContent = resp.status === 409 ? "Someone adjudicated this row since you opened the page: reload to see their choice." : detail(resp);
    error.hidden = false;
  }

  for (const card of document.querySelectorAll(".adj-row")) {
    card.querySelector(".adj-save").addEventListener("click", () => adjudicate(card));
    // typing a value of one's own selects "other"
    for (const input of card.querySelectorAll(".custom-value")) {
      input.addEventListener("input", () => { input.closest("label").querySelector("input[type=radio]").checked = true; });
    }
  }
  const accept = document.getElementById("accept-agreed");
  if (accept) accept.addEventListener("click", async () => {
    const resp = await api("POST", `/api/segments/${segment}/adjudication/accept-agreed`);
    if (resp.status === 200) { toast(`${resp.body.accepted} row(s) accepted`); setTimeout(() => window.location.reload(), 800); }
    else toast(detail(resp), "error");
  });
})();
