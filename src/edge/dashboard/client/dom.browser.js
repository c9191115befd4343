// ajet-edge dashboard: the small DOM and format helpers of dashboard.js (bundled into the Worker as text, served at
// /assets/dom.js). Plain ES2020 as an ES module, no build step.

export function el(tag, attrs, children) {
  var node = document.createElement(tag);
  Object.keys(attrs || {}).forEach(function (k) {
    if (k === "text") node.textContent = attrs[k];
    else if (k === "class") node.className = attrs[k];
    else if (k.slice(0, 2) === "on") node.addEventListener(k.slice(2), attrs[k]);
    else node.setAttribute(k, attrs[k]);
  });
  (children || []).forEach(function (c) { node.appendChild(typeof c === "string" ? document.createTextNode(c) : c); });
  return node;
}
export function fmt(x, digits) { return x === null || x === undefined ? "–" : Number(x).toFixed(digits === undefined ? 3 : digits); }
export function ago(ms) {
  if (!ms) return "–";
  var s = Math.max(0, (Date.now() - ms) / 1000);
  return s < 90 ? s.toFixed(0) + " s ago" : s < 5400 ? (s / 60).toFixed(0) + " min ago" : (s / 3600).toFixed(1) + " h ago";
}
export function dur(ms) {
  if (ms === null || ms === undefined) return "–";
  var s = ms / 1000;
  return s < 90 ? s.toFixed(1) + " s" : s < 5400 ? (s / 60).toFixed(1) + " min" : (s / 3600).toFixed(1) + " h";
}
export function fill(tbody, rows, empty, cols) {
  tbody.replaceChildren();
  if (rows.length === 0) tbody.appendChild(el("tr", {}, [el("td", { colspan: String(cols), class: "muted", text: empty })]));
  rows.forEach(function (r) { tbody.appendChild(r); });
}
export function getJson(path) {
  return fetch(path, { headers: { accept: "application/json" }, credentials: "same-origin" }).then(function (res) {
    if (res.status === 401 || res.status === 403) { location.href = "/login?next=" + encodeURIComponent(location.pathname); throw new Error("sign in"); }
    return res.json().then(function (body) { if (!res.ok) throw new Error((body && body.error && body.error.message) || res.statusText); return body; });
  });
}
