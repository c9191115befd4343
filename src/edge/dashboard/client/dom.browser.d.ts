// dom.js holds the dashboard page's DOM and format helpers, bundled into the Worker as text (wrangler.toml rules).
declare const text: string;
export default text;
