// ajet-edge dashboard: the browser script of `/` and `/runs/:id` (bundled into the Worker as text, served at
// /assets/dashboard.js). Plain ES2020 as an ES module (the charts are charts.js, the DOM helpers dom.js), no build step. It reads JSON routes once and then follows the run's
// WebSocket (/runs/:id/live): the run's Durable Object pushes a fresh snapshot after state changes, so the page
// never polls. window.__dashboard exposes the last snapshot and the uPlot charts (the browser tests read them).
import { chartWidth, failureChart, logMetricsChart, rewardChart, signalCharts, successChart } from "/assets/charts.js";
import { ago, dur, el, fill, fmt, getJson } from "/assets/dom.js";

var page = document.body.dataset.page;
var state = { snapshot: null, charts: {}, updates: 0 };
window.__dashboard = state;

function setLive(on) {
  var dot = document.getElementById("live");
  if (!dot) return;
  dot.textContent = on ? "● live" : "○ offline";
  dot.className = on ? "live on" : "live";
}

// ---- runs list -------------------------------------------------------------------------------------------------
function runsList() {
  var tbody = document.querySelector("#runs tbody");
  getJson("/runs?limit=100").then(function (body) {
    var runs = (body && body.runs) || [];
    fill(tbody, runs.map(function (r) {
      var started = r.createdAtMs ? new Date(r.createdAtMs).toLocaleString() : "–";
      var end = r.finishedAtMs || (r.phase === "finished" ? r.updatedAtMs : null);
      return el("tr", { "data-run": r.runId }, [
        el("td", {}, [el("a", { href: "/runs/" + encodeURIComponent(r.runId), text: r.runId })]),
        el("td", { text: r.function || "–" }), el("td", { text: r.phase || "–" }), el("td", { text: r.engineStatus || "–" }),
        el("td", { text: r.globalStep === null || r.globalStep === undefined ? "–" : String(r.globalStep) }),
        el("td", { text: fmt(r.lastStepMeanReward) }), el("td", { text: started }),
        // a finished run without an end instant in the listing shows no duration rather than a growing one
        el("td", { text: r.wallTimeMs ? dur(r.wallTimeMs) : end && r.createdAtMs ? dur(end - r.createdAtMs) : r.createdAtMs && r.phase !== "finished" ? dur(Date.now() - r.createdAtMs) + " so far" : "–" }),
      ]);
    }), "no runs yet: start one with POST /runs (or npm start)", 8);
  }).catch(function (err) {
    fill(tbody, [], "could not list the runs: " + err.message, 8);
  });
}

// ---- run page --------------------------------------------------------------------------------------------------
var runId = document.body.dataset.run;
function cards(snap) {
  var v = snap.view;
  var cw = v.currentWindow;
  var items = [
    ["function", v.function], ["phase", v.phase + (v.stopReason ? " (" + v.stopReason + ")" : "")],
    ["episodes ended", String(v.totals.episodesEnded)], ["mean reward", fmt(v.totals.meanReward)],
    ["episodes / min", fmt(snap.episodesPerMinute, 1)], ["in flight", v.episodes.inFlight + " / " + v.episodes.maxParallel],
    ["failed attempts", String(v.totals.attemptsFailed)], ["dropped groups", String(v.totals.groupsDropped)],
  ];
  var box = document.getElementById("cards");
  box.replaceChildren.apply(box, items.map(function (it) { return el("div", { class: "card" }, [el("div", { class: "k", text: it[0] }), el("div", { class: "v", text: it[1] })]); }));
  fill(document.querySelector("#engines tbody"), v.engines.map(function (e) {
    return el("tr", {}, [el("td", { text: e.swarm }), el("td", { text: e.engineStatus }), el("td", { text: e.globalStep === null ? "–" : String(e.globalStep) }), el("td", { text: ago(e.seenAtMs) })]);
  }), "no swarm", 4);
  var bar = document.querySelector("#progress .bar");
  var label = document.querySelector("#progress .label");
  if (cw) {
    var pct = cw.groupsOpened ? Math.round((100 * cw.groupsResolved) / cw.groupsOpened) : 0;
    bar.style.width = pct + "%";
    label.textContent = "window " + (cw.windowIndex + 1) + " (global step " + (cw.globalStep === null ? "–" : cw.globalStep) + "): " +
      cw.groupsResolved + "/" + cw.groupsOpened + " groups, " + cw.episodesEnded + " episodes ended" +
      (cw.waitingForEngine ? ", waiting for the engine to train" : "");
  } else {
    bar.style.width = "0%";
    label.textContent = v.episodeType === "eval" ? "eval run: no training windows" : "no window opened yet";
  }
  document.getElementById("dropped").textContent = (snap.view.totals.groupsDropped || 0) > 0
    ? v.steps.reduce(function (keys, s) { return keys.concat(s.droppedGroupKeys); }, []).join(", ") || String(v.totals.groupsDropped)
    : "none";
  document.getElementById("log").textContent = v.log.map(function (l) { return new Date(l.atMs).toLocaleTimeString() + " " + l.level + " " + l.message; }).join("\n");
}

