/**
 * @module sandbox/local-server/interpreters — the two small programs behind the local code interpreter: each code
 * run is one fresh `python3` or `node` process that runs the code, prints like a script, and writes one JSON line
 * `{result, error}` on fd 3 — `result` the text of the last expression's value (as a notebook shows it: `repr`,
 * `util.inspect`), `error` the exception (also printed to stderr as a traceback).
 */

/** Python: the last statement, when it is an expression, is evaluated for the result (`ast`). */
export const PYTHON_RUNNER = `import ast, json, os, sys, traceback
path = sys.argv[1]
with open(path, encoding="utf-8") as f:
    src = f.read()
g = {"__name__": "__main__", "__file__": "<cell>", "__builtins__": __builtins__}
result = None
error = None
try:
    tree = ast.parse(src, filename="<cell>", mode="exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    exec(compile(tree, "<cell>", "exec"), g)
    if last is not None:
        value = eval(compile(last, "<cell>", "eval"), g)
        if value is not None:
            result = repr(value)
except SystemExit as e:
    if e.code not in (None, 0):
        error = {"name": "SystemExit", "message": str(e.code), "traceback": ""}
except BaseException as e:
    # the cell's frames only (the first frame is this runner's)
    tb = "".join(traceback.format_exception(type(e), e, e.__traceback__.tb_next if e.__traceback__ else None))
    sys.stderr.write(tb)
    error = {"name": type(e).__name__, "message": str(e), "traceback": tb}
sys.stdout.flush()
sys.stderr.flush()
os.write(3, json.dumps({"result": result, "error": error}).encode("utf-8"))
`;

/** JavaScript: `vm.runInThisContext` gives the completion value of the last statement (a promise is awaited). */
export const JAVASCRIPT_RUNNER = `"use strict";
const fs = require("node:fs");
const vm = require("node:vm");
const util = require("node:util");
const code = fs.readFileSync(process.argv[2], "utf8");
globalThis.require = require;
(async () => {
  let result = null;
  let error = null;
  try {
    let value = vm.runInThisContext(code, { filename: "<cell>" });
    if (value && typeof value.then === "function") value = await value;
    if (value !== undefined) result = util.inspect(value);
  } catch (e) {
    const tb = (e && e.stack) || String(e);
    process.stderr.write(tb + "\\n");
    error = { name: (e && e.name) || "Error", message: (e && e.message) || String(e), traceback: tb };
  }
  fs.writeSync(3, JSON.stringify({ result, error }));
})();
`;
