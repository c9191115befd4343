/**
 * @module test/support/caps-table — the caps table (edge/ground/caps.ts) and the spec's number ranges
 * (scheduler/spec-ranges.ts) as the markdown rows `docs/security-and-limits.md` prints; a unit test holds the doc to
 * them (regenerate with `node --import tsx test/support/caps-table.ts`).
 */
import { CAPS, type CapRow } from "../../src/edge/ground/caps.ts";
import { numberText as num, SPEC_RANGES, type SpecRange } from "../../src/scheduler/spec-ranges.ts";

/** One markdown row per cap: name, var, default, range, unit, what it bounds, the way around it. */
export function capRows(): string[] {
  return Object.entries(CAPS).map(([name, row]: [string, CapRow]) =>
    `| \`${name}\` | ${row.var === null ? "fixed" : `\`${row.var}\``} | ${num(row.default)} | ${row.var === null ? "—" : `${num(row.min)} – ${num(row.max)}`} | ${row.unit} | ${row.what} | ${row.around} |`,
  );
}

/** One markdown row per ranged number of a run spec. */
export function rangeRows(): string[] {
  return Object.entries(SPEC_RANGES).map(([field, r]: [string, SpecRange]) => `| \`${field}\` | ${num(r.min)} | ${num(r.max)} | ${r.unit}${r.whole ? ", whole" : ""} | ${r.why} |`);
}

if (process.argv[1]?.endsWith("caps-table.ts")) {
  console.log(["| cap | var | default | a var may set | unit | bounds | when over it |", "|---|---|---|---|---|---|---|", ...capRows()].join("\n"));
  console.log();
  console.log(["| field | min | max | unit | why |", "|---|---|---|---|---|", ...rangeRows()].join("\n"));
}