function inFlight(snap) {
  fill(document.querySelector("#inflight tbody"), snap.inFlight.map(function (r) {
    return el("tr", { class: "link", onclick: function () { openTranscript(r.episodeKey, r.attempt); } }, [
      el("td", { text: r.taskId }), el("td", { text: String(r.repeat) }), el("td", { text: String(r.attempt) }),
      el("td", { text: r.swarms.join(", ") || "–" }), el("td", { text: r.ageSeconds === null ? "–" : r.ageSeconds.toFixed(0) + " s" }),
      el("td", { text: r.sinceLastLlmActivity || "–" }), el("td", { text: r.llmCalls === null ? "–" : String(r.llmCalls) }), el("td", { text: r.status }),
    ]);
  }), "nothing in flight", 8);
}

var shownWindow = null;
function episodeRows(rows) {
  fill(document.querySelector("#episodes tbody"), rows.map(function (a) {
    // a reward whose server batch was wiped before training is not counted (its repeat ran again): said apart
    var result = a.kind === "failed" ? "failed: " + a.cause : a.wipedBy ? "wiped (" + a.wipedBy + ")" : a.kind;
    return el("tr", { class: "link" + (a.kind === "failed" || a.wipedBy ? " bad" : ""), "data-episode": a.episodeKey, onclick: function () { openTranscript(a.episodeKey, a.attempt); } }, [
      el("td", { text: a.episodeKey + (a.attempt > 1 ? " (try " + a.attempt + ")" : "") }), el("td", { text: a.taskId }),
      el("td", { text: a.windowIndex === null ? "eval" : String(a.windowIndex + 1) }), el("td", { text: result }),
      el("td", { text: fmt(a.reward) }), el("td", { text: dur(a.durationMs) }),
    ]);
  }), "no episode reported yet", 6);
}
function showWindow(n) {
  shownWindow = n;
  document.getElementById("episodes-title").textContent = "Episodes of window " + n;
  getJson("/runs/" + encodeURIComponent(runId) + "/attempts?window=" + n).then(function (b) { episodeRows(b.attempts); });
}

function usd(x) {
  if (x === null || x === undefined) return "–";
  if (x === 0) return "$0";
  return x >= 0.01 ? "$" + x.toFixed(4) : "$" + x.toPrecision(3);
}
// the run's cost (GET /runs/:id/metrics `cost`): totals, then one row per priced line, estimates marked
function costTable(snap) {
  var c = snap.cost;
  var box = document.getElementById("cost-cards");
  if (!box) return;
  if (!c) { box.replaceChildren(el("p", { class: "muted", text: "not priced" })); return; }
  var items = [["total", usd(c.totalUsd)], ["per step", usd(c.perStepUsd)], ["per 1,000 episodes", usd(c.per1000EpisodesUsd)], ["of it estimated", usd(c.estimatedUsd)]];
  box.replaceChildren.apply(box, items.map(function (it) { return el("div", { class: "card" }, [el("div", { class: "k", text: it[0] }), el("div", { class: "v", text: it[1] })]); }));
  fill(document.querySelector("#cost tbody"), c.lines.concat(c.monthly.map(function (l) { return Object.assign({}, l, { item: l.item + " (per month kept)" }); })).map(function (l) {
    return el("tr", { title: l.basis }, [el("td", { text: l.item + (l.estimate ? " (estimate)" : "") }), el("td", { text: String(+l.quantity.toPrecision(6)) + " " + l.unit }), el("td", { text: usd(l.usd) })]);
  }), "nothing counted yet", 3);
  document.getElementById("cost-note").textContent = "Workers Paid list prices of " + c.prices.asOf + "; estimates: " + c.lines.filter(function (l) { return l.estimate; }).map(function (l) { return l.basis; }).join("; ");
}

function evalTable(snap) {
  var section = document.getElementById("eval-section");
  if (!snap.eval) { section.hidden = true; return; }
  section.hidden = false;
  var e = snap.eval;
  var rows = Object.keys(e.bySource).map(function (s) { return [s, e.bySource[s]]; }).concat([["all", e.overall]]);
  document.querySelector("#eval-section h2").textContent = "Eval pass@" + e.k;
  fill(document.querySelector("#eval tbody"), rows.map(function (r) {
    var a = r[1];
    return el("tr", {}, [el("td", { text: r[0] }), el("td", { text: a.scoredTasks + "/" + a.tasks }), el("td", { text: String(a.episodes) }), el("td", { text: fmt(a.meanReward) }), el("td", { text: fmt(a.passAtK) }), el("td", { text: fmt(a.passAt1) })]);
  }), "no task scored yet", 6);
}

