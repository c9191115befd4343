/**
 * @module edge/run/usage — a run object's count of its platform use (issue 22 §2; priced by edge/run/board/cost):
 * requests to the object (its RPC surface counts them), episode invocations (their `started` heartbeats), the rows
 * its storage writes (a metered view of `ctx.storage`: `cursor.rowsWritten`, KV puts and deletes, `setAlarm`), the
 * episode messages it sends and their queue operations (a counting dispatcher), and what the end reports carry
 * (transcripts written, sandbox seconds, invocation time). Counted in memory and written as one row at most once
 * per alarm tick, so counting costs one row written per tick, not one per event; a reset loses at most the counts
 * since the last tick.
 */
import type { EpisodeMessage, EpisodeSignals } from "../../port/index.ts";
import { emptyUsage, queueOpsOf, type RunUsage } from "./board/cost.ts";
import type { Dispatcher } from "./dispatcher.ts";

const SCHEMA = `CREATE TABLE IF NOT EXISTS usage (id INTEGER PRIMARY KEY CHECK (id = 1), row TEXT NOT NULL)`;

/** The counters of one run object, kept in its SQLite storage. */
export class UsageCounter {
  #usage: RunUsage;
  #dirty = false;

  /** @param sql the object's storage, unmetered (the counter's own write is counted by hand) */
  constructor(private readonly sql: SqlStorage) {
    sql.exec(SCHEMA);
    const row = sql.exec<{ row: string }>(`SELECT row FROM usage WHERE id = 1`).toArray()[0];
    this.#usage = { ...emptyUsage(), ...(row ? (JSON.parse(row.row) as Partial<RunUsage>) : {}) };
  }

  /** The counts so far. */
  get usage(): RunUsage {
    return { ...this.#usage };
  }

  /** Adds `n` to one counter. */
  add(field: Exclude<keyof RunUsage, "storedBytes">, n = 1): void {
    if (!Number.isFinite(n) || n === 0) return;
    this.#usage[field] += n;
    this.#dirty = true;
  }

  /** What an end report's signals add: its transcript write, sandbox seconds and invocation time. */
  reported(signals: EpisodeSignals | undefined): void {
    if (!signals) return;
    if (signals.transcriptBytes > 0) {
      this.add("r2Puts");
      this.add("r2Bytes", signals.transcriptBytes);
    }
    this.add("sandboxSeconds", signals.sandboxSeconds);
    this.add("workerWallMs", signals.wallMs);
  }

  /** Writes the counters (one row) when they changed since the last write; the database size is read then. */
  flush(): void {
    if (!this.#dirty) return;
    this.#dirty = false;
    this.#usage.rowsWritten++;
    this.#usage.storedBytes = this.sql.databaseSize;
    this.sql.exec(`INSERT OR REPLACE INTO usage (id, row) VALUES (1, ?)`, JSON.stringify(this.#usage));
  }
}

/** A view of `sql` whose writes are counted: every cursor's `rowsWritten` (complete once `exec` returns for a write). */
export function meteredSql(sql: SqlStorage, counter: UsageCounter): SqlStorage {
  return new Proxy(sql, {
    get(target, prop) {
      if (prop === "exec") {
        return (query: string, ...bindings: SqlStorageValue[]) => {
          const cursor = target.exec(query, ...bindings);
          counter.add("rowsWritten", cursor.rowsWritten);
          return cursor;
        };
      }
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/**
 * A view of a Durable Object's storage whose writes are counted: SQL (see {@link meteredSql}), KV `put`/`delete`
 * (a row each; a multi-key call one per key) and `setAlarm` (billed as a row written).
 */
export function meteredStorage(storage: DurableObjectStorage, counter: UsageCounter): DurableObjectStorage {
  const sql = meteredSql(storage.sql, counter);
  const kv = new Proxy(storage.kv, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown;
      if (typeof value !== "function") return value;
      const fn = (value as (...a: unknown[]) => unknown).bind(target);
      if (prop !== "put" && prop !== "delete") return fn;
      return (...args: unknown[]) => {
        counter.add("rowsWritten", Array.isArray(args[0]) ? args[0].length : 1);
        return fn(...args);
      };
    },
  });
  return new Proxy(storage, {
    get(target, prop) {
      if (prop === "sql") return sql;
      if (prop === "kv") return kv;
      const value = Reflect.get(target, prop, target) as unknown;
      if (typeof value !== "function") return value;
      const fn = (value as (...a: unknown[]) => unknown).bind(target);
      if (prop !== "setAlarm") return fn;
      return (...args: unknown[]) => {
        counter.add("rowsWritten");
        return fn(...args);
      };
    },
  });
}

/**
 * A dispatcher that counts the episode messages it hands over and their queue operations (priced as the queue would;
 * a message's size is its JSON's length in characters, the bytes of an ASCII body).
 */
export function countingDispatcher(inner: Dispatcher, counter: UsageCounter): Dispatcher {
  return {
    name: inner.name,
    async dispatch(messages: readonly EpisodeMessage[]) {
      await inner.dispatch(messages);
      counter.add("queueMessages", messages.length);
      counter.add("queueOps", messages.reduce((n, m) => n + queueOpsOf(JSON.stringify(m).length), 0));
    },
  };
}
