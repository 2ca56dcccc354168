// rescue review: one pair of a pairwise questionnaire. Choose A, B or "as good" (click or keys A, B,
// T, which then move to the reason), write why, optionally rate each side 1-5; save with Ctrl+Enter,
// Enter outside the reason, or the button. Saving moves on to the next pair not answered yet.
"use strict";

(() => {
  const { api, toast, detail } = Review;
  const root = document.getElementById("pair");
  const form = document.getElementById("pair-form");
  if (!root || !form) return;
  const set = root.dataset.set;
  const position = Number(root.dataset.position);
  const total = Number(root.dataset.items);
  const reason = document.getElementById("pair-reason");
  const KEYS = { a: "first", b: "second", t: "tie" };

  const picked = (name) => {
    const input = form.querySelector(`input[name=${name}]:checked`);
    return input ? input.value : null;
  };

  function mark() {
    for (const label of form.querySelectorAll(".choice-option")) {
      label.classList.toggle("chosen", label.querySelector("input").checked);
    }
  }

  async function save() {
    const preferred = picked("preferred");
    if (preferred === null) { toast("Choose A, B or as good first (keys A, B, T)", "error"); return; }
    if (!reason.value.trim()) { toast("Say in a few words why", "error"); reason.focus(); return; }
    const support = (side) => { const v = picked(`support_${side}`); return v === null ? null : Number(v); };
    const resp = await api("PUT", `/api/ratings/${set}/pairs/${position}`, {
      preferred, reason: reason.value, support_first: support("first"), support_second: support("second"),
    });
    if (resp.status !== 200) { toast(detail(resp), "error"); return; }
    const b = resp.body;
    const status = document.getElementById("item-status");
    status.textContent = "answered";
    status.className = "badge reviewed";
    document.getElementById("rated-count").textContent = `${b.rated} of ${total} answered`;
    document.getElementById("rated-meter").value = b.rated;
    if (b.next_unrated) {
      Review.flash("Saved");
      window.location.href = `/ratings/${set}/${b.next_unrated}`;
    } else {
      toast("Saved: every pair of this questionnaire is answered. Thank you!", "lasting");
    }
  }

  form.addEventListener("change", mark);
  form.addEventListener("submit", (ev) => { ev.preventDefault(); save(); });
  document.addEventListener("keydown", (ev) => {
    if (document.querySelector("dialog[open]")) return;
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) { ev.preventDefault(); save(); return; }
    if (Review.isTyping(ev.target)) {
      if (ev.key === "Escape") ev.target.blur();
      return;
    }
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const choice = KEYS[ev.key.toLowerCase()];
    if (choice) {
      const input = form.querySelector(`input[name=preferred][value="${choice}"]`);
      if (input && !input.disabled) {
        ev.preventDefault();
        input.checked = true;
        mark();
        reason.focus();
      }
    } else if (ev.key === "Enter" && ev.target.tagName !== "A" && ev.target.tagName !== "BUTTON" && !document.getElementById("pair-save")?.disabled) {
      ev.preventDefault();
      save();
    }
  });
  const context = document.getElementById("context");
  if (context) context.scrollTop = context.scrollHeight;  // the start is the last row: show it
  if (position > total) window.location.href = `/ratings/${set}/1`;
})();
