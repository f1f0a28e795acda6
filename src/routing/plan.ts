// The route plan (pure): candidate endpoints of the model and its fallback models, filtered, ordered, with credentials.
import type { DataRegion } from "../../regions";
import {
  baseUrlFor,
  type CatalogEndpointEntry,
  type CatalogModelEntry,
  findModel,
  type LoadedCatalog,
  type Modality,
} from "../catalog/types";
import { ApiError } from "../lib/errors";
import { type ByokRecord, type Caller, chooseCredentials, type PlannedCredential } from "./byok";
import {
  capabilityRefusal,
  cheaper,
  type GuardrailScope,
  guardrailRefusal,
  preferenceRefusal,
  type Requirement,
  regionRefusal,
} from "./filters";
import { type ProviderPreferences, sortOf } from "./preferences";

export interface RouteRequest {
  modality: Modality;
  model: string;
  /** Fallback models, tried in order after the model's own endpoints. */
  models?: string[] | null;
  provider?: ProviderPreferences | null;
  /** Capability fit: parameters the request sets. */
  requirements?: Requirement[];
}

export interface RouteContext {
  catalog: LoadedCatalog;
  region: DataRegion;
  /** Each applicable guardrail on its own (see guardrailScopes in ./context). */
  guardrails: GuardrailScope[];
  byok: ByokRecord[];
  caller: Caller;
  /** Whether the platform holds a key for this endpoint's provider (or its adapter needs none). */
  platformAvailable(endpoint: CatalogEndpointEntry): boolean;
  /** Whether the endpoint had an outage just now (see inference/health.ts): default order tries it last. */
  isDown?(endpointId: string): boolean;
}

export interface PlannedAttempt {
  model: CatalogModelEntry;
  endpoint: CatalogEndpointEntry;
  baseUrl: string;
  credential: PlannedCredential;
}

export type RejectionKind =
  | "unknown_model"
  | "modality"
  | "guardrail"
  | "region"
  | "preference"
  | "capability"
  | "credential";

export interface Rejection {
  kind: RejectionKind;
  model: string;
  provider?: string;
  reason: string;
  guardrail?: { id: string; name: string };
}

export interface RoutePlan {
  /** The model as the request named it (a slug or a canonical slug). */
  model: string;
  /** The catalog slug of that model, as its rejections name it (absent when the catalog has none). */
  primarySlug?: string;
  attempts: PlannedAttempt[];
  rejections: Rejection[];
}

interface Survivor {
  model: CatalogModelEntry;
  endpoint: CatalogEndpointEntry;
  credentials: PlannedCredential[];
}

function filterEndpoint(
  req: RouteRequest,
  ctx: RouteContext,
  model: CatalogModelEntry,
  endpoint: CatalogEndpointEntry,
): Rejection | PlannedCredential[] {
  const base = { model: model.slug, provider: endpoint.provider };
  for (const g of ctx.guardrails) {
    const why = guardrailRefusal(g.policy, model, endpoint);
    if (why) return { ...base, kind: "guardrail", reason: why, guardrail: { id: g.id, name: g.name } };
  }
  const region = regionRefusal(endpoint, ctx.region);
  if (region) return { ...base, kind: "region", reason: region };
  const pref = preferenceRefusal(req.provider, endpoint);
  if (pref) return { ...base, kind: "preference", reason: pref };
  const cap = capabilityRefusal(
    req.requirements ?? [],
    req.provider?.require_parameters === true,
    endpoint,
    model,
  );
  if (cap) return { ...base, kind: "capability", reason: cap };
  const choice = chooseCredentials(endpoint, model, ctx.byok, ctx.caller, ctx.platformAvailable(endpoint));
  if (choice.refusal) return { ...base, kind: "credential", reason: choice.refusal };
  return choice.credentials;
}

/**
 * Orders one model's surviving endpoints: provider.order first, then catalog order (or price with sort).
 * With neither (default routing), endpoints with an outage just now go after the others, as OpenRouter's
 * load balancing avoids them; an explicit order or sort is the caller's and is kept as given.
 */
/** A survivor's place in `provider.order` (those it does not name after all it does). */
const orderRank = (order: string[]) => (s: Survivor) => {
  const i = order.indexOf(s.endpoint.provider);
  return i === -1 ? order.length : i;
};

function orderEndpoints(
  survivors: Survivor[],
  prefs: ProviderPreferences | null | undefined,
  isDown: ((endpointId: string) => boolean) | undefined,
): Survivor[] {
  const order = prefs?.order ?? [];
  const rank = orderRank(order);
  const { by } = sortOf(prefs);
  const avoid = order.length === 0 && !prefs?.sort && isDown ? isDown : undefined;
  const down = (s: Survivor) => (avoid?.(s.endpoint.id) ? 1 : 0);
  const indexed = survivors.map((s, i) => ({ s, i }));
  indexed.sort(
    (a, b) =>
      rank(a.s) - rank(b.s) ||
      (by === "price" ? cheaper(a.s.endpoint, b.s.endpoint) : 0) ||
      down(a.s) - down(b.s) ||
      a.i - b.i,
  );
  let ordered = indexed.map((x) => x.s);
  if (prefs?.allow_fallbacks === false) {
    ordered =
      order.length > 0 ? ordered.filter((s) => order.includes(s.endpoint.provider)) : ordered.slice(0, 1);
  }
  return ordered;
}

