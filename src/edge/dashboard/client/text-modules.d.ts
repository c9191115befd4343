// The dashboard's static files are imported as text (wrangler.toml `[[rules]] type = "Text"`).
declare module "uplot/dist/uPlot.min.css" {
  const text: string;
  export default text;
}
declare module "uplot/dist/uPlot.iife.min.js" {
  const text: string;
  export default text;
}
declare module "*/client/dashboard.css" {
  const text: string;
  export default text;
}
