// Part of `npm run build`: copies the files of src/ that tsc does not emit (anything but .ts, e.g. a dashboard's
// .css or .browser.js the Worker bundles as text, and the folders' README.md the docs cite) to dist/src/, keeping
// their paths.
import { cpSync, existsSync } from "node:fs";

if (existsSync("src")) {
  cpSync("src", "dist/src", {
    recursive: true,
    filter: (source) => !/\.ts$/.test(source),
  });
}
