// Tenant fixtures for issue 14: accounts A and B with two workspaces each, their keys, and one of every
// resource a route can name, made fresh in A's W1 with a snapshot of its rows to compare before and after.
import { env } from "cloudflare:test";
import { eq } from "drizzle-orm";
import { expect } from "vitest";
import { getDb, tables } from "../../src/db/client";
import { addByok, createAccount, createKey, type TestAccount } from "./accounts";
import { call } from "./http";
import { driveUntil, stateOf, step, submitOk } from "./videos";
import { addMember, addWorkspace, type TestWorkspace } from "./workspaces";

const { apiKeys, guardrails, guardrailKeyAssignments, guardrailMemberAssignments, byokCredentials } = tables;
const { presets, presetVersions, videoJobs, workspaces } = tables;

/** The caller key kinds, in the order of the matrix's columns. */
export const CALLERS = [
  "A-W1 management",
  "A-W1 regular",
  "A-W2 management",
  "A-W2 regular",
  "B management",
  "B regular",
] as const;
export type Caller = (typeof CALLERS)[number];

export interface Tenants {
  a: TestAccount;
  aW2: TestWorkspace;
  b: TestAccount;
  bW2: TestWorkspace;
  /** A third regular key of A's W1: it submits the video jobs, so no caller is the job's own key. */
  submitter: { key: string; hash: string };
  keyOf: Record<Caller, string>;
}

export async function createTenants(): Promise<Tenants> {
  const a = await createAccount({ creditsUsd: 100 });
  const aW2 = await addWorkspace(a);
  const b = await createAccount({ creditsUsd: 100 });
  const bW2 = await addWorkspace(b);
  const submitter = await createKey(a, { name: "video submitter" });
  const keyOf = {
    "A-W1 management": a.managementKey,
    "A-W1 regular": a.apiKey,
    "A-W2 management": aW2.managementKey,
    "A-W2 regular": aW2.apiKey,
    "B management": b.managementKey,
    "B regular": b.apiKey,
  };
  return { a, aW2, b, bW2, submitter, keyOf };
}

export type Kind =
  | "API key"
  | "guardrail"
  | "W1 default guardrail (unconfigured)"
  | "BYOK credential"
  | "preset"
  | "video job (in progress)"
  | "video job (completed)"
  | "W1 video webhook settings"
  | "W1 workspace";

export interface Target {
  /** The path parameter naming it ("" for the workspace's webhook settings, named by the caller's key). */
  ref: string;
  /** A value of the same shape that names nothing. */
  unknown: () => string;
  /** Text that a read of the target shows and a read of anything else does not. */
  token: string;
  /** Its D1 rows (and, for a video job, the status its Durable Object holds) now. */
  snapshot: () => Promise<unknown>;
  /** For assignment bodies: a key and a member of W1, assigned to the guardrail or not yet. */
  freeKeyHash?: string;
  assignedKeyHash?: string;
  freeUserId?: string;
  assignedUserId?: string;
}

export const db = () => getDb(env.DB);
export const uuid = () => crypto.randomUUID();
const hex64 = () =>
  [...crypto.getRandomValues(new Uint8Array(32))].map((x) => x.toString(16).padStart(2, "0")).join("");
const alnum20 = () => uuid().replaceAll("-", "").slice(0, 20);
const videoId = () => `gen-vid-${Math.floor(Date.now() / 1000)}-${alnum20()}`;

const video = {
  model: "sandbox/video-mini",
  prompt: "a lighthouse at dawn",
  duration: 2,
  resolution: "720p",
};
// Many polls before done: the job stays in progress however often its alarm fires during a cell.
const slowVideo = { ...video, provider: { options: { sandbox: { polls_before_done: 50 } } } };

export async function post(key: string, path: string, body: unknown, status = 200) {
  const res = await call(path, { method: "POST", key, body });
  expect(res.status, `${path}: ${await res.clone().text()}`).toBe(status);
  return (await res.json()) as { data: { id: string } };
}

export async function guardrailRows(id: string) {
  return {
    guardrail: await db().select().from(guardrails).where(eq(guardrails.id, id)),
    keys: await db()
      .select()
      .from(guardrailKeyAssignments)
      .where(eq(guardrailKeyAssignments.guardrailId, id)),
    members: await db()
      .select()
      .from(guardrailMemberAssignments)
      .where(eq(guardrailMemberAssignments.guardrailId, id)),
  };
}

