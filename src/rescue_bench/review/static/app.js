// rescue review: shared helpers and the small pages (login, dashboard, segment). No build step, no CDN.
"use strict";

const Review = (() => {
  const csrf = () => (document.querySelector('meta[name="csrf-token"]') || {}).content || "";

  // JSON request; every unsafe method carries the CSRF token. Resolves to {status, body}. When the
  // session has ended (401), the page stays as it is: a login dialog asks for the password again and
  // the request is sent once more, so nothing typed is lost (a page without the dialog goes to /login).
  // With `timeout` (ms), a request without an answer by then is given up: it rejects with a
  // TimeoutError (the time spent in the login dialog does not count).
  async function send(method, url, body, timeout) {
    const headers = { Accept: "application/json" };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    if (method !== "GET") headers["X-CSRF-Token"] = csrf();
    const abort = new AbortController();
    const timer = timeout ? setTimeout(() => abort.abort(new DOMException("no answer in time", "TimeoutError")), timeout) : null;
    try {
      const resp = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: "same-origin", signal: abort.signal });
      let data = null;
      const type = resp.headers.get("content-type") || "";
      if (type.includes("json")) data = await resp.json();
      return { status: resp.status, body: data };
    } finally {
      clearTimeout(timer);
    }
  }

  // quiet: an ended session answers as it is (a background refresh never opens the login dialog)
  async function api(method, url, body, { timeout, quiet } = {}) {
    const again = () => send(method, url, body, timeout);
    let resp = await again();
    if (quiet) return resp;
    // an ended session answers 401 (reads and writes alike); a 403 naming the CSRF token means this
    // page's token is stale (the user logged in again in another tab): logging in here renews it
    const ended = resp.status === 401 || (resp.status === 403 && /csrf/i.test(detail(resp)));
    if (ended && !url.endsWith("/api/login") && !url.endsWith("/api/logout")) {
      if (document.getElementById("relogin") && (await relogin())) resp = await again();
      else if (!document.getElementById("relogin")) window.location.href = "/login?next=" + encodeURIComponent(window.location.pathname);
      else resp = { status: 401, body: { detail: "Not saved: your session has ended. Your changes stay on this page (and in this browser); log in again to save them." } };
    }
    return resp;
  }

  // the re-login dialog: the same user logs in again without leaving the page
  let pendingLogin = null;
  function relogin() {
    if (pendingLogin) return pendingLogin;
    const dialog = document.getElementById("relogin");
    const formEl = document.getElementById("relogin-form");
    const err = document.getElementById("relogin-error");
    const password = document.getElementById("relogin-password");
    pendingLogin = new Promise((resolve) => {
      const done = (ok) => {
        formEl.removeEventListener("submit", onSubmit);
        dialog.removeEventListener("cancel", onCancel);
        document.getElementById("relogin-cancel").removeEventListener("click", onCancel);
        dialog.close();
        pendingLogin = null;
        resolve(ok);
      };
      async function onSubmit(ev) {
        ev.preventDefault();
        err.hidden = true;
        const resp = await send("POST", "/api/login", { username: document.getElementById("relogin-username").value, password: password.value });
        if (resp.status === 200) {
          document.querySelector('meta[name="csrf-token"]').content = resp.body.csrf_token;
          password.value = "";
          toast("Logged in again: your changes are still here");
          done(true);
        } else {
          err.textContent = resp.status === 401 ? "Wrong password." : detail(resp);
          err.hidden = false;
        }
      }
      function onCancel() { done(false); }
      formEl.addEventListener("submit", onSubmit);
      dialog.addEventListener("cancel", onCancel);
      document.getElementById("relogin-cancel").addEventListener("click", onCancel);
      dialog.showModal();
      password.focus();
    });
    return pendingLogin;
  }

  let toastTimer = null;
  function toast(message, kind) {
    const el = document.getElementById("toast");
    if (!el) return;
    el.textContent = message;
    el.className = kind || "";
    el.hidden = false;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => { el.hidden = true; }, kind === "error" ? 8000 : kind === "lasting" ? 6000 : 3000);
  }

  function detail(resp) {
    const b = resp.body || {};
    if (typeof b.detail === "string") return b.detail;
    if (Array.isArray(b.detail) && b.detail.length) return b.detail[0].msg || "invalid request";
    return "request failed (HTTP " + resp.status + ")";
  }

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") node.className = v; else node.setAttribute(k, v);
    }
    for (const child of children) node.append(child);  // strings become text nodes: never HTML
    return node;
  }

  // a control that takes typed text: keys pressed there belong to it, not to the page's shortcuts
  const TEXT_INPUTS = new Set(["text", "search", "password", "number", "email", "url", "tel"]);
  function isTyping(node) {
    if (!node || !node.tagName) return false;
    if (node.isContentEditable || node.tagName === "TEXTAREA") return true;
    return node.tagName === "INPUT" && TEXT_INPUTS.has(node.type);
  }

  // an Alt chord the page may take as its shortcut: from anywhere, a text field too (so the keys that
  // follow never type into it), unless this keyboard layout types a character with it there
  // (macOS's Option+C is "ç"): then the field keeps it
  function altShortcut(ev) {
    if (!ev.altKey || ev.ctrlKey || ev.metaKey) return false;
    const typed = ev.key === "Dead" || (ev.key.length === 1 && ev.key.charCodeAt(0) > 127);
    return !(typed && isTyping(ev.target));
  }

  // a message for the next page of this tab (a toast that survives the move to the next row)
  const FLASH = "rescue-review:flash";
  function flash(message) {
    try { sessionStorage.setItem(FLASH, message); } catch (e) { /* storage disabled: no toast */ }
  }
  function takeFlash() {
    try {
      const message = sessionStorage.getItem(FLASH);
      sessionStorage.removeItem(FLASH);
      return message;
    } catch (e) { return null; }
  }

  return { api, toast, detail, el, isTyping, altShortcut, flash, takeFlash };
})();

