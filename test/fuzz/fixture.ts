// Two accounts with one of every resource, their secrets, and a cheap snapshot/restore of their D1 rows.
import { env, runInDurableObject } from "cloudflare:test";
import type { VideoJob } from "../../src/videos/job";
import { addByok, createAccount, createKey, type TestAccount } from "../helpers/accounts";
import { call } from "../helpers/http";
import { stubOf, submitOk } from "../helpers/videos";

export interface FuzzAccount extends TestAccount {
  /** A regular key that exists only to be named in paths and bodies. */
  victimKeyHash: string;
  disabledKey: string;
  expiredKey: string;
  keyHashes: string[];
  guardrailId: string;
  byokId: string;
  presetSlug: string;
  videoJobId: string;
  generationId: string;
  /** Raw API keys and BYOK keys: none may ever appear in a response. */
  secrets: string[];
  /** Every id of this account's resources (and `@preset/<slug>`): another account naming one is refused. */
  ids: string[];
}

export interface Fixture {
  a: FuzzAccount;
  b: FuzzAccount;
  secrets: string[];
}

async function ok(res: Response, what: string): Promise<Record<string, unknown>> {
  const text = await res.text();
  if (res.status >= 300) throw new Error(`fixture: ${what} answered ${res.status}: ${text}`);
  return JSON.parse(text) as Record<string, unknown>;
}

async function fuzzAccount(tag: string): Promise<FuzzAccount> {
  const acct = await createAccount({ creditsUsd: 100 });
  // Free sandbox models carry valid inference cases; their per-minute limit would turn them all into 429s.
  await env.DB.prepare("UPDATE accounts SET exempt_free_limits = 1 WHERE id = ?").bind(acct.accountId).run();
  const victim = await createKey(acct, { name: "victim" });
  const disabled = await createKey(acct, { name: "disabled", disabled: true });
  const expired = await createKey(acct, { name: "expired", expiresAt: "2001-01-01T00:00:00.000Z" });
  const management = acct.managementKey;
  const guardrail = await ok(
    await call("/guardrails", { method: "POST", key: management, body: { name: `fuzz ${tag}` } }),
    "POST /guardrails",
  );
  const guardrailId = (guardrail.data as { id: string }).id;
  await ok(
    await call(`/guardrails/${guardrailId}/assignments/keys`, {
      method: "POST",
      key: management,
      body: { key_hashes: [victim.hash] },
    }),
    "assign a key",
  );
  await ok(
    await call(`/guardrails/${guardrailId}/assignments/members`, {
      method: "POST",
      key: management,
      body: { member_user_ids: [acct.userId] },
    }),
    "assign a member",
  );
  const byokSecret = `sk-fuzzbyok-${crypto.randomUUID()}`;
  const byokId = await addByok(acct, "openai", byokSecret);
  const presetSlug = `fuzz-${tag}-${crypto.randomUUID().slice(0, 8)}`;
  await ok(
    await call(`/presets/${presetSlug}/responses`, {
      method: "POST",
      key: management,
      body: { model: "sandbox/embed-small", instructions: "fuzz" },
    }),
    "POST /presets/{slug}/responses",
  );
  const job = await submitOk(acct.apiKey, { model: "sandbox/video-mini:free", prompt: `fuzz ${tag}` });
  // Pending for the whole suite, so cancelling it can succeed and its state changes only by request.
  await runInDurableObject(stubOf(job.id), (_job, state) => state.storage.deleteAlarm());
  const embedding = await ok(
    await call("/embeddings", {
      method: "POST",
      key: acct.apiKey,
      body: { model: "sandbox/embed-small:free", input: tag },
    }),
    "POST /embeddings",
  );
  const managementHash = await sha256(management);
  const keyHashes = [managementHash, acct.apiKeyHash, victim.hash, disabled.hash, expired.hash];
  const generationId = embedding.id as string;
  return {
    ...acct,
    ids: [
      ...keyHashes,
      acct.userId,
      acct.workspaceId,
      guardrailId,
      acct.defaultGuardrailId,
      byokId,
      job.id,
      generationId,
      `@preset/${presetSlug}`,
    ],
    victimKeyHash: victim.hash,
    disabledKey: disabled.key,
    expiredKey: expired.key,
    keyHashes,
    guardrailId,
    byokId,
    presetSlug,
    videoJobId: job.id,
    generationId,
    secrets: [management, acct.apiKey, victim.key, disabled.key, expired.key, byokSecret],
  };
}

/**
 * Ends a job a fuzz case created, now: cancelled (its reservation released) and with no alarm left,
 * so no background step changes rows or the ledger while a later case's state is being compared.
 */
export async function stopJob(id: string): Promise<void> {
  await runInDurableObject(stubOf(id), async (job: VideoJob, state) => {
    await job.cancel();
    await state.storage.deleteAlarm();
  });
}

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

