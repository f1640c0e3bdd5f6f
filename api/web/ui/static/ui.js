// The web UI's only script: live progress over server-sent events (/ui/live).
// Elements carrying data-live-ids="<id>,<id>" ask to follow those assessments; each progress event moves the
// matching <progress> bars, status badges and "waiting for ..." lines (what the run waits for among our LLM
// endpoints: rate limited, or down since when). With data-live-trials each finished trial's square in the grid
// takes its colour and becomes a link; on a grid filtered by failure kind (data-kind) it is dimmed unless the
// trial has that kind, and links on with the filter, as the server renders it. With data-reload-when-done the
// page reloads once they finish, to show the report. Text goes in through textContent and properties only:
// nothing from the server is parsed as HTML.
"use strict";

const TERMINAL = new Set(["completed", "failed", "cancelled"]);

function follow(container) {
  const ids = (container.dataset.liveIds || "").split(",").filter(Boolean);
  if (ids.length === 0 || !window.EventSource) return;
  const open = new Set(ids);
  let query = ids.map((id) => "id=" + encodeURIComponent(id)).join("&");
  if (container.dataset.liveTrials) query += "&trials=true";
  const source = new EventSource("/ui/live?" + query);
  source.addEventListener("trial", (message) => showTrial(JSON.parse(message.data)));
  source.addEventListener("progress", (message) => {
    const p = JSON.parse(message.data);
    for (const box of document.querySelectorAll("[data-progress-for]")) {
      if (box.dataset.progressFor !== p.assessment_id) continue;
      const bar = box.querySelector("progress");
      bar.max = p.trials_total;
      bar.value = p.trials_done;
      box.querySelector(".count").textContent = p.trials_done + "/" + p.trials_total;
      box.className = "progress p-" + p.status; // failed and cancelled turn the bar red
    }
    for (const line of document.querySelectorAll("[data-waiting-for]")) {
      if (line.dataset.waitingFor !== p.assessment_id) continue;
      const waiting = p.waiting_for || [];
      line.textContent = waiting.join("; ");
      line.hidden = waiting.length === 0;
    }
    for (const badge of document.querySelectorAll("[data-status-for]")) {
      if (badge.dataset.statusFor !== p.assessment_id) continue;
      badge.textContent = p.status;
      badge.className = "badge s-" + p.status;
    }
    if (TERMINAL.has(p.status)) {
      open.delete(p.assessment_id);
      if (open.size === 0) {
        source.close();
        if (container.dataset.reloadWhenDone) window.location.reload();
      }
    }
  });
}

function showTrial(t) {
  const grid = document.getElementById("trial-grid");
  if (!grid) return;
  const kind = grid.dataset.kind; // the page's failure-kind filter, if any
  for (const column of grid.querySelectorAll(".task")) {
    if (column.dataset.task !== t.task_id) continue;
    const old = column.querySelectorAll(".cell")[t.trial];
    if (!old) return;
    const link = document.createElement("a");
    link.className = "cell o-" + t.outcome;
    // Exactly the template's rule: a square is dimmed unless its trial has the kind filtered on.
    if (kind && !(t.kinds || []).includes(kind)) link.classList.add("dim");
    link.href = kind ? t.href + "?kind=" + encodeURIComponent(kind) : t.href;
    link.title = t.title;
    const label = document.createElement("span");
    label.className = "sr";
    label.textContent = t.title;
    link.appendChild(label);
    old.replaceWith(link);
  }
}

document.addEventListener("DOMContentLoaded", () => {
  for (const container of document.querySelectorAll("[data-live-ids]")) follow(container);
});
