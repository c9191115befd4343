import { DurableObject } from "cloudflare:workers";
export interface Env { SCHEDULER: DurableObjectNamespace<RolloutScheduler>; EPISODES: Queue<{ n: number }>; AJET_DEFAULT_SWARM_URL: string }
export class RolloutScheduler extends DurableObject<Env> {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS ep (id INTEGER PRIMARY KEY, done INTEGER)");
  }
  async start(n: number) { for (let i = 0; i < n; i++) this.ctx.storage.sql.exec("INSERT OR REPLACE INTO ep VALUES (?, 0)", i); await this.ctx.storage.setAlarm(Date.now() + 10); }
  override async alarm() { const rows = this.ctx.storage.sql.exec<{ id: number }>("SELECT id FROM ep WHERE done=0").toArray(); await this.env.EPISODES.sendBatch(rows.map((r) => ({ body: { n: r.id } }))); }
  async record(n: number) { this.ctx.storage.sql.exec("UPDATE ep SET done=1 WHERE id=?", n); }
  async state() { return this.ctx.storage.sql.exec<{ c: number }>("SELECT count(*) as c FROM ep WHERE done=1").one().c; }
}
export default {
  async fetch(req: Request, env: Env) {
    const u = new URL(req.url); const stub = env.SCHEDULER.get(env.SCHEDULER.idFromName("x"));
    if (u.pathname === "/start") { await stub.start(20); return new Response("ok"); }
    return new Response(String(await stub.state()));
  },
  async queue(batch: MessageBatch<{ n: number }>, env: Env) {
    const stub = env.SCHEDULER.get(env.SCHEDULER.idFromName("x"));
    const t=Date.now(); await new Promise(r=>setTimeout(r,1000)); for (const m of batch.messages) { await stub.record(m.body.n); m.ack(); } console.log("consumed", batch.messages.length, t % 100000);
  },
} satisfies ExportedHandler<Env, { n: number }>;
