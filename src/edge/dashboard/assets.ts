/**
 * @module edge/dashboard/assets — the dashboard's static files, bundled into the Worker as text (wrangler.toml
 * `[[rules]] type = "Text"`): uPlot's script and stylesheet from node_modules and the page's own scripts (ES modules: dashboard.js and its
 * charts.js and dom.js) and stylesheet (edge/dashboard/client). Served under `/assets/`; no CDN.
 */
import uplotCss from "uplot/dist/uPlot.min.css";
import uplotJs from "uplot/dist/uPlot.iife.min.js";
import dashboardCss from "./client/dashboard.css";
import chartsJs from "./client/charts.browser.js";
import domJs from "./client/dom.browser.js";
import dashboardJs from "./client/dashboard.browser.js";

/** One bundled file. */
export interface Asset {
  body: string;
  contentType: string;
}

/** File name under `/assets/` → its text and content type. */
export const ASSETS: Readonly<Record<string, Asset>> = {
  "uplot.js": { body: uplotJs, contentType: "text/javascript; charset=utf-8" },
  "uplot.css": { body: uplotCss, contentType: "text/css; charset=utf-8" },
  "dashboard.js": { body: dashboardJs, contentType: "text/javascript; charset=utf-8" },
  "charts.js": { body: chartsJs, contentType: "text/javascript; charset=utf-8" },
  "dom.js": { body: domJs, contentType: "text/javascript; charset=utf-8" },
  "dashboard.css": { body: dashboardCss, contentType: "text/css; charset=utf-8" },
};
