// Queries on presets and preset versions: atomic version claiming, reads, and `@preset/<slug>` resolution.
import { and, count, desc, eq, sql } from "drizzle-orm";
import type { ChatPresetConfig } from "../schemas/chat-preset";
import type { Preset, PresetVersion, PresetWithVersion } from "../schemas/presets";
import type { PresetConfig } from "../schemas/responses-request";
import { type Db, tables } from "./client";

const { presets, presetVersions } = tables;

export type PresetRow = typeof presets.$inferSelect;
export type PresetVersionRow = typeof presetVersions.$inferSelect;

export function presetToWire(row: PresetRow): Preset {
  return {
    id: row.id,
    name: row.name,
    slug: row.slug,
    description: row.description,
    status: "active",
    status_updated_at: row.statusUpdatedAt,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
    creator_user_id: row.creatorUserId,
    workspace_id: row.workspaceId,
    designated_version_id: row.designatedVersionId,
  };
}

export function presetVersionToWire(row: PresetVersionRow): PresetVersion {
  return {
    id: row.id,
    preset_id: row.presetId,
    version: row.version,
    config: row.config,
    system_prompt: row.systemPrompt,
    creator_id: row.creatorId,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
  };
}

export interface NewPresetVersion {
  accountId: string;
  workspaceId: string;
  slug: string;
  creatorId: string;
  /** From a responses body or a chat body: each stores its own field names. */
  config: PresetConfig | ChatPresetConfig;
  systemPrompt: string | null;
  now: string;
}

/**
 * Creates the preset (version 1) or appends the next version, and designates it. One D1 batch is one
 * transaction: claiming `latest_version + 1`, inserting the version under that number and designating
 * it cannot interleave with another request, so parallel posts get consecutive versions, no gaps.
 */
export async function createPresetVersion(db: Db, v: NewPresetVersion): Promise<PresetWithVersion> {
  const versionId = crypto.randomUUID();
  const where = and(eq(presets.workspaceId, v.workspaceId), eq(presets.slug, v.slug));
  const [, , , [preset], [version]] = await db.batch([
    db
      .insert(presets)
      .values({
        id: crypto.randomUUID(),
        accountId: v.accountId,
        workspaceId: v.workspaceId,
        slug: v.slug,
        name: v.slug,
        creatorUserId: v.creatorId,
        latestVersion: 1,
        createdAt: v.now,
        updatedAt: v.now,
      })
      .onConflictDoUpdate({
        target: [presets.workspaceId, presets.slug],
        set: { latestVersion: sql`${presets.latestVersion} + 1`, updatedAt: v.now },
      }),
    db.insert(presetVersions).select(
      db
        .select({
          id: sql<string>`${versionId}`.as("id"),
          presetId: presets.id,
          version: presets.latestVersion,
          config: sql<string>`${JSON.stringify(v.config)}`.as("config"),
          systemPrompt: sql<string | null>`${v.systemPrompt}`.as("system_prompt"),
          creatorId: sql<string>`${v.creatorId}`.as("creator_id"),
          createdAt: sql<string>`${v.now}`.as("created_at"),
          updatedAt: sql<string>`${v.now}`.as("updated_at"),
        })
        .from(presets)
        .where(where),
    ),
    db.update(presets).set({ designatedVersionId: versionId }).where(where),
    db.select().from(presets).where(where),
    db.select().from(presetVersions).where(eq(presetVersions.id, versionId)),
  ]);
  if (!preset || !version) throw new Error("preset version was not written");
  forgetResolved(v.workspaceId, v.slug);
  return { ...presetToWire(preset), designated_version: presetVersionToWire(version) };
}

export function findPreset(db: Db, workspaceId: string, slug: string) {
  return db
    .select()
    .from(presets)
    .where(and(eq(presets.workspaceId, workspaceId), eq(presets.slug, slug)))
    .get();
}

export async function findPresetWithVersion(
  db: Db,
  workspaceId: string,
  slug: string,
): Promise<PresetWithVersion | null> {
  const row = await db
    .select({ preset: presets, version: presetVersions })
    .from(presets)
    .leftJoin(presetVersions, eq(presetVersions.id, presets.designatedVersionId))
    .where(and(eq(presets.workspaceId, workspaceId), eq(presets.slug, slug)))
    .get();
  if (!row) return null;
  return {
    ...presetToWire(row.preset),
    designated_version: row.version ? presetVersionToWire(row.version) : null,
  };
}

