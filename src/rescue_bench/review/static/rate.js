// rescue review: one item of a judge-rating questionnaire. Choose 1-5 (click or keys 1-5), save with
// Enter, Ctrl+Enter (from the note too) or the button; saving moves on to the next item not rated yet.
"use strict";

(() => {
  const { api, toast, detail } = Review;
  const root = document.getElementById("rate");
  const form = document.getElementById("rate-form");
  if (!root || !form) return;
  const set = root.dataset.set;
  const position = Number(root.dataset.position);
  const total = Number(root.dataset.items);

  function chosen() {
    const input = form.querySelector("input[name=score]:checked");
    return input ? Number(input.value) : null;
  }

  function mark() {
    for (const label of form.querySelectorAll(".score-option")) {
      label.classList.toggle("chosen", label.querySelector("input").checked);
    }
  }

  async function save() {
    const score = chosen();
    if (score === null) { toast("Choose a score from 1 to 5 first", "error"); return; }
    const note = document.getElementById("rate-note").value;
    const resp = await api("PUT", `/api/ratings/${set}/items/${position}`, { score, note: note || null });
    if (resp.status !== 200) { toast(detail(resp), "error"); return; }
    const b = resp.body;
    const status = document.getElementById("item-status");
    status.textContent = `rated ${b.score}`;
    status.className = "badge reviewed";
    document.getElementById("rated-count").textContent = `${b.rated} of ${total} rated`;
    document.getElementById("rated-meter").value = b.rated;
    if (b.next_unrated) {
      toast("Saved");
      window.location.href = `/ratings/${set}/${b.next_unrated}`;
    } else {
      toast("Saved: every item of this questionnaire is rated. Thank you!");
    }
  }

  form.addEventListener("change", mark);
  form.addEventListener("submit", (ev) => { ev.preventDefault(); save(); });
  document.addEventListener("keydown", (ev) => {
    if (document.querySelector("dialog[open]")) return;  // an open dialog (the login dialog) has the keys
    // Ctrl+Enter confirms here as on every page, from the note too: save, and on to the next item
    if ((ev.ctrlKey || ev.metaKey) && ev.key === "Enter" && !document.getElementById("rate-save")?.disabled) { ev.preventDefault(); save(); return; }
    // a text field (the note) keeps its other keys
    if (Review.isTyping(ev.target) || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (/^[1-5]$/.test(ev.key)) {
      const input = form.querySelector(`input[name=score][value="${ev.key}"]`);
      if (input && !input.disabled) { input.checked = true; mark(); }
    } else if (ev.key === "Enter" && !document.getElementById("rate-save")?.disabled) {
      ev.preventDefault();
      save();
    }
  });
  if (position > total) window.location.href = `/ratings/${set}/1`;
})();
