// charts.js is the run page's chart module, bundled into the Worker as text (wrangler.toml rules).
declare const text: string;
export default text;
