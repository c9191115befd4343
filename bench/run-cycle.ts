/**
 * @module bench/run-cycle — one swarm-cycle measurement from the command line, for working on it (the full set is
 * `npm run bench -- --only swarm-cycle`): `node --import tsx bench/run-cycle.ts [ajet-edge|python] [llmMs] [steps]`.
 */
import { formatSwarmCycle, issueShape, measureSwarmCycle, type SwarmCycleClient } from "./swarm-cycle.bench.ts";

const [client = "ajet-edge", llm = "200", steps = "10"] = process.argv.slice(2);
const r = await measureSwarmCycle(issueShape(Number(llm), Number(steps)), () => {}, client as SwarmCycleClient);
for (const line of formatSwarmCycle(r)) console.log(line);
console.log(JSON.stringify(r.requests));
