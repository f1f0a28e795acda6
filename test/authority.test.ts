// Stale authority: a key revoked, re-scoped or limited elsewhere (another isolate, another ingress)
// stops being honoured by this isolate's cached copy within BLOCK_MS, because the ledger refuses
// admissions made on an auth record older than the account's authority version.
import { env } from "cloudflare:test";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { raiseAuthority } from "../src/billing/authority";
import { ledgerFor } from "../src/billing/ledger-client";
import { getDb, tables } from "../src/db/client";
import { BLOCK_GRACE_MS, BLOCK_MS } from "../src/ledger/blocks";
import { usdToMicros } from "../src/lib/money";
import { UNADMITTED_MAX_AGE_MS } from "../src/middleware/auth";
import { addByok, createAccount, createKey, defaultGuardrail, type TestAccount } from "./helpers/accounts";
import { call, errorOf } from "./helpers/http";

const db = () => getDb(env.DB);
const embed = (key: string, region: "global" | "europe" = "global") =>
  call("/embeddings", {
    method: "POST",
    key,
    region,
    body: { model: "sandbox/embed-small", input: "hello there" },
  });

/**
 * A change made through another isolate: D1 written and the ledger told, while this isolate's
 * cache still holds the old record (the route that made it would clear only its own isolate's).
 */
async function changedElsewhere(acct: TestAccount, change: () => Promise<unknown>) {
  await change();
  await raiseAuthority(env, acct.accountId);
}

/** Whatever this isolate admits against a block it holds stops when the block's time ends. */
const blockTimeEnds = () => new Promise((r) => setTimeout(r, BLOCK_MS + BLOCK_GRACE_MS + 50));

async function warm(key: string, times = 3) {
  for (let i = 0; i < times; i++) expect((await embed(key)).status).toBe(200);
}

describe("changes made elsewhere take effect here within BLOCK_MS", () => {
  it("a lowered key cap is enforced, not just reported", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const key = await createKey(acct, { limitUsd: 1 });
    await warm(key.key);
    await changedElsewhere(acct, () =>
      db()
        .update(tables.apiKeys)
        .set({ limitMicros: usdToMicros(0.000001) })
        .where(eq(tables.apiKeys.hash, key.hash)),
    );
    await blockTimeEnds();
    const res = await embed(key.key);
    expect(res.status).toBe(402);
    expect((await errorOf(res)).message).toMatch(/limit/i);
  });

  it("a deleted key stops authenticating inference requests", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const key = await createKey(acct);
    await warm(key.key);
    await changedElsewhere(acct, () => db().delete(tables.apiKeys).where(eq(tables.apiKeys.hash, key.hash)));
    await blockTimeEnds();
    const res = await embed(key.key);
    expect(res.status).toBe(401);
    expect((await errorOf(res)).message).toBe("Invalid API key");
  });

  it("a disabled key stops, and so does a region taken away from it", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const disabled = await createKey(acct);
    const regional = await createKey(acct);
    await warm(disabled.key);
    expect((await embed(regional.key, "europe")).status).toBe(200);
    await changedElsewhere(acct, () =>
      db().batch([
        db().update(tables.apiKeys).set({ disabled: true }).where(eq(tables.apiKeys.hash, disabled.hash)),
        db()
          .update(tables.apiKeys)
          .set({ allowedDataRegions: ["global"] })
          .where(eq(tables.apiKeys.hash, regional.hash)),
      ]),
    );
    await blockTimeEnds();
    const off = await embed(disabled.key);
    expect(off.status).toBe(401);
    expect((await errorOf(off)).message).toBe("This API key is disabled");
    const europe = await embed(regional.key, "europe");
    expect(europe.status).toBe(403);
    expect((await errorOf(europe)).metadata).toMatchObject({ region: "europe" });
    expect((await embed(regional.key, "global")).status).toBe(200);
  });

  it("a lowered guardrail budget refuses further spend", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    await db()
      .insert(tables.guardrails)
      .values({
        id: acct.defaultGuardrailId,
        accountId: acct.accountId,
        workspaceId: acct.workspaceId,
        name: "Team budget",
        limitMicros: usdToMicros(1),
      });
    await warm(acct.apiKey);
    await changedElsewhere(acct, () =>
      db()
        .update(tables.guardrails)
        .set({ limitMicros: 1 })
        .where(eq(tables.guardrails.id, acct.defaultGuardrailId)),
    );
    await blockTimeEnds();
    const res = await embed(acct.apiKey);
    expect(res.status).toBe(403);
    expect((await errorOf(res)).message).toMatch(/Team budget/);
  });

  it("an unchanged key keeps being served from the cache after another key's change", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const other = await createKey(acct);
    await warm(acct.apiKey);
    await changedElsewhere(acct, () =>
      db().update(tables.apiKeys).set({ disabled: true }).where(eq(tables.apiKeys.hash, other.hash)),
    );
    await blockTimeEnds();
    await warm(acct.apiKey, 2);
  });
});

