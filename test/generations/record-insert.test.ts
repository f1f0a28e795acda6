// The record inserts on the hot path are prepared statements, not Drizzle's builder (one row, or many
// rows as one JSON parameter): they must store exactly what Drizzle's insert of the same record stores
// (JSON, booleans, defaults, the creation time).
import { env } from "cloudflare:test";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { getDb, tables } from "../../src/db/client";
import { type GenerationRecord, insertRecord, insertRecords } from "../../src/generations/insert";

const full = (id: string): GenerationRecord => ({
  id,
  accountId: "acct-1",
  workspaceId: "ws-1",
  keyHash: "h".repeat(64),
  modality: "chat",
  apiType: "messages",
  model: "sandbox/chat",
  provider: "sandbox",
  endpointId: "sandbox/chat@sandbox",
  isByok: true,
  status: "cancelled",
  usage: { prompt_tokens: 12, completion_tokens: 3, estimated: 1 },
  costMicros: 417,
  region: "europe",
  metadata: { trace_id: "t-1", nested: { deep: [1, "two", null] } },
  user: "user-7",
  flags: ["flag:pii", "redact:email"],
  attempts: [
    { provider: "a", outcome: "error", status: 503 },
    { provider: "b", outcome: "ok" },
  ],
  error: "client disconnected",
  blockId: "blk-9",
});

const minimal = (id: string): GenerationRecord => ({
  id,
  accountId: "acct-1",
  workspaceId: "ws-1",
  keyHash: "k".repeat(64),
  modality: "embeddings",
  model: "sandbox/embed-small",
  status: "completed",
  usage: {},
  region: "global",
});

async function rowOf(id: string) {
  const [row] = await getDb(env.DB).select().from(tables.generations).where(eq(tables.generations.id, id));
  return row!;
}

describe("insertRecord", () => {
  for (const [name, make] of [
    ["every column set", full],
    ["only the required columns", minimal],
  ] as const) {
    it(`stores what Drizzle's insert stores: ${name}`, async () => {
      await getDb(env.DB)
        .insert(tables.generations)
        .values(make(`drizzle-${name}`));
      await insertRecord(env.DB, make(`prepared-${name}`)).run();
      const { id: _a, createdAt: drizzleAt, ...viaDrizzle } = await rowOf(`drizzle-${name}`);
      const { id: _b, createdAt: preparedAt, ...viaPrepared } = await rowOf(`prepared-${name}`);
      expect(viaPrepared).toEqual(viaDrizzle);
      // Defaults applied: not BYOK, nothing charged, and a creation time as the SQL default writes it.
      if (name === "only the required columns") {
        expect(viaPrepared).toMatchObject({ isByok: false, costMicros: 0, apiType: null, flags: null });
      }
      expect(preparedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(Math.abs(Date.parse(preparedAt) - Date.parse(drizzleAt))).toBeLessThan(60_000);
    });
  }

  it("keeps a given creation time", async () => {
    await insertRecord(env.DB, { ...minimal("dated"), createdAt: "2026-01-02T03:04:05.678Z" }).run();
    expect((await rowOf("dated")).createdAt).toBe("2026-01-02T03:04:05.678Z");
  });

  it("keeps the first record of a generation id: a second write changes nothing", async () => {
    await insertRecord(env.DB, minimal("twice")).run();
    const again = await insertRecord(env.DB, { ...minimal("twice"), costMicros: 999 }).run();
    expect(again.meta.changes).toBe(0);
    expect((await rowOf("twice")).costMicros).toBe(0);
  });

  it("inserts many records in one statement, each stored as Drizzle stores it", async () => {
    const records = [full("many-1"), minimal("many-2"), { ...full("many-3"), isByok: false, flags: null }];
    const statements = insertRecords(env.DB, records);
    expect(statements).toHaveLength(1);
    await env.DB.batch(statements);
    await getDb(env.DB)
      .insert(tables.generations)
      .values(records.map((r) => ({ ...r, id: `drizzle-${r.id}` })));
    for (const r of records) {
      const { id: _a, createdAt: _c, ...viaDrizzle } = await rowOf(`drizzle-${r.id}`);
      const { id: _b, createdAt, ...viaJson } = await rowOf(r.id);
      expect(viaJson).toEqual(viaDrizzle);
      expect(createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    }
  });

  it("splits rows over several statements past the size bound, and every record lands", async () => {
    const big = { blob: "x".repeat(200_000) };
    const records = Array.from({ length: 6 }, (_, i) => ({ ...minimal(`big-${i}`), metadata: big }));
    const statements = insertRecords(env.DB, records);
    expect(statements.length).toBeGreaterThan(1);
    await env.DB.batch(statements);
    for (const r of records) expect((await rowOf(r.id)).metadata).toEqual(big);
  });

  it("writes the new records of a batch holding an id already stored, and leaves the stored one as it was", async () => {
    await insertRecord(env.DB, minimal("dup-1")).run();
    const [result] = await env.DB.batch(
      insertRecords(env.DB, [minimal("dup-0"), { ...minimal("dup-1"), costMicros: 999 }]),
    );
    expect(result!.meta.changes).toBe(1);
    expect((await rowOf("dup-0")).id).toBe("dup-0");
    expect((await rowOf("dup-1")).costMicros).toBe(0);
  });
});
