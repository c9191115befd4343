// ajet-edge dashboard: the run page's charts (uPlot, loaded before as a classic script), an ES module imported by
// dashboard.js (bundled into the Worker as text, served at /assets/charts.js). Each chart is kept in `charts` by name
// and redrawn in place when its series stay the same. The x axis is the run's window (its training step, 1-based).
/* global uPlot */
const COLORS = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#be185d", "#4d7c0f"];

/** The width a chart takes in its box, px. */
export function chartWidth(div) { return Math.max(260, div.clientWidth || 600); }

function drawChart(charts, name, div, opts, data) {
  var old = charts[name];
  var sig = JSON.stringify(opts.series.map(function (s) { return s.label; }));
  if (old && old.__sig === sig) { old.setData(data); return old; }
  if (old) old.destroy();
  div.replaceChildren();
  opts.width = chartWidth(div);
  var chart = new uPlot(opts, data, div);
  chart.__sig = sig;
  charts[name] = chart;
  return chart;
}

/** The reward per window (mean, ± one standard deviation); a click on a window calls `onPick(window)`. */
export function rewardChart(charts, snap, onPick) {
  var div = document.getElementById("reward-chart");
  var lines = snap.rewards;
  var windows = lines.length ? lines[0].windows : [];
  var all = lines[0];
  // the band comes cut to the window's reward range (a mean ± sd beyond the lowest or highest reward is not drawn)
  var upper = all ? all.high : [];
  var lower = all ? all.low : [];
  var series = [{ label: "window" }];
  var data = [windows];
  lines.forEach(function (line, i) {
    series.push({ label: line.label, stroke: COLORS[i % COLORS.length], width: i === 0 ? 2.5 : 1.5, points: { show: true, size: 7 }, spanGaps: true });
    data.push(line.mean);
  });
  series.push({ label: "+1 sd", stroke: "rgba(37,99,235,0.35)", dash: [4, 4], points: { show: false } });
  series.push({ label: "−1 sd", stroke: "rgba(37,99,235,0.35)", dash: [4, 4], points: { show: false } });
  data.push(upper, lower);
  var n = series.length;
  div.dataset.points = JSON.stringify(windows.map(function (w, i) { return { window: w, mean: all ? all.mean[i] : null }; }));
  var chart = drawChart(charts, "reward", div, {
    height: 260, series: series, bands: [{ series: [n - 2, n - 1], fill: "rgba(37,99,235,0.10)" }],
    scales: { x: { time: false } }, axes: [{ label: "window", incrs: [1, 2, 5, 10, 20, 50, 100] }, { label: "reward" }],
    cursor: { points: { size: 9 } },
  }, data);
  if (!chart.__click) {
    chart.__click = true;
    chart.over.addEventListener("click", function () {
      var idx = chart.cursor.idx;
      if (idx !== null && idx !== undefined) onPick(chart.data[0][idx]);
    });
  }
}

/** The functions' `log_metrics` per window, one line per key; the section stays hidden while none was reported. */
export function logMetricsChart(charts, snap) {
  var keys = Object.keys(snap.logMetrics.byKey);
  document.getElementById("log-metrics-section").hidden = keys.length === 0;
  if (keys.length === 0) return;
  var div = document.getElementById("log-metrics-chart");
  var series = [{ label: "window" }];
  var data = [snap.logMetrics.windows];
  keys.forEach(function (k, i) {
    series.push({ label: k, stroke: COLORS[i % COLORS.length], width: 2, points: { show: true }, spanGaps: true });
    data.push(snap.logMetrics.byKey[k]);
  });
  drawChart(charts, "logMetrics", div, { height: 180, series: series, scales: { x: { time: false } }, axes: [{ incrs: [1, 2, 5, 10, 20, 50, 100] }, {}] }, data);
}

/** The success rate per window. */
export function successChart(charts, snap) {
  var div = document.getElementById("success-chart");
  drawChart(charts, "success", div, {
    height: 180, series: [{ label: "window" }, { label: "success rate", stroke: "#16a34a", width: 2, points: { show: true } }],
    scales: { x: { time: false }, y: { range: [0, 1] } }, axes: [{ incrs: [1, 2, 5, 10, 20, 50, 100] }, {}],
  }, [snap.successRate.windows, snap.successRate.rate]);
}