export function planRoute(req: RouteRequest, ctx: RouteContext): RoutePlan {
  // `allow_fallbacks` is about providers (see orderEndpoints); the fallback models stay, as on OpenRouter.
  const ids = [...new Set([req.model, ...(req.models ?? [])])];
  const rejections: Rejection[] = [];
  let perModel: Survivor[][] = [];

  for (const id of ids) {
    const model = findModel(ctx.catalog, id);
    if (!model) {
      rejections.push({ kind: "unknown_model", model: id, reason: `model '${id}' does not exist` });
      continue;
    }
    if (model.modality !== req.modality) {
      rejections.push({
        kind: "modality",
        model: model.slug,
        reason: `model '${model.slug}' is a ${model.modality} model, not a ${req.modality} model`,
      });
      continue;
    }
    const survivors: Survivor[] = [];
    for (const endpoint of model.endpoints) {
      const result = filterEndpoint(req, ctx, model, endpoint);
      if (Array.isArray(result)) survivors.push({ model, endpoint, credentials: result });
      else rejections.push(result);
    }
    const ordered = orderEndpoints(survivors, req.provider, ctx.isDown);
    if (ordered.length < survivors.length && req.provider?.order?.length) {
      // allow_fallbacks: false with an order keeps only the providers it names: the rest say why.
      for (const s of survivors) {
        if (ordered.includes(s)) continue;
        rejections.push({
          kind: "preference",
          model: model.slug,
          provider: s.endpoint.provider,
          reason: `provider '${s.endpoint.provider}' not in provider.order (allow_fallbacks: false)`,
        });
      }
    }
    perModel.push(ordered);
  }

  const { by, partition } = sortOf(req.provider);
  if (by === "price" && partition === "none") {
    // Across models, as within one: the providers `order` names first, then the cheaper.
    const rank = orderRank(req.provider?.order ?? []);
    const flat = perModel.flat().map((s, i) => ({ s, i }));
    flat.sort((a, b) => rank(a.s) - rank(b.s) || cheaper(a.s.endpoint, b.s.endpoint) || a.i - b.i);
    perModel = [flat.map((x) => x.s)];
  }

  const attempts = perModel.flat().flatMap((s) =>
    s.credentials.map((credential) => ({
      model: s.model,
      endpoint: s.endpoint,
      baseUrl: baseUrlFor(s.endpoint, ctx.region),
      credential,
    })),
  );
  const primarySlug = findModel(ctx.catalog, req.model)?.slug;
  return { model: req.model, ...(primarySlug ? { primarySlug } : {}), attempts, rejections };
}

const PRIORITY: RejectionKind[] = [
  "guardrail",
  "region",
  "modality",
  "capability",
  "preference",
  "credential",
];

/** Throws the 4xx/503 that explains why nothing survived; returns when the plan has an attempt. */
export function assertRoutable(plan: RoutePlan): void {
  if (plan.attempts.length > 0) return;
  const primary = plan.rejections.filter(
    (r) => r.model === plan.model || r.model === plan.primarySlug || !r.model,
  );
  const pool = primary.length > 0 ? primary : plan.rejections;
  const reasons = plan.rejections.slice(0, 20).map((r) => ({
    model: r.model,
    ...(r.provider ? { provider: r.provider } : {}),
    reason: r.reason,
    ...(r.guardrail ? { guardrail_id: r.guardrail.id } : {}),
  }));
  if (pool.every((r) => r.kind === "unknown_model")) {
    throw new ApiError(404, `Model '${plan.model}' not found`, { reasons });
  }
  const kind = PRIORITY.find((k) => pool.some((r) => r.kind === k)) ?? "credential";
  const first = pool.find((r) => r.kind === kind)!;
  const detail = [...new Set(pool.filter((r) => r.kind === kind).map((r) => r.reason))]
    .slice(0, 5)
    .join("; ");
  switch (kind) {
    case "guardrail": {
      const names = [
        ...new Set(pool.filter((r) => r.kind === "guardrail").map((r) => `'${r.guardrail!.name}'`)),
      ];
      throw new ApiError(
        403,
        `Model '${first.model}' is excluded by guardrail ${names.join(", ")}: ${detail}`,
        { reasons, guardrail_id: first.guardrail!.id },
      );
    }
    case "region":
      throw new ApiError(403, `No endpoint of '${first.model}' serves this data region: ${detail}`, {
        reasons,
      });
    case "modality":
      throw new ApiError(400, detail, { reasons });
    case "capability":
      throw new ApiError(400, `No endpoint of '${first.model}' supports this request: ${detail}`, {
        reasons,
      });
    case "preference":
      throw new ApiError(
        404,
        `No endpoint of '${first.model}' matches your provider preferences: ${detail}`,
        {
          reasons,
        },
      );
    default:
      throw new ApiError(503, `No provider is available for '${first.model}': ${detail}`, { reasons });
  }
}
