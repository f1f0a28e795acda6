// Presets on inference routes: on every route `model: "@preset/<slug>"` supplies the routing fields the
// request leaves unset; on chat the whole config and the system prompt apply (applyChatPreset).
import { getDb } from "../db/client";
import { presetRefOf, presetSlugOf, type ResolvedPreset, resolvePreset } from "../db/presets";
import type { Bindings } from "../env";
import { badRequest, notFound } from "../lib/errors";
import type { AuthContext } from "../middleware/auth";
import type { RouteRequest } from "../routing/plan";
import { ProviderPreferencesSchema } from "../routing/preferences";
import { type ChatRequestBody, ChatRequestSchema } from "../schemas/chat";
import { CHAT_PRESET_CONFIG_FIELDS, hasInstructions } from "../schemas/chat-preset";

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
  const preset = await presetOf(env, auth, slug);
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

async function presetOf(env: Bindings, auth: AuthContext, slug: string): Promise<ResolvedPreset> {
  const preset = await resolvePreset(getDb(env.DB), auth.key.workspaceId, slug);
  if (!preset) throw notFound(`Preset '${slug}' not found in this workspace`);
  return preset;
}

/**
 * A chat request under the preset it names (`model: "@preset/<slug>"`, `model: "<model>@preset/<slug>"`,
 * or `preset: "<slug>"`), as the preset's designated version would send it. A shallow merge where the
 * request wins: every config field the request leaves undefined comes from the preset (an explicit null
 * in the request wins too), and `model` is the request's when it names one, else the preset's. The
 * preset's system prompt is prepended as a system message only when the conversation has no system or
 * developer message of its own: the request's instructions replace the preset's, as `instructions` does
 * on responses. A preset made from a responses body lends its `max_output_tokens` as `max_tokens`;
 * responses-only fields (`text`, `include`, ...) do not apply; a stored value the chat shape cannot
 * take (a responses-style tool, say) is a 400 naming the preset, never silently dropped.
 */
export async function applyChatPreset(
  env: Bindings,
  auth: AuthContext,
  body: ChatRequestBody,
): Promise<ChatRequestBody> {
  const ref = presetRefOf(body.model);
  if (body.preset !== undefined && ref) {
    throw badRequest(`Name one preset: both preset '${body.preset}' and model '${body.model}' were sent`);
  }
  const slug = body.preset ?? ref?.slug;
  if (slug === undefined) return body;
  const preset = await presetOf(env, auth, slug);
  const stored: Record<string, unknown> = { ...preset.config };
  if (stored.max_tokens === undefined && stored.max_completion_tokens === undefined) {
    stored.max_tokens = stored.max_output_tokens;
  }

  const merged: Record<string, unknown> = { ...body, preset: undefined };
  const requestModel = body.preset !== undefined ? body.model : (ref?.model ?? undefined);
  merged.model = requestModel;
  for (const field of CHAT_PRESET_CONFIG_FIELDS) {
    const value = stored[field];
    if (merged[field] !== undefined || value === undefined) continue;
    const parsed = ChatRequestSchema.shape[field].safeParse(value);
    if (!parsed.success) {
      throw badRequest(
        `Preset '${slug}' (version ${preset.version}) has a \`${field}\` chat completions cannot use`,
      );
    }
    merged[field] = parsed.data;
  }
  if (merged.model == null && !(merged.models as unknown[] | undefined)?.length) {
    throw badRequest(`Preset '${slug}' (version ${preset.version}) names no model`);
  }
  if (preset.systemPrompt != null && !hasInstructions(body.messages)) {
    merged.messages = [{ role: "system", content: preset.systemPrompt }, ...body.messages];
  }
  return merged as ChatRequestBody;
}
