// selfcode dashboard: the live log of a running job (server-sent events) and
// the cancel button. Everything the server sends is inserted as text, never
// as HTML.
"use strict";

(function () {
  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function clock(iso) {
    const d = new Date(iso);
    if (isNaN(d) || d.getUTCFullYear() < 2) return "";
    return d.toISOString().substring(11, 19);
  }

  function fmtDur(ns) {
    if (!ns || ns <= 0) return "–";
    const ms = ns / 1e6;
    if (ms < 1) return "<1ms";
    if (ms < 1000) return Math.floor(ms) + "ms";
    const s = Math.round(ms / 1000);
    if (s < 60) return s + "s";
    if (s < 3600) return Math.floor(s / 60) + "m" + String(s % 60).padStart(2, "0") + "s";
    const m = Math.round(s / 60);
    return Math.floor(m / 60) + "h" + String(m % 60).padStart(2, "0") + "m";
  }

  function setState(state) {
    const dd = document.getElementById("state");
    if (!dd) return;
    dd.replaceChildren(el("span", "badge state-" + state, state));
  }

  function renderStages(stages) {
    const body = document.querySelector("#stages tbody");
    if (!body || !stages) return;
    const rows = stages.map(function (s) {
      const tr = el("tr", "st-" + s.status);
      tr.append(el("td", "", s.name), el("td", "", s.status), el("td", "time", clock(s.started_at)),
        el("td", "num", fmtDur(s.took)), el("td", "", s.summary || ""));
      return tr;
    });
    if (rows.length) body.replaceChildren.apply(body, rows);
  }

  function applyStatus(st) {
    setState(st.state);
    const set = function (id, text) { const e = document.getElementById(id); if (e) e.textContent = text; };
    set("outcome", st.outcome || "–");
    set("tokens", String(st.tokens));
    set("duration", st.duration);
    if (st.pr_url) {
      const pr = document.getElementById("pr");
      const a = el("a", "", st.pr_url);
      a.href = st.pr_url;
      a.rel = "noreferrer";
      if (pr) pr.replaceChildren(a);
    }
    renderStages(st.stages);
    if (st.cancel_requested) {
      set("cancel-status", "cancel requested");
      const b = document.getElementById("cancel");
      if (b) b.disabled = true;
    }
  }

  function live(log) {
    const seen = new Set();
    log.querySelectorAll("li[data-key]").forEach(function (li) { seen.add(li.dataset.key); });
    const src = new EventSource(log.dataset.events);
    src.addEventListener("log", function (ev) {
      const l = JSON.parse(ev.data);
      if (seen.has(l.key)) return;
      seen.add(l.key);
      const li = el("li", "log-" + l.kind);
      li.dataset.key = l.key;
      li.append(el("time", "", clock(l.time)), document.createTextNode(" " + l.text));
      log.append(li);
      log.scrollTop = log.scrollHeight;
    });
    src.addEventListener("job", function (ev) { applyStatus(JSON.parse(ev.data)); });
    src.addEventListener("end", function (ev) {
      src.close();
      applyStatus(JSON.parse(ev.data));
      const b = document.getElementById("cancel");
      if (b) b.remove();
      const badge = document.getElementById("live");
      if (badge) { badge.textContent = "ended"; badge.classList.add("ended"); }
      document.body.dataset.ended = "true";
    });
  }

  function cancelButton(b) {
    b.addEventListener("click", function () {
      b.disabled = true;
      const status = document.getElementById("cancel-status");
      status.textContent = "canceling…";
      fetch("/api/jobs/" + encodeURIComponent(b.dataset.job) + "/cancel", { method: "POST" })
        .then(function (r) { return r.json().then(function (body) { return { ok: r.ok, body: body }; }); })
        .then(function (res) {
          if (!res.ok) {
            status.textContent = "cancel failed: " + (res.body.error || "unknown error");
            b.disabled = false;
            return;
          }
          // The live log may already have reported the end; its final
          // state is newer than this answer.
          if (document.body.dataset.ended === "true") return;
          status.textContent = res.body.cancel_requested ? "cancel requested; stopping" : "canceled";
          setState(res.body.state);
        })
        .catch(function (err) {
          status.textContent = "cancel failed: " + err;
          b.disabled = false;
        });
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    const log = document.getElementById("log");
    if (log && log.dataset.events && window.EventSource) live(log);
    const b = document.getElementById("cancel");
    if (b) cancelButton(b);
  });
})();
