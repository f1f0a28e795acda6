// `model: "@preset/<slug>"` on inference routes: the preset supplies the routing fields the request leaves unset.
import { getDb } from "../db/client";
import { presetSlugOf, resolvePreset } from "../db/presets";
import type { Bindings } from "../env";
import { badRequest, notFound } from "../lib/errors";
import type { AuthContext } from "../middleware/auth";
import type { RouteRequest } from "../routing/plan";
import { ProviderPreferencesSchema } from "../routing/preferences";

type RoutingFields = Pick<RouteRequest, "model" | "models" | "provider">;

/**
 * A preset holds a responses-style config; on embeddings, speech and video only its routing fields apply:
 * `model` (always the preset's), and `models` and `provider` where the request sends none.
 */
export async function applyModelPreset<T extends RoutingFields>(
  env: Bindings,
  auth: AuthContext,
  route: T,
): Promise<T> {
  const slug = presetSlugOf(route.model);
  if (!slug) return route;
  const preset = await resolvePreset(getDb(env.DB), auth.key.workspaceId, slug);
  if (!preset) throw notFound(`Preset '${slug}' not found in this workspace`);
  const { model, models, provider } = preset.config;
  if (typeof model !== "string" || model.length === 0) {
    throw badRequest(`Preset '${slug}' (version ${preset.version}) names no model`);
  }
  let preferences = route.provider;
  if (preferences == null && provider != null) {
    const parsed = ProviderPreferencesSchema.safeParse(provider);
    if (!parsed.success) {
      throw badRequest(
        `Preset '${slug}' (version ${preset.version}) has provider preferences this route cannot use`,
      );
    }
    preferences = parsed.data;
  }
  return { ...route, model, models: route.models ?? models ?? null, provider: preferences };
}