function sandboxTable(snap) {
  var sb = snap.view.sandboxes;
  var section = document.getElementById("sandbox-section");
  if (!sb) { section.hidden = true; return; }
  section.hidden = false;
  var keys = Object.keys(sb.byWindow).sort(function (a, b) { return a === "none" ? 1 : b === "none" ? -1 : Number(a) - Number(b); });
  var rows = keys.map(function (k) { return [k === "none" ? "–" : String(Number(k) + 1), sb.byWindow[k]]; }).concat([["all", sb.total]]);
  fill(document.querySelector("#sandboxes tbody"), rows.map(function (r) {
    var c = r[1];
    return el("tr", { class: r[0] === "all" ? "total" : "" }, [el("td", { text: r[0] }), el("td", { text: String(c.created) }), el("td", { text: String(c.alive) }),
      el("td", { text: String(c.destroyed) }), el("td", { text: String(c.failed) }), el("td", { text: fmt(c.seconds, 1) })]);
  }), "no sandbox yet", 6);
}

function render(snap) {
  state.snapshot = snap;
  state.updates++;
  document.body.dataset.updates = String(state.updates);
  document.body.dataset.phase = snap.view.phase;
  document.body.dataset.steps = String(snap.view.steps.length);
  cards(snap);
  rewardChart(state.charts, snap, showWindow);
  successChart(state.charts, snap);
  failureChart(state.charts, snap);
  logMetricsChart(state.charts, snap);
  signalCharts(state.charts, snap);
  costTable(snap);
  // a finished run cannot be stopped: no button for it
  document.getElementById("stop").hidden = snap.view.phase === "finished";
  inFlight(snap);
  evalTable(snap);
  sandboxTable(snap);
  if (shownWindow === null) episodeRows(snap.recent);
}