/** Failures per window, by cause. */
export function failureChart(charts, snap) {
  var div = document.getElementById("failure-chart");
  var causes = Object.keys(snap.failures.byCause);
  var note = document.getElementById("failure-note");
  var totals = snap.view.failuresByCause || {};
  note.textContent = Object.keys(totals).length
    ? "all failed attempts: " + Object.keys(totals).map(function (c) { return c + " " + totals[c]; }).join(", ")
    : "no failed attempt";
  var series = [{ label: "window" }];
  var data = [snap.failures.windows];
  causes.forEach(function (c, i) {
    series.push({ label: c, stroke: COLORS[(i + 1) % COLORS.length], width: 2, points: { show: true } });
    data.push(snap.failures.byCause[c]);
  });
  if (causes.length === 0) { series.push({ label: "failures", stroke: "#9ca3af", points: { show: true } }); data.push(snap.failures.windows.map(function () { return 0; })); }
  drawChart(charts, "failures", div, { height: 180, series: series, scales: { x: { time: false } }, axes: [{ incrs: [1, 2, 5, 10, 20, 50, 100] }, {}] }, data);
}

var X_AXIS = { incrs: [1, 2, 5, 10, 20, 50, 100] };

/** A line chart of named series over the windows, kept in `charts[name]`; `y` fixes the y range when given. */
function lineChart(charts, name, snapSeries, lines, opts) {
  var div = document.getElementById(name + "-chart");
  if (!div) return;
  var series = [{ label: "window" }];
  var data = [snapSeries.windows];
  lines.forEach(function (l, i) {
    series.push({ label: l[0], stroke: COLORS[i % COLORS.length], width: 2, points: { show: true, size: 6 }, spanGaps: true, dash: l[2] ? [5, 4] : undefined });
    data.push(l[1]);
  });
  var scales = { x: { time: false } };
  if (opts && opts.y) scales.y = { range: opts.y };
  drawChart(charts, name, div, { height: 180, series: series, scales: scales, axes: [X_AXIS, { label: (opts && opts.unit) || "" }] }, data);
}

/**
 * The learning signals per window (the snapshot's `signals`, the numbers of `GET /runs/:id/metrics`): GRPO groups
 * with no signal, answer length, tokens, LLM latency and throughput, turns and tool calls, the step's time split
 * and the reward histogram (the `log_metrics` keys have their own chart above).
 */
export function signalCharts(charts, snap) {
  var s = snap.signals;
  if (!s) return;
  lineChart(charts, "grpo", s, [["no signal", s.zeroAdvantageShare], ["all 0", s.allZeroShare, true], ["all 1", s.allOneShare, true], ["cut by length", s.lengthCutShare, true]], { y: [0, 1], unit: "share of groups" });
  lineChart(charts, "length", s, [["chars mean", s.responseCharsMean], ["chars p95", s.responseCharsP95, true]], { unit: "characters" });
  lineChart(charts, "tokens", s, [["completion mean", s.completionTokensMean], ["completion p95", s.completionTokensP95, true], ["prompt mean", s.promptTokensMean]], { unit: "tokens" });
  lineChart(charts, "latency", s, [["p50", s.latencyP50Ms], ["p95", s.latencyP95Ms, true]], { unit: "ms per call" });
  lineChart(charts, "throughput", s, [["tokens/s", s.tokensPerSecond], ["turns", s.turnsMean], ["tool calls", s.toolCallsMean]], { unit: "" });
  lineChart(charts, "steptime", s, [["rollout", s.rolloutS], ["trainer", s.trainerWaitS], ["weight sync", s.weightSyncS]], { unit: "seconds" });
  histogramChart(charts, s);
}

/** The reward histogram of the latest window with rewards: x = each bin's lower edge, y = episodes. */
function histogramChart(charts, s) {
  var div = document.getElementById("histogram-chart");
  var note = document.getElementById("histogram-note");
  if (!div) return;
  var at = -1;
  for (var i = s.histograms.length - 1; i >= 0; i--) if (s.histograms[i].some(function (n) { return n > 0; })) { at = i; break; }
  var counts = at >= 0 ? s.histograms[at] : [];
  var lows = s.histogramEdges.slice(0, counts.length);
  if (note) note.textContent = at >= 0 ? "window " + s.windows[at] + ", bins of width " + (s.histogramEdges.length > 1 ? +(s.histogramEdges[1] - s.histogramEdges[0]).toFixed(6) : 0) : "no reward yet";
  div.dataset.window = at >= 0 ? String(s.windows[at]) : "";
  drawChart(charts, "histogram", div, {
    height: 180, series: [{ label: "reward ≥" }, { label: "episodes", stroke: "#0891b2", fill: "rgba(8,145,178,0.25)", width: 2, paths: uPlot.paths && uPlot.paths.stepped ? uPlot.paths.stepped({ align: 1 }) : undefined, points: { show: true } }],
    scales: { x: { time: false } }, axes: [{}, { label: "episodes" }],
  }, [lows, counts]);
}
