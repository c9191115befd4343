/**
 * Who declares itself an active client (`declare_client_active`, spec §3.9, §3.10, §7.3): only a client that votes
 * `/agree_sync_weight` — a train run. An eval run never votes; listed by its aborts, it would hold every other run's
 * sync in the all-agree mode until it aged out (600 s). The rule (port `declaresClientActive`), the client default
 * that carries it to every end and abort, and the emulator honouring the flag on an abort.
 */
import { afterEach, describe, expect, it } from "vitest";
import { SwarmClient } from "../../../src/client/index.ts";
import type { Emulator } from "../../../src/emulator/index.ts";
import { declaresClientActive } from "../../../src/port/index.ts";
import { advancingFetch } from "../../support/emulator-fetch.ts";
import { bootToRolling, claim, makeEmulator } from "../emulator/helpers.ts";
import { json, scriptedClient } from "./_support.ts";

const E1 = "e1000000000000000000000000000001";
const ok = json(200, { success: true });
const ALL = "rollout_until_all_clients_agree_sync_weight";

let emulators: Emulator[] = [];
afterEach(() => {
  for (const e of emulators) e.close();
  emulators = [];
});

describe("declare_client_active", () => {
  it("the rule: a train run declares itself active, an eval run (it never votes) does not", () => {
    expect(declaresClientActive("train")).toBe(true);
    expect(declaresClientActive("eval")).toBe(false);
  });

  it("a client built for an eval run sends false on every end and abort; a call's own option still wins; the default stays true", async () => {
    const evalRun = scriptedClient({ "POST /abort_episode": ok, "POST /end_episode": ok }, { declareClientActive: declaresClientActive("eval") });
    await evalRun.client.abortEpisode(E1);
    await evalRun.client.endEpisode("t", E1, { reward: 1 });
    await evalRun.client.abortEpisode(E1, { declareClientActive: true });
    expect(evalRun.server.calls.map((c) => (c.body as { declare_client_active: boolean }).declare_client_active)).toEqual([false, false, true]);
    const plain = scriptedClient({ "POST /abort_episode": ok });
    await plain.client.abortEpisode(E1);
    expect((plain.server.calls[0]!.body as { declare_client_active: boolean }).declare_client_active).toBe(true);
  });

  it("on an all-agree server, an eval run's aborts leave the active list empty; a train run's abort joins it", async () => {
    const { emu, clock } = makeEmulator();
    emulators.push(emu);
    await bootToRolling(emu, clock, { batchSize: 8, numRepeat: 1, maxEnvWorker: 8, method: ALL });
    const client = (uuid: string, episodeType: "train" | "eval") =>
      new SwarmClient({ baseURL: "http://127.0.0.1:10086", clientUuid: uuid, fetch: advancingFetch(emu, clock), declareClientActive: declaresClientActive(episodeType), logger: { info() {}, warn() {}, error() {} } });
    const ev = await claim(emu, "evaluator", { episode_type: "eval" });
    expect(await client("evaluator", "eval").abortEpisode(ev.episode_uuid)).toBe(true);
    expect(emu.engine.activeClients).toEqual([]);
    const tr = await claim(emu, "trainer");
    expect(await client("trainer", "train").abortEpisode(tr.episode_uuid)).toBe(true);
    expect(emu.engine.activeClients.map((c) => c.client_uuid)).toEqual(["trainer"]);
  });
});
