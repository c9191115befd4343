/**
 * @module edge/dashboard/pages — the dashboard's HTML shells. Each page is static markup plus the bundled scripts
 * (`/assets/uplot.js`, then the module `/assets/dashboard.js` with its `/assets/charts.js`); the script reads the page's `data-page` and fills it from the JSON
 * routes and the run's live feed. Nothing user-supplied is written into the HTML except the run id, which the
 * route checked against `[A-Za-z0-9_.:-]` first (and which is escaped anyway).
 */

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);

function shell(title: string, attrs: Record<string, string>, body: string): string {
  const data = Object.entries(attrs).map(([k, v]) => ` data-${k}="${escapeHtml(v)}"`).join("");
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · ajet-edge</title>
<link rel="stylesheet" href="/assets/uplot.css">
<link rel="stylesheet" href="/assets/dashboard.css">
</head>
<body${data}>
<header class="top"><a href="/" class="brand">ajet-edge</a><span id="live" class="live" title="live updates">○</span></header>
<main>
${body}
</main>
<script src="/assets/uplot.js"></script>
<script type="module" src="/assets/dashboard.js"></script>
</body>
</html>`;
}

/** `GET /`: the runs, newest first (filled from `GET /runs`). */
export function runsPage(): string {
  return shell("runs", { page: "runs" }, `<h1>Runs</h1>
<div class="scroll"><table id="runs" class="grid">
<thead><tr><th>run</th><th>function</th><th>phase</th><th>engine</th><th>global step</th><th>last mean reward</th><th>started</th><th>duration</th></tr></thead>
<tbody><tr><td colspan="8" class="muted">loading…</td></tr></tbody>
</table></div>
<p id="runs-note" class="muted"></p>`);
}

/** `GET /runs/:id` in a browser: the run page. */
export function runPage(runId: string): string {
  return shell(runId, { page: "run", run: runId }, `<h1 id="run-title">${escapeHtml(runId)}</h1>
<section class="cards" id="cards"></section>
<section><h2>Engines</h2><div class="scroll"><table id="engines" class="grid"><thead><tr><th>swarm</th><th>engine</th><th>global step</th><th>seen</th></tr></thead><tbody></tbody></table></div></section>
<section><h2>Current window</h2><div id="progress" class="progress"><div class="bar"></div><span class="label"></span></div></section>
<section><h2>Reward per window</h2><p class="muted">mean, shaded ± one standard deviation (within the window's lowest and highest reward); click a window (the run's training step) for its episodes</p><div id="reward-chart" class="chart"></div></section>
<section class="two">
<div><h2>Success rate</h2><div id="success-chart" class="chart small"></div></div>
<div><h2>Failures by cause</h2><div id="failure-chart" class="chart small"></div><p id="failure-note" class="muted"></p></div>
</section>
<section id="log-metrics-section" hidden><h2>Log metrics per window</h2><p class="muted">the mean of each <code>log_metrics</code> key the function reported</p><div id="log-metrics-chart" class="chart small"></div></section>
<section><h2>Learning signal</h2><p class="muted">share of task groups whose repeats all scored the same (no GRPO advantage: nothing to learn from), split all-0 / all-1, and of episodes cut by the length limit</p><div id="grpo-chart" class="chart small"></div></section>
<section class="two">
<div><h2>Reward histogram</h2><p id="histogram-note" class="muted"></p><div id="histogram-chart" class="chart small"></div></div>
<div><h2>Step time</h2><p class="muted">first claim to last end, waiting for the trainer, weight sync</p><div id="steptime-chart" class="chart small"></div></div>
</section>
<section class="two">
<div><h2>Answer length</h2><div id="length-chart" class="chart small"></div></div>
<div><h2>Tokens per episode</h2><div id="tokens-chart" class="chart small"></div></div>
</section>
<section class="two">
<div><h2>LLM latency</h2><div id="latency-chart" class="chart small"></div></div>
<div><h2>Throughput, turns, tool calls</h2><div id="throughput-chart" class="chart small"></div></div>
</section>
<section><h2>Cost on Cloudflare</h2><div id="cost-cards" class="cards inner"></div><div class="scroll"><table id="cost" class="grid"><thead><tr><th>item</th><th>quantity</th><th>USD</th></tr></thead><tbody></tbody></table></div><p id="cost-note" class="muted"></p></section>
<section><h2>In flight</h2><div class="scroll"><table id="inflight" class="grid"><thead><tr><th>task</th><th>repeat</th><th>attempt</th><th>swarm</th><th>age</th><th>since LLM</th><th>LLM calls</th><th>status</th></tr></thead><tbody></tbody></table></div></section>
<section><h2 id="episodes-title">Latest episodes</h2><div class="scroll tall"><table id="episodes" class="grid"><thead><tr><th>episode</th><th>task</th><th>window</th><th>result</th><th>reward</th><th>duration</th></tr></thead><tbody></tbody></table></div></section>
<section id="sandbox-section" hidden><h2>Sandboxes</h2><p class="muted">per window: created, alive now, destroyed (confirmed by the backend), failed (an infrastructure failure its attempt saw), sandbox-seconds</p><div class="scroll"><table id="sandboxes" class="grid"><thead><tr><th>window</th><th>created</th><th>alive</th><th>destroyed</th><th>failed</th><th>sandbox s</th></tr></thead><tbody></tbody></table></div></section>
<section id="eval-section" hidden><h2>Eval pass@k</h2><div class="scroll"><table id="eval" class="grid"><thead><tr><th>source</th><th>tasks</th><th>episodes</th><th>mean reward</th><th>pass@k</th><th>pass@1</th></tr></thead><tbody></tbody></table></div></section>
<section><h2>Dropped groups</h2><p id="dropped" class="muted">none</p></section>
<section><h2>Run log</h2><pre id="log" class="log"></pre></section>
<section class="actions"><button id="stop" class="danger">Stop run</button> <a id="metrics-csv" href="#">metrics.csv</a> · <a id="metrics-json" href="#">metrics.json</a></section>
<dialog id="transcript"><form method="dialog"><button class="close" aria-label="close">×</button></form><div id="transcript-body"></div></dialog>`);
}

/** `GET /login`: the sign-in form (a token, never put in the URL). @param next where to go afterwards (a path) */
export function loginPage(next?: string, error?: string): string {
  const target = next && /^\/[A-Za-z0-9_.:/-]*$/.test(next) ? next : "/";
  return shell("sign in", { page: "login" }, `<h1>Sign in</h1>${error ? `\n<p class="bad" role="alert">${escapeHtml(error)}</p>` : ""}
<form method="post" action="/login" class="login">
<label for="token">API token (AJET_READ_TOKEN is enough to watch)</label>
<input id="token" name="token" type="password" autocomplete="current-password" required>
<input type="hidden" name="next" value="${escapeHtml(target)}">
<button type="submit">Sign in</button>
</form>
<p class="muted">The token is kept in an HttpOnly cookie for this site only.</p>`);
}
