// Reads of generation records: what the ledger needs for reservations it reclaims, and GET /generation.
import { and, eq, inArray, sql } from "drizzle-orm";
import type { Modality } from "../catalog/types";
import type { RecordedCosts } from "../ledger/types";
import { microsToUsd } from "../lib/money";
import { API_TYPES, type Generation } from "../schemas/generations";
import { getDb, tables } from "./client";

/**
 * What the generation records say was spent under each of these reservation ids: a generation's own
 * record, or every record admitted against a block (by bucket). Ids with no record are absent.
 */
export async function recordedCosts(d1: D1Database, ids: string[]): Promise<RecordedCosts> {
  const out: RecordedCosts = new Map();
  if (ids.length === 0) return out;
  const g = tables.generations;
  const add = (id: string, byok: boolean, micros: number) => {
    const spent = out.get(id) ?? { credits: 0, byok: 0 };
    if (byok) spent.byok += micros;
    else spent.credits += micros;
    out.set(id, spent);
  };
  const db = getDb(d1);
  // D1 binds at most 100 parameters a statement.
  for (let i = 0; i < ids.length; i += 90) {
    const chunk = ids.slice(i, i + 90);
    const [own, blocks] = await db.batch([
      db.select({ id: g.id, byok: g.isByok, cost: g.costMicros }).from(g).where(inArray(g.id, chunk)),
      db
        .select({ id: g.blockId, byok: g.isByok, cost: sql<number>`sum(${g.costMicros})` })
        .from(g)
        .where(inArray(g.blockId, chunk))
        .groupBy(g.blockId, g.isByok),
    ]);
    for (const r of own) add(r.id, r.byok, r.cost);
    for (const r of blocks) if (r.id) add(r.id, r.byok, Number(r.cost));
  }
  return out;
}

// ---- GET /generation ----

export type GenerationRow = typeof tables.generations.$inferSelect;

/** An account's generation record, or null: another account's id reads as unknown. */
export function findGeneration(d1: D1Database, accountId: string, id: string) {
  const g = tables.generations;
  return getDb(d1)
    .select()
    .from(g)
    .where(and(eq(g.id, id), eq(g.accountId, accountId)))
    .get();
}

/** The attempt log of a record, as `inference/attempts.ts` writes it. */
interface AttemptEntry {
  endpoint_id?: string;
  provider?: string;
  model?: string;
  byok?: boolean;
  outcome?: string;
  status?: number;
  duration_ms?: number;
}

/** The scheme and host of the app's referer (`https://app.example`), or "" without a web one. */
function originOf(referer: string | null): string {
  if (!referer) return "";
  try {
    const url = new URL(referer);
    return url.protocol === "http:" || url.protocol === "https:" ? url.origin : "";
  } catch {
    return "";
  }
}

/**
 * A record as `GET /generation` answers it. `permaslug` gives a model's permanent slug (its canonical
 * slug in the catalog, as `GET /activity` names it); a model since dropped keeps its slug.
 */
export function generationToWire(
  row: GenerationRow,
  permaslug: (slug: string) => string = (s) => s,
): Generation {
  const u = row.usage ?? {};
  const n = (k: string) => (typeof u[k] === "number" ? u[k] : null);
  const attempts = (row.attempts ?? []) as AttemptEntry[];
  // Token counts are the provider's own (native) unless the gateway counted them (`estimated`).
  const prompt = n("prompt_tokens");
  const counted = prompt !== null;
  const completion = n("completion_tokens") ?? (counted ? 0 : null);
  const native = (v: number | null) => (u.estimated ? null : v);
  const total = microsToUsd(row.costMicros);
  return {
    id: row.id,
    model: row.model,
    provider_name: row.provider,
    is_byok: row.isByok,
    streamed: row.streamed,
    cancelled: row.status === "cancelled",
    // A failure is "error" whatever the provider said last.
    finish_reason: row.status === "failed" ? "error" : row.finishReason,
    native_finish_reason: row.nativeFinishReason,
    // Time waiting on providers until the one that served answered (its first byte), failed attempts included.
    latency: attempts.length ? attempts.reduce((ms, a) => ms + (a.duration_ms ?? 0), 0) : null,
    generation_time: row.generationMs,
    moderation_latency: null,
    tokens_prompt: prompt,
    tokens_completion: completion,
    native_tokens_prompt: native(prompt),
    native_tokens_completion: native(completion),
    native_tokens_completion_images: null,
    native_tokens_reasoning: native(n("reasoning_tokens") ?? (counted ? 0 : null)),
    native_tokens_cached: native(n("cached_tokens") ?? (counted ? 0 : null)),
    // Counted on chat records (responses and messages included); null where nothing counted them.
    num_media_prompt: n("media_prompt"),
    num_media_completion: null,
    num_input_audio_prompt: n("input_audio_prompt"),
    num_search_results: null,
    num_fetches: null,
    total_cost: total,
    // BYOK spend is the key owner's, settled outside credits (as the inference answer's cost_details say).
    usage: row.isByok ? 0 : total,
    upstream_inference_cost: row.isByok ? total : null,
    cache_discount: null,
    provider_responses: attempts.map((a) => ({
      ...(a.endpoint_id ? { endpoint_id: a.endpoint_id } : {}),
      ...(a.provider ? { provider_name: a.provider } : {}),
      ...(a.model ? { model_permaslug: permaslug(a.model) } : {}),
      ...(a.byok !== undefined ? { is_byok: a.byok } : {}),
      ...(a.duration_ms !== undefined ? { latency: a.duration_ms } : {}),
      // A served attempt's log holds no status: the provider answered 200.
      status: a.status ?? (a.outcome === "ok" ? 200 : null),
    })),
    created_at: row.createdAt,
    data_region: row.region as Generation["data_region"],
    api_type: (row.apiType as Generation["api_type"]) ?? API_TYPES[row.modality as Modality] ?? null,
    workspace_id: row.workspaceId,
    external_user: row.user,
    session_id: row.sessionId,
    http_referer: row.httpReferer,
    user_agent: row.userAgent,
    upstream_id: row.upstreamId,
    preset_id: row.presetId,
    request_id: row.requestId,
    origin: originOf(row.httpReferer),
    // Not recorded by this gateway.
    app_id: null,
    router: null,
    service_tier: null,
    web_search_engine: null,
  };
}
