/**
 * @module bench/run-cycle — one swarm-cycle measurement from the command line, for working on it (the full set is
 * `npm run bench -- --only swarm-cycle`): `node --import tsx bench/run-cycle.ts [ajet-edge|python] [llmMs|tail|notail|tail-op|tail-op1] [steps]` (`tail-op`: the tail with over-provisioning 0.5; `tail-op1`: overProvision 1 with throttleRatio 2, 8 extra groups).
 */
import { formatSwarmCycle, issueShape, measureSwarmCycle, TAIL_OVER_PROVISION, tailShape, type SwarmCycleClient } from "./swarm-cycle.bench.ts";

// llm: milliseconds, or `tail` / `notail` (the tail bench's two shapes)
const [client = "ajet-edge", llm = "200", steps = "10"] = process.argv.slice(2);
const shape = llm === "tail-op1" ? tailShape(true, Number(steps), 1, 2) : llm === "tail-op" ? tailShape(true, Number(steps), TAIL_OVER_PROVISION) : llm === "tail" || llm === "notail" ? tailShape(llm === "tail", Number(steps)) : issueShape(Number(llm), Number(steps));
const r = await measureSwarmCycle(shape, () => {}, client as SwarmCycleClient);
for (const line of formatSwarmCycle(r)) console.log(line);
console.log(JSON.stringify(r.requests));