function text(value) { return typeof value === "string" ? value : JSON.stringify(value, null, 2); }
// One content block or item of the three LLM routes as a line: chat parts, Anthropic blocks (text, tool_use,
// tool_result), Responses items (message, function_call, function_call_output); anything else as JSON.
function blockText(b) {
  if (typeof b === "string") return b;
  if (!b || typeof b !== "object") return text(b);
  if (typeof b.text === "string" && (b.type === "text" || b.type === "output_text" || b.type === "input_text")) return b.text;
  if (b.type === "tool_use") return "→ " + b.name + "(" + JSON.stringify(b.input) + ")";
  if (b.type === "tool_result") return "← result of " + b.tool_use_id + ": " + contentText(b.content);
  if (b.type === "function_call") return "→ " + b.name + "(" + b.arguments + ")";
  if (b.type === "function_call_output") return "← output of " + b.call_id + ": " + contentText(b.output);
  if (b.type === "message" || (b.role && b.content !== undefined)) return contentText(b.content);
  return text(b);
}
function contentText(content) {
  if (content === null || content === undefined) return "";
  return Array.isArray(content) ? content.map(blockText).join("\n") : blockText(content);
}
function roleOf(m) {
  if (m.role) return m.role;
  if (m.type === "function_call") return "assistant";
  if (m.type === "function_call_output") return "tool";
  return "?";
}
function message(role, body, extra) {
  return el("div", { class: "msg " + role }, [el("div", { class: "role", text: role + (extra ? " · " + extra : "") }), el("pre", { text: body })]);
}
// the attempt's sandbox calls (commands with exit codes and capped output, code runs, files), in order
function sandboxMessages(calls) {
  return (calls || []).map(function (c) {
    var lines = [c.op + (c.input ? " " + c.input : "")];
    if (c.exitCode !== undefined) lines.push("exit " + (c.exitCode === null ? "–" : c.exitCode) + (c.timedOut ? " (timed out)" : ""));
    if (c.stdout) lines.push(c.stdout);
    if (c.stderr) lines.push("stderr: " + c.stderr);
    if (c.result) lines.push("result: " + c.result);
    if (c.exception) lines.push("exception: " + c.exception);
    if (c.error) lines.push("failed: " + c.error);
    return message("sandbox", lines.join("\n"), c.sandboxId + " · " + new Date(c.atMs).toLocaleTimeString() + " · " + dur(c.durationMs));
  });
}
function openTranscript(key, attempt) {
  var dialog = document.getElementById("transcript");
  var body = document.getElementById("transcript-body");
  body.replaceChildren(el("p", { class: "muted", text: "loading " + key + "…" }));
  if (!dialog.open) dialog.showModal();
  getJson("/runs/" + encodeURIComponent(runId) + "/episodes/" + encodeURIComponent(key) + (attempt ? "?attempt=" + attempt : "")).then(function (t) {
    var parts = [el("h2", { text: t.episodeKey + " · attempt " + t.attempt })];
    parts.push(el("p", { class: "meta", text: "task " + t.taskId + " · " + (t.result || "not reported") + " · reward " + fmt(t.reward) + " · " + dur(t.finishedAtMs - t.claimedAtMs) + (t.truncated ? " · cut to the size cap" : "") }));
    var seen = 0;
    t.llm.forEach(function (call, i) {
      // each call resends the conversation so far: show only the messages not shown yet
      var msgs = call.messages || [];
      msgs.slice(i === 0 ? 0 : seen).forEach(function (m) {
        var content = m.role ? contentText(m.content) : blockText(m);
        if (m.tool_calls) content += (content ? "\n" : "") + m.tool_calls.map(function (tc) { return "→ " + (tc.function ? tc.function.name + "(" + tc.function.arguments + ")" : text(tc)); }).join("\n");
        parts.push(message(roleOf(m), content, m.role === "tool" && m.tool_call_id ? "result of " + m.tool_call_id : call.swarm + (call.route && call.route !== "chat" ? " · " + call.route : "")));
      });
      var reply = call.reply;
      var rtext = Array.isArray(reply) ? contentText(reply) : reply && typeof reply === "object" ? contentText(reply.content) : text(reply);
      if (reply && reply.tool_calls) rtext += (rtext ? "\n" : "") + reply.tool_calls.map(function (tc) { return "→ " + tc.function.name + "(" + tc.function.arguments + ")"; }).join("\n");
      parts.push(message("assistant", rtext || (call.error ? "(no answer: " + call.error + ")" : "(empty)"), call.swarm + (call.status ? " · HTTP " + call.status : "")));
      seen = msgs.length + 1;
    });
    parts.push.apply(parts, sandboxMessages(t.sandbox));
    Object.keys(t.outputs || {}).forEach(function (s) {
      var o = t.outputs[s];
      parts.push(message("reward", "reward " + o.reward + (o.metadata && Object.keys(o.metadata).length ? "\nmetadata " + text(o.metadata) : "") + (o.log_metrics && Object.keys(o.log_metrics).length ? "\nlog_metrics " + text(o.log_metrics) : ""), s));
    });
    if (t.logs.length) parts.push(message("log", t.logs.map(function (l) { return l.level + " " + l.msg + (l.fields ? " " + JSON.stringify(l.fields) : ""); }).join("\n")));
    if (t.error) parts.push(message("error", t.error.name + ": " + t.error.message + (t.error.stack ? "\n" + t.error.stack : "")));
    body.replaceChildren.apply(body, parts);
  }).catch(function (err) {
    body.replaceChildren(el("p", { class: "bad", text: err.message }));
  });
}

function connect() {
  var proto = location.protocol === "https:" ? "wss:" : "ws:";
  var ws = new WebSocket(proto + "//" + location.host + "/runs/" + encodeURIComponent(runId) + "/live");
  var retry = 1000;
  ws.onopen = function () { setLive(true); retry = 1000; };
  ws.onmessage = function (ev) { try { render(JSON.parse(ev.data)); } catch (e) { console.error(e); } };
  ws.onclose = function () {
    setLive(false);
    // the run finished and nothing more will change: stay offline; else reconnect (hibernation may close it)
    if (state.snapshot && state.snapshot.view.phase === "finished") return;
    setTimeout(connect, retry);
    retry = Math.min(retry * 2, 30000);
  };
}

function runPage() {
  var base = "/runs/" + encodeURIComponent(runId);
  document.getElementById("metrics-csv").href = base + "/metrics?format=csv";
  document.getElementById("metrics-json").href = base + "/metrics?format=json";
  document.getElementById("stop").addEventListener("click", function () {
    if (!confirm("Stop run " + runId + "? In-flight episodes finish or are aborted; nothing new starts.")) return;
    fetch(base + "/stop", { method: "POST", credentials: "same-origin" }).then(function (res) {
      return res.json().then(function (b) { if (!res.ok) alert("stop refused: " + ((b.error && b.error.message) || res.status)); });
    });
  });
  getJson(base + "/dashboard").then(render).catch(function (err) {
    document.getElementById("cards").replaceChildren(el("p", { class: "bad", text: err.message }));
  });
  connect();
  window.addEventListener("resize", function () {
    Object.keys(state.charts).forEach(function (k) {
      var c = state.charts[k];
      c.setSize({ width: chartWidth(c.root.parentElement), height: c.height });
    });
  });
}

if (page === "runs") runsList();
else if (page === "run") runPage();
