/** Re-scoring stored transcripts (cli/rescore/rescore): old vs new per step, changed share, GRPO signal changes, skips. */
import { describe, expect, it } from "vitest";
import type { AttemptRow } from "../../../src/edge/run/attempts.ts";
import type { EpisodeTranscript } from "../../../src/runtime/transcript.ts";
import { rescore } from "../../../src/cli/rescore/rescore.ts";
import { renderRescore } from "../../../src/cli/commands/rescore.ts";
import { score as countdownScore } from "../../../functions/countdown.ts";

const row = (key: string, reward: number | null, over: Partial<AttemptRow> = {}): AttemptRow => ({
  episodeKey: key, attempt: 1, taskId: key, source: "s", repeat: 0, windowIndex: 0, globalStep: 1, kind: reward === null ? "failed" : "ended", reward,
  swarmRewards: {}, logMetrics: {}, cause: null, durationMs: 1, atMs: 1, ...over,
});
const transcript = (reply: string, over: Partial<EpisodeTranscript> = {}): EpisodeTranscript =>
  ({ episodeKey: "k", attempt: 1, truncated: false, task: { task_id: "t", metadata: { target: 10, nums: [2, 5] } }, llm: [{ reply: { role: "assistant", content: reply } }], ...over }) as unknown as EpisodeTranscript;

describe("rescore", () => {
  it("compares old and new rewards per step; finds groups whose GRPO signal appears or disappears; skips what it cannot score", async () => {
    // the stricter reward: 1 for a correct answer, 0 for anything else (the old gave 0.1 to a well-formed wrong one)
    const strict = { name: "strict", score: (t: EpisodeTranscript, task: Parameters<typeof countdownScore>[1]) => (countdownScore(t, task).reward === 1 ? 1 : 0) };
    const replies: Record<string, EpisodeTranscript | null> = {
      "s/0/0#0": transcript("<answer>2*5</answer>"), "s/0/0#1": transcript("<answer>2+5</answer>"), // 1, 0.1 → 1, 0: signal stays
      "s/0/1#0": transcript("<answer>5-2</answer>"), "s/0/1#1": transcript("nothing"), // 0.1, 0 → 0, 0: signal disappears
      "s/0/2#0": transcript("x", { truncated: true }), "s/0/2#1": null,
      "s/0/3#0": transcript("<answer>2*5</answer>", { task: undefined }) as EpisodeTranscript,
    };
    const rows = [
      row("s/0/0#0", 1), row("s/0/0#1", 0.1), row("s/0/1#0", 0.1, { windowIndex: 1, globalStep: 2 }), row("s/0/1#1", 0, { windowIndex: 1, globalStep: 2 }),
      row("s/0/2#0", 1), row("s/0/2#1", 1), row("s/0/3#0", 1), row("s/0/9#0", null),
    ];
    const asked: string[] = [];
    const r = await rescore("run-a", strict, rows, async (a) => {
      asked.push(a.episodeKey);
      return replies[a.episodeKey] ?? null;
    });
    expect(asked.sort()).toEqual(Object.keys(replies).sort()); // the failed attempt is not read
    expect(r.steps).toEqual([
      { window: 1, episodes: 2, oldMean: 0.55, newMean: 0.5, changed: 1 },
      { window: 2, episodes: 2, oldMean: 0.05, newMean: 0, changed: 1 },
    ]);
    expect(r.changedShare).toBe(0.5);
    expect(r.signalAppears).toEqual([]);
    expect(r.signalDisappears).toEqual(["s/0/1"]);
    expect(r.skipped).toEqual({ truncated: 1, no_task: 1, missing: 1, score_failed: 0 });
    const text = renderRescore(r);
    expect(text).toMatch(/^re-scored run run-a with strict:\nstep\s+episodes\s+old mean\s+new mean\s+changed\n1\s+2\s+0\.550\s+0\.500\s+1\n/);
    expect(text).toContain("reward changed for 50.0% of the re-scored episodes");
    expect(text).toContain("GRPO signal appears in 0 groups, disappears from 1 (s/0/1)");
    expect(text).toContain("skipped: truncated 1, no_task 1, missing 1");
  });

  it("the latest attempt of an episode counts; a scorer that throws or returns no number is a skip with its reason", async () => {
    const rows = [row("s/0/0#0", 0, { attempt: 1 }), row("s/0/0#0", 1, { attempt: 2 }), row("s/0/0#1", 1)];
    const r = await rescore("r", { name: "bad", score: (t) => (t.attempt === 2 ? ({ reward: "x" } as never) : 0.5) }, rows, async (a) => transcript("", { attempt: a.attempt }));
    expect(r.rescored.map((e) => [e.episodeKey, e.attempt, e.oldReward, e.newReward])).toEqual([["s/0/0#1", 1, 1, 0.5]]);
    expect(r.skipped.score_failed).toBe(1);
    expect(r.skipNotes[0]).toMatch(/^s\/0\/0#0 attempt 2: score must return a finite number or \{ reward: number \}/);
  });
});