export async function createFixture(): Promise<Fixture> {
  const a = await fuzzAccount("a");
  const b = await fuzzAccount("b");
  const masterKeys = Object.values(JSON.parse(env.BYOK_MASTER_KEYS ?? "{}") as Record<string, string>);
  return { a, b, secrets: [...a.secrets, ...b.secrets, ...masterKeys] };
}

const IN_ACCOUNTS = "IN (?1, ?2)";
const OF_WORKSPACES = `IN (SELECT id FROM workspaces WHERE account_id ${IN_ACCOUNTS})`;

/**
 * The rows of both accounts, table by table. Children come before their parents, so deleting in
 * this order still finds children through their parents' rows.
 */
const SCOPES: Array<{ table: string; where: string; restore: boolean; select?: string }> = [
  {
    table: "guardrail_key_assignments",
    where: `guardrail_id IN (SELECT id FROM guardrails WHERE account_id ${IN_ACCOUNTS}) OR key_hash IN (SELECT hash FROM api_keys WHERE account_id ${IN_ACCOUNTS})`,
    restore: true,
  },
  { table: "guardrail_member_assignments", where: `workspace_id ${OF_WORKSPACES}`, restore: true },
  {
    table: "preset_versions",
    where: `preset_id IN (SELECT id FROM presets WHERE account_id ${IN_ACCOUNTS})`,
    restore: true,
  },
  { table: "members", where: `workspace_id ${OF_WORKSPACES}`, restore: true },
  {
    table: "webhook_deliveries",
    where: `job_id IN (SELECT id FROM video_jobs WHERE account_id ${IN_ACCOUNTS})`,
    restore: false,
  },
  // Raised by management changes and pushed to the ledger: restoring it would fail every admission.
  { table: "accounts", where: `id ${IN_ACCOUNTS}`, restore: false },
  ...["credit_grants", "workspaces", "users", "api_keys", "guardrails", "byok_credentials", "presets"].map(
    (table) => ({ table, where: `account_id ${IN_ACCOUNTS}`, restore: true }),
  ),
  // Written by inference, which fuzzing may do successfully; never restored. Generation records are
  // never updated and grow with every valid case, so only their count and last row are compared.
  {
    table: "generations",
    where: `account_id ${IN_ACCOUNTS}`,
    restore: false,
    select: "count(*) AS count, max(rowid) AS last",
  },
  { table: "video_jobs", where: `account_id ${IN_ACCOUNTS}`, restore: false },
];

export type Rows = Record<string, Array<Record<string, unknown>>>;

/** Both accounts' rows in every table, read in one D1 batch. */
export async function readRows(fx: Fixture): Promise<Rows> {
  const ids = [fx.a.accountId, fx.b.accountId];
  const results = await env.DB.batch(
    SCOPES.map((s) =>
      env.DB.prepare(`SELECT ${s.select ?? "*"} FROM ${s.table} WHERE ${s.where} ORDER BY rowid`).bind(
        ...ids,
      ),
    ),
  );
  return Object.fromEntries(
    SCOPES.map((s, i) => [s.table, results[i]!.results as Array<Record<string, unknown>>]),
  );
}

/** Puts the restorable tables back to `baseline` (after a mutation succeeded), in one D1 batch. */
export async function restoreRows(fx: Fixture, baseline: Rows): Promise<void> {
  const ids = [fx.a.accountId, fx.b.accountId];
  const restorable = SCOPES.filter((s) => s.restore);
  const deletes = restorable.map((s) =>
    env.DB.prepare(`DELETE FROM ${s.table} WHERE ${s.where}`).bind(...ids),
  );
  const inserts = [...restorable].reverse().flatMap((s) =>
    baseline[s.table]!.map((row) => {
      const cols = Object.keys(row);
      return env.DB.prepare(
        `INSERT INTO ${s.table} (${cols.join(", ")}) VALUES (${cols.map(() => "?").join(", ")})`,
      ).bind(...cols.map((c) => row[c]));
    }),
  );
  await env.DB.batch([...deletes, ...inserts]);
}

/** The first table whose rows differ, with the rows only one side has, or null when nothing changed. */
export function rowsDiff(before: Rows, after: Rows): string | null {
  for (const table of Object.keys(before)) {
    const was = new Set(before[table]!.map((r) => JSON.stringify(r)));
    const now = new Set(after[table]!.map((r) => JSON.stringify(r)));
    const gone = [...was].filter((r) => !now.has(r));
    const added = [...now].filter((r) => !was.has(r));
    if (gone.length || added.length) {
      return `${table} changed:\n  before ${gone.join("\n    ").slice(0, 1500)}\n  after  ${added.join("\n    ").slice(0, 1500)}`;
    }
  }
  return null;
}