describe("content filters added elsewhere apply to the first request admitted after the change", () => {
  const email = "write to bob@example.com";
  const routes: Array<[string, string, Record<string, unknown>]> = [
    ["embeddings", "/embeddings", { model: "sandbox/embed-small", input: email }],
    [
      "chat",
      "/chat/completions",
      { model: "sandbox/chat-echo", messages: [{ role: "user", content: email }] },
    ],
    ["speech", "/audio/speech", { model: "sandbox/tts-mini", input: email, voice: "alloy" }],
  ];
  for (const [name, path, body] of routes) {
    it(`${name}: the request is filtered under the re-read key, not the cached one`, async () => {
      const acct = await createAccount({ creditsUsd: 5 });
      await defaultGuardrail(acct, { name: "No filters yet" });
      await warm(acct.apiKey);
      await changedElsewhere(acct, () =>
        db()
          .update(tables.guardrails)
          .set({ contentFilterBuiltins: [{ slug: "email", action: "block", label: "no-mail" }] })
          .where(eq(tables.guardrails.id, acct.defaultGuardrailId)),
      );
      await blockTimeEnds();
      const res = await call(path, { method: "POST", key: acct.apiKey, body });
      expect(res.status).toBe(403);
      expect((await errorOf(res)).message).toMatch(/content filter 'no-mail'/);
    });
  }
});

describe("BYOK credentials changed elsewhere", () => {
  const chat = async (key: string) => {
    const res = await call("/chat/completions", {
      method: "POST",
      key,
      body: { model: "sandbox/chat-echo", messages: [{ role: "user", content: "hello" }] },
    });
    expect(res.status).toBe(200);
    return ((await res.json()) as { usage: { is_byok: boolean } }).usage.is_byok;
  };

  it("a deleted credential is not used past the next admission; a new one is used from it", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const id = await addByok(acct, "sandbox", "sk-sandbox-secret-5234567890", { isByokOnly: true });
    expect(await chat(acct.apiKey)).toBe(true);
    await changedElsewhere(acct, () =>
      db().delete(tables.byokCredentials).where(eq(tables.byokCredentials.id, id)),
    );
    await blockTimeEnds();
    expect(await chat(acct.apiKey)).toBe(false);
    await changedElsewhere(acct, () => addByok(acct, "sandbox", "sk-sandbox-secret-5234567891"));
    await blockTimeEnds();
    expect(await chat(acct.apiKey)).toBe(true);
  });

  it("POST, PATCH and DELETE /byok raise the account's authority", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const version = async () =>
      (await db().select().from(tables.accounts).where(eq(tables.accounts.id, acct.accountId)))[0]!
        .authorityVersion;
    const made = await call("/byok", {
      method: "POST",
      key: acct.managementKey,
      body: { provider: "sandbox", key: "sk-sandbox-secret-5234567890" },
    });
    expect(made.status).toBe(201);
    const { data } = (await made.json()) as { data: { id: string } };
    expect(await version()).toBe(1);
    const patched = await call(`/byok/${data.id}`, {
      method: "PATCH",
      key: acct.managementKey,
      body: { name: "renamed" },
    });
    expect(patched.status).toBe(200);
    expect(await version()).toBe(2);
    expect((await call(`/byok/${data.id}`, { method: "DELETE", key: acct.managementKey })).status).toBe(200);
    expect(await version()).toBe(3);
  });
});

describe("routes the ledger does not admit read the key again after a second", () => {
  it("a key disabled elsewhere stops reading its key, generations, presets and counting tokens", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const key = await createKey(acct);
    const reads = [
      () => call("/key", { key: key.key }),
      () => call("/presets", { key: key.key }),
      () => call("/generation?id=gen-0000000000000000000000", { key: key.key }),
      () =>
        call("/messages/count_tokens", {
          method: "POST",
          key: key.key,
          body: { model: "sandbox/chat-echo", messages: [{ role: "user", content: "hi" }] },
        }),
    ];
    const before = await Promise.all(reads.map((read) => read()));
    expect(before.map((r) => r.status)).toEqual([200, 200, 404, 200]);
    await changedElsewhere(acct, () =>
      db().update(tables.apiKeys).set({ disabled: true }).where(eq(tables.apiKeys.hash, key.hash)),
    );
    await new Promise((r) => setTimeout(r, UNADMITTED_MAX_AGE_MS + 50));
    for (const read of reads) {
      const res = await read();
      expect(res.status).toBe(401);
      // count_tokens answers in Anthropic's envelope, the others in the gateway's: both say why.
      expect(await res.text()).toContain("This API key is disabled");
    }
  });
});

describe("the management routes raise the authority", () => {
  it("PATCH /keys raises the account's version in D1 and in the ledger", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const res = await call(`/keys/${acct.apiKeyHash}`, {
      method: "PATCH",
      key: acct.managementKey,
      body: { limit: 0.5 },
    });
    expect(res.status).toBe(200);
    const [row] = await db().select().from(tables.accounts).where(eq(tables.accounts.id, acct.accountId));
    expect(row!.authorityVersion).toBe(1);
    expect(await ledgerFor(env, acct.accountId).raiseAuthority(0)).toBe(1);
  });

  it("a deleted management key is refused at once, cache or not", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    expect((await call("/keys", { key: acct.managementKey })).status).toBe(200);
    const hash = (
      await db().select().from(tables.apiKeys).where(eq(tables.apiKeys.accountId, acct.accountId))
    ).find((k) => k.isManagement)!.hash;
    await db().delete(tables.apiKeys).where(eq(tables.apiKeys.hash, hash));
    const res = await call("/keys", { key: acct.managementKey });
    expect(res.status).toBe(401);
  });
});