export async function listPresets(db: Db, workspaceId: string, page: { offset: number; limit: number }) {
  const where = eq(presets.workspaceId, workspaceId);
  const [rows, [total]] = await db.batch([
    db
      .select()
      .from(presets)
      .where(where)
      .orderBy(desc(presets.createdAt), presets.id)
      .limit(page.limit)
      .offset(page.offset),
    db.select({ n: count() }).from(presets).where(where),
  ]);
  return { data: rows.map(presetToWire), total_count: total?.n ?? 0 };
}

export async function listPresetVersions(db: Db, presetId: string, page: { offset: number; limit: number }) {
  const where = eq(presetVersions.presetId, presetId);
  const [rows, [total]] = await db.batch([
    db
      .select()
      .from(presetVersions)
      .where(where)
      .orderBy(desc(presetVersions.version))
      .limit(page.limit)
      .offset(page.offset),
    db.select({ n: count() }).from(presetVersions).where(where),
  ]);
  return { data: rows.map(presetVersionToWire), total_count: total?.n ?? 0 };
}

export function findPresetVersion(db: Db, presetId: string, version: number) {
  return db
    .select()
    .from(presetVersions)
    .where(and(eq(presetVersions.presetId, presetId), eq(presetVersions.version, version)))
    .get();
}

// ---- `@preset/<slug>` in inference ----

export const PRESET_MODEL_PREFIX = "@preset/";

/**
 * The preset a chat `model` names, `@preset/<slug>` or `<model>@preset/<slug>`, with the model named
 * before it (null in the first form); null when it names no preset.
 */
export function presetRefOf(model: string | undefined | null): { slug: string; model: string | null } | null {
  const at = model?.indexOf(PRESET_MODEL_PREFIX) ?? -1;
  if (!model || at < 0) return null;
  const slug = model.slice(at + PRESET_MODEL_PREFIX.length);
  return slug.length > 0 ? { slug, model: at > 0 ? model.slice(0, at) : null } : null;
}

export interface ResolvedPreset {
  presetId: string;
  slug: string;
  version: number;
  config: PresetConfig;
  systemPrompt: string | null;
}

/** Resolved presets stay in the isolate this long; a new version posted through this isolate replaces it at once. */
export const PRESET_CACHE_TTL_MS = 30_000;
const resolvedCache = new Map<string, { value: ResolvedPreset | null; expires: number }>();
const cacheKey = (workspaceId: string, slug: string) => `${workspaceId}\u0000${slug}`;

function forgetResolved(workspaceId: string, slug: string) {
  resolvedCache.delete(cacheKey(workspaceId, slug));
}

/** The designated version's config of a workspace's preset, or null when the workspace has no such preset. */
export async function resolvePreset(
  db: Db,
  workspaceId: string,
  slug: string,
): Promise<ResolvedPreset | null> {
  const key = cacheKey(workspaceId, slug);
  const hit = resolvedCache.get(key);
  const now = Date.now();
  if (hit && hit.expires > now) return hit.value;
  const row = await db
    .select({ presetId: presets.id, slug: presets.slug, version: presetVersions })
    .from(presets)
    .innerJoin(presetVersions, eq(presetVersions.id, presets.designatedVersionId))
    .where(and(eq(presets.workspaceId, workspaceId), eq(presets.slug, slug), eq(presets.status, "active")))
    .get();
  const value: ResolvedPreset | null = row
    ? {
        presetId: row.presetId,
        slug: row.slug,
        version: row.version.version,
        config: row.version.config as PresetConfig,
        systemPrompt: row.version.systemPrompt,
      }
    : null;
  if (resolvedCache.size >= 10_000) resolvedCache.clear();
  resolvedCache.set(key, { value, expires: now + PRESET_CACHE_TTL_MS });
  return value;
}

/**
 * Applies a preset under a request: fields the request sets win, the preset fills the rest, and the
 * preset's system prompt is used when the request has no `instructions`. `model` is the preset's.
 */
export function applyPreset<T extends Record<string, unknown>>(preset: ResolvedPreset, request: T): T {
  const merged: Record<string, unknown> = { ...preset.config };
  for (const [field, value] of Object.entries(request)) {
    if (value !== undefined && field !== "model") merged[field] = value;
  }
  if (merged.model === undefined) delete merged.model;
  if (request.instructions == null && preset.systemPrompt != null) merged.instructions = preset.systemPrompt;
  return merged as T;
}