async function videoState(id: string) {
  const [row] = await db().select().from(videoJobs).where(eq(videoJobs.id, id));
  const { updatedAt: _, ...rest } = row!;
  return { row: rest, status: (await stateOf(id)).status };
}

/** Makers of fresh targets in A's W1, one per kind. */
export function targetsOf(t: Tenants): Record<Kind, () => Promise<Target>> {
  const { a, submitter } = t;
  return {
    async "API key"() {
      const { hash } = await createKey(a, { name: `target ${uuid()}` });
      return {
        ref: hash,
        unknown: hex64,
        token: hash,
        snapshot: async () => ({
          key: await db().select().from(apiKeys).where(eq(apiKeys.hash, hash)),
          guardrails: await db()
            .select()
            .from(guardrailKeyAssignments)
            .where(eq(guardrailKeyAssignments.keyHash, hash)),
        }),
      };
    },
    async guardrail() {
      const { id } = (await post(a.managementKey, "/guardrails", { name: `target ${uuid()}` }, 201)).data;
      const [assignedKey, freeKey] = [await createKey(a), await createKey(a)];
      const [assignedUserId, freeUserId] = [await addMember(a), await addMember(a)];
      await post(a.managementKey, `/guardrails/${id}/assignments/keys`, { key_hashes: [assignedKey.hash] });
      await post(a.managementKey, `/guardrails/${id}/assignments/members`, {
        member_user_ids: [assignedUserId],
      });
      return {
        ref: id,
        unknown: uuid,
        token: id,
        snapshot: () => guardrailRows(id),
        freeKeyHash: freeKey.hash,
        assignedKeyHash: assignedKey.hash,
        freeUserId,
        assignedUserId,
      };
    },
    async "W1 default guardrail (unconfigured)"() {
      const id = a.defaultGuardrailId;
      // Back to unconfigured: a cell before may have materialised it.
      await db().delete(guardrails).where(eq(guardrails.id, id));
      return { ref: id, unknown: uuid, token: id, snapshot: () => guardrailRows(id) };
    },
    async "W1 workspace"() {
      const id = a.workspaceId;
      return {
        ref: id,
        unknown: uuid,
        token: id,
        snapshot: () => db().select().from(workspaces).where(eq(workspaces.id, id)),
      };
    },
    async "BYOK credential"() {
      const id = await addByok(a, "openai", `sk-matrix-${uuid()}`);
      return {
        ref: id,
        unknown: uuid,
        token: id,
        snapshot: () => db().select().from(byokCredentials).where(eq(byokCredentials.id, id)),
      };
    },
    async preset() {
      const slug = `tm-${uuid()}`;
      await post(a.managementKey, `/presets/${slug}/responses`, { model: "sandbox/embed-small" });
      const { id } = (
        await post(a.managementKey, `/presets/${slug}/responses`, { model: "sandbox/embed-small" })
      ).data;
      return {
        ref: slug,
        unknown: () => `tm-${uuid()}`,
        // The id, not the slug: another workspace's own preset of the same slug shows the slug too.
        token: id,
        snapshot: async () => ({
          preset: await db().select().from(presets).where(eq(presets.id, id)),
          versions: await db().select().from(presetVersions).where(eq(presetVersions.presetId, id)),
        }),
      };
    },
    async "video job (in progress)"() {
      const job = await submitOk(submitter.key, slowVideo);
      await step(job.id);
      expect((await stateOf(job.id)).status).toBe("in_progress");
      return { ref: job.id, unknown: videoId, token: job.id, snapshot: () => videoState(job.id) };
    },
    async "video job (completed)"() {
      const job = await submitOk(submitter.key, video);
      await driveUntil(submitter.key, job.id, "completed");
      return { ref: job.id, unknown: videoId, token: job.id, snapshot: () => videoState(job.id) };
    },
    async "W1 video webhook settings"() {
      const url = `https://hooks-${uuid()}.example.com/videos`;
      await db().update(workspaces).set({ videoWebhookUrl: url }).where(eq(workspaces.id, a.workspaceId));
      return {
        ref: "",
        unknown: () => "",
        token: url,
        snapshot: () => db().select().from(workspaces).where(eq(workspaces.id, a.workspaceId)),
      };
    },
  };
}