const PROGRESS_EVERY_MS = 15000;
/** How often the dashboard asks /api/progress for its figures. */

document.addEventListener("DOMContentLoaded", () => {
  const { api, toast, detail, el } = Review;
  const flashed = Review.takeFlash();
  if (flashed) toast(flashed, "lasting");

  const logout = document.getElementById("logout");
  if (logout) logout.addEventListener("click", async () => {
    // logging out on purpose leaves nothing of this user's unsaved edits in the browser
    const who = (document.getElementById("relogin-username") || {}).value;
    try {
      for (const k of Object.keys(localStorage)) {
        if (who && (k.startsWith(`rescue-review:edits:${who}:`) || k.startsWith(`rescue-review:comment:${who}:`))) localStorage.removeItem(k);
      }
    } catch (e) { /* storage disabled */ }
    await api("POST", "/api/logout");
    window.location.href = "/login";
  });

  // login
  const loginForm = document.getElementById("login-form");
  if (loginForm) loginForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const err = document.getElementById("login-error");
    err.hidden = true;
    const resp = await api("POST", "/api/login", {
      username: document.getElementById("username").value,
      password: document.getElementById("password").value,
    });
    if (resp.status === 200) {
      window.location.href = loginForm.dataset.next || "/";
    } else {
      err.textContent = resp.status === 401 ? "Wrong user name or password." : detail(resp);
      err.hidden = false;
    }
  });

  // dashboard: filter the segment table
  const filter = document.getElementById("segment-filter");
  if (filter) filter.addEventListener("input", () => {
    const words = filter.value.toLowerCase().split(/\s+/).filter(Boolean);
    let shown = 0;
    for (const tr of document.querySelectorAll("#segments tbody tr")) {
      const hay = tr.dataset.filter || "";
      tr.hidden = !words.every((w) => hay.includes(w));
      if (!tr.hidden) shown += 1;
    }
    const empty = document.getElementById("segment-filter-empty");
    if (empty) {
      empty.hidden = shown > 0;
      empty.textContent = shown ? "" : `No segment matches "${filter.value.trim()}". Clear the filter to see them all.`;
    }
  });

  // dashboard: the figures refresh themselves from /api/progress while the page is in view; each
  // element names the number it shows by its path in the answer (data-p="rows/submitted"; a list is
  // addressed by its items' id or user name), bars grow by theirs (data-grow)
  const live = document.querySelector("[data-live-progress]");
  if (live) {
    const flatten = (value, path, out) => {
      if (Array.isArray(value)) {
        for (const item of value) {
          const key = item && typeof item === "object" ? item.id ?? item.username ?? item.user : undefined;
          if (key !== undefined) flatten(item, `${path}/${key}`, out);
        }
      } else if (value && typeof value === "object") {
        for (const [k, v] of Object.entries(value)) flatten(v, path ? `${path}/${k}` : k, out);
      } else {
        out.set(path, value);
      }
      return out;
    };
    const grow = () => { for (const part of document.querySelectorAll("[data-grow]")) part.style.flexGrow = part.dataset.n || "0"; };
    const apply = (body) => {
      const at = flatten(body, "", new Map());
      for (const node of document.querySelectorAll("[data-p]")) {
        if (!at.has(node.dataset.p)) continue;
        const n = at.get(node.dataset.p), noun = node.dataset.pNoun;  // data-p-noun: "1 segment", "2 segments"
        node.textContent = noun ? `${n} ${n === 1 ? noun : noun + "s"}` : String(n);
      }
      for (const node of document.querySelectorAll("[data-grow]")) if (at.has(node.dataset.grow)) node.dataset.n = String(at.get(node.dataset.grow));
      for (const node of document.querySelectorAll("[data-p-value]")) if (at.has(node.dataset.pValue)) node.value = Number(at.get(node.dataset.pValue));
      for (const node of document.querySelectorAll("[data-p-badge]")) {
        const v = at.get(node.dataset.pBadge);
        if (typeof v === "string") { node.className = "badge " + v; node.textContent = v.replace(/_/g, " "); }
      }
      grow();
      const stamp = document.getElementById("progress-updated");
      if (stamp) stamp.textContent = "updated " + new Date().toLocaleTimeString();
    };
    const refresh = async () => {
      if (document.visibilityState !== "visible") return;
      try {
        const resp = await api("GET", "/api/progress", undefined, { quiet: true, timeout: 10000 });
        if (resp.status === 200) apply(resp.body);
      } catch (e) { /* offline for now: the next refresh tries again */ }
    };
    grow();
    setInterval(refresh, PROGRESS_EVERY_MS);
    document.addEventListener("visibilitychange", refresh);
  }

  // links to pages that take a while (the agreement report): say so at once
  for (const link of document.querySelectorAll("a[data-wait]")) {
    link.addEventListener("click", () => {
      document.body.classList.add("busy");
      toast(link.dataset.wait, "wait");
    });
  }

  // clickable table rows
  for (const tr of document.querySelectorAll("tr.clickable")) {
    tr.addEventListener("click", (ev) => {
      if (ev.target.closest("a, button, input")) return;
      window.location.href = tr.dataset.href;
    });
  }

  // segment page: the video and the row list follow each other (play a row from the list; the row
  // being played is highlighted and scrolled into view)
  const segVideo = document.getElementById("segment-video");
  if (segVideo) {
    const timed = [...document.querySelectorAll("#rows tbody tr[data-start]")];
    let playing = null;
    for (const tr of timed) {
      const button = tr.querySelector("button.seek");
      if (button) button.addEventListener("click", () => {
        segVideo.currentTime = Number(tr.dataset.start);
        segVideo.play().catch(() => {});
      });
    }
    segVideo.addEventListener("timeupdate", () => {
      const t = segVideo.currentTime;
      const now = timed.find((tr) => t >= Number(tr.dataset.start) && t < Number(tr.dataset.end)) || null;
      if (now === playing) return;
      if (playing) { playing.classList.remove("playing"); playing.removeAttribute("aria-current"); }
      playing = now;
      if (now) { now.classList.add("playing"); now.setAttribute("aria-current", "true"); now.scrollIntoView({ block: "nearest" }); }
    });
  }

  // segment page actions
  const layout = document.querySelector("[data-segment]");
  const segment = layout ? layout.dataset.segment : null;
  const discardForm = document.getElementById("discard-form");
  if (discardForm) discardForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const resp = await api("POST", `/api/segments/${segment}/discard`, { reason: document.getElementById("discard-text").value });
    if (resp.status === 200) window.location.reload(); else toast(detail(resp), "error");
  });
  const restore = document.getElementById("restore");
  if (restore) restore.addEventListener("click", async () => {
    const resp = await api("POST", `/api/segments/${segment}/restore`);
    if (resp.status === 200) window.location.reload(); else toast(detail(resp), "error");
  });
  const assignForm = document.getElementById("assign-form");
  if (assignForm) assignForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const names = [...assignForm.querySelectorAll("input[name=assignee]:checked")].map((i) => i.value);
    const resp = await api("PUT", `/api/segments/${segment}/assignees`, { usernames: names });
    if (resp.status === 200) toast("Assignment saved"); else toast(detail(resp), "error");
  });

  const modeForm = document.getElementById("mode-form");
  if (modeForm) modeForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const resp = await api("PUT", `/api/segments/${segment}/mode`, { mode: document.getElementById("review-mode").value });
    if (resp.status === 200) window.location.reload(); else toast(detail(resp), "error");
  });

  // dashboard (admins): overlap assignment and the reveal rule
  // the scope (annotators, segments) is sent first as a dry run: the dialog shows what would change,
  // and only "Assign" there sends the same request for real (same seed, same state: same plan)
  const overlapForm = document.getElementById("overlap-form");
  if (overlapForm) {
    const dialog = document.getElementById("overlap-confirm");
    let planned = null;
    const scope = () => {
      const body = { k: Number(document.getElementById("overlap-k").value), seed: Number(document.getElementById("overlap-seed").value) };
      body.usernames = [...overlapForm.querySelectorAll("input[name=overlap-user]:checked")].map((i) => i.value);
      const segs = [...overlapForm.querySelectorAll("input[name=overlap-segment]:checked")].map((i) => i.value);
      if (segs.length) body.segments = segs;
      return body;
    };
    // the segments to draw: a filterable list of checkboxes (none chosen: every open segment)
    const boxes = [...overlapForm.querySelectorAll("input[name=overlap-segment]")];
    const count = document.getElementById("overlap-seg-count");
    const counted = () => {
      const n = boxes.filter((b) => b.checked).length;
      count.textContent = n ? `${n} of ${boxes.length} chosen` : "none chosen: every open segment";
    };
    const segFilter = document.getElementById("overlap-seg-filter");
    segFilter.addEventListener("input", () => {
      const words = segFilter.value.toLowerCase().split(/\s+/).filter(Boolean);
      for (const b of boxes) { const label = b.closest("label"); label.hidden = !words.every((w) => label.dataset.filter.includes(w)); }
    });
    segFilter.addEventListener("keydown", (ev) => { if (ev.key === "Enter") ev.preventDefault(); });
    document.getElementById("overlap-seg-all").addEventListener("click", () => { for (const b of boxes) if (!b.closest("label").hidden) b.checked = true; counted(); });
    document.getElementById("overlap-seg-none").addEventListener("click", () => { for (const b of boxes) b.checked = false; counted(); });
    for (const b of boxes) b.addEventListener("change", counted);
    overlapForm.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const body = scope();
      if (!body.usernames.length) { toast("Choose at least one annotator", "error"); return; }
      const resp = await api("POST", "/api/overlap", { ...body, dry_run: true });
      if (resp.status !== 200) { toast(detail(resp), "error"); return; }
      const b = resp.body;
      planned = body;
      document.getElementById("overlap-summary").textContent =
        `${b.added.length} new assignment(s) over ${b.segments} segment(s); ${b.switched.length} segment(s) switch to independent copies.` +
        (b.skipped.length ? ` ${b.skipped.length} skipped (work already saved in their shared copy).` : "") +
        (b.over.length ? ` ${b.over.length} already have more than ${b.k} annotators (nobody is removed).` : "");
      const list = document.getElementById("overlap-changes");
      list.replaceChildren(...b.added.map((a) => { const li = document.createElement("li"); li.textContent = `${a.segment} → ${a.user}`; return li; }));
      document.getElementById("overlap-apply").disabled = !b.added.length && !b.switched.length;
      dialog.showModal();
    });
    document.getElementById("overlap-cancel").addEventListener("click", () => { planned = null; dialog.close(); });
    document.getElementById("overlap-apply").addEventListener("click", async () => {
      if (!planned) return;
      const resp = await api("POST", "/api/overlap", planned);
      dialog.close();
      planned = null;
      if (resp.status !== 200) { toast(detail(resp), "error"); return; }
      const b = resp.body;
      let msg = `${b.added.length} assignment(s) made over ${b.segments} segment(s)`;
      if (b.skipped.length) msg += `; ${b.skipped.length} skipped (work already saved in their shared copy)`;
      toast(msg);
      setTimeout(() => window.location.reload(), 1200);
    });
  }
  const revealForm = document.getElementById("reveal-form");
  if (revealForm) revealForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const resp = await api("PUT", "/api/settings/reveal", { reveal: document.getElementById("reveal").value });
    if (resp.status === 200) toast("Saved"); else toast(detail(resp), "error");
  });

  // questionnaires page (admins): set one up from a sample CSV
  const qForm = document.getElementById("questionnaire-form");
  if (qForm) qForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const err = document.getElementById("q-error");
    err.hidden = true;
    const file = document.getElementById("q-file").files[0];
    if (!file) return;
    const body = {
      name: document.getElementById("q-name").value,
      file_name: file.name,
      csv: await file.text(),
      raters: [...qForm.querySelectorAll("input[name=q-rater]:checked")].map((i) => i.value),
    };
    const resp = await api("POST", "/api/ratings", body);
    if (resp.status === 201) {
      toast(`Questionnaire created: ${resp.body.items} item(s), ${resp.body.raters.length} rater(s)`);
      setTimeout(() => window.location.reload(), 800);
    } else {
      err.textContent = detail(resp);
      err.hidden = false;
    }
  });

  // comments (segment page and row page): Ctrl+Enter in the box posts the comment. A comment not
  // posted yet is kept in this browser for its row (or segment) and is back in the box on return
  // (logging out removes it, as the unsaved edits)
  const commentForm = document.getElementById("comment-form");
  const commentText = document.getElementById("comment-text");
  const commentKey = commentForm && (() => {
    const who = (document.getElementById("relogin-username") || {}).value;
    const key = segment || (window.ROW_PAGE && window.ROW_PAGE.segment);
    return who && key ? `rescue-review:comment:${who}:${key}:${commentForm.dataset.row || "segment"}` : null;
  })();
  const keepComment = () => {
    if (!commentKey) return;
    try {
      if (commentText.value.trim()) localStorage.setItem(commentKey, JSON.stringify({ text: commentText.value, at: new Date().toISOString() }));
      else localStorage.removeItem(commentKey);
    } catch (e) { /* storage full or disabled: the box still holds the text */ }
  };
  if (commentKey) {
    let kept = null;
    try { kept = JSON.parse(localStorage.getItem(commentKey) || "null"); } catch (e) { kept = null; }
    if (kept && kept.text && !commentText.value) {
      commentText.value = kept.text;
      const when = kept.at ? new Date(kept.at).toLocaleString() : "";
      commentText.after(el("p", { class: "small kept-comment", id: "comment-kept", role: "status" }, `Your unfinished comment${when ? " from " + when : ""}, kept in this browser: post it (Ctrl+Enter) or clear it.`));
      if (!flashed) toast("Your unfinished comment is back in the comment box (Alt+C)", "lasting");
    }
    commentText.addEventListener("input", keepComment);
  }
  if (commentText) commentText.addEventListener("keydown", (ev) => {
    if ((ev.ctrlKey || ev.metaKey) && ev.key === "Enter") {
      ev.preventDefault();
      ev.stopPropagation();
      commentForm.requestSubmit();
    }
  });
  if (commentForm) commentForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const key = segment || (window.ROW_PAGE && window.ROW_PAGE.segment);
    const text = document.getElementById("comment-text");
    const row = commentForm.dataset.row ? Number(commentForm.dataset.row) : null;
    const resp = await api("POST", `/api/segments/${key}/comments`, { text: text.value, row });
    if (resp.status !== 201) { toast(detail(resp), "error"); return; }
    const list = document.getElementById("comments");
    const empty = list.querySelector(".empty");
    if (empty) empty.remove();
    const c = resp.body;
    list.append(el("li", {}, el("b", {}, c.user), " ", el("span", { class: "small muted" }, c.at.slice(0, 16).replace("T", " ") + (c.row ? " · this row" : "")), el("div", { class: "text" }, c.text)));
    text.value = "";
    keepComment();
    const note = document.getElementById("comment-kept");
    if (note) note.remove();
    toast("Comment added");
  });
});
