// dashboard.js is the browser script of the dashboard, bundled into the Worker as text (wrangler.toml rules).
declare const text: string;
export default text;
