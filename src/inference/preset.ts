// Presets on inference routes: on every route `model: "@preset/<slug>"` supplies the routing fields the
// request leaves unset; on chat and responses the whole config and the system prompt apply
// (applyChatPreset, applyResponsesPreset).

import type { z } from "@hono/zod-openapi";
import type { AuthContext } from "../db/auth-records";
import { getDb } from "../db/client";
import { presetRefOf, type ResolvedPreset, resolvePreset } from "../db/presets";
import type { Bindings } from "../env";
import { badRequest, notFound } from "../lib/errors";
import type { RouteRequest } from "../routing/plan";
import { ProviderPreferencesSchema } from "../routing/preferences";
import { type ChatRequestBody, ChatRequestSchema } from "../schemas/chat";
import { CHAT_PRESET_CONFIG_FIELDS, hasInstructions } from "../schemas/chat-preset";
import { ProviderPassthroughSchema } from "../schemas/media-common";
import {
  PRESET_CONFIG_FIELDS,
  type ResponsesRequest,
  ResponsesRequestSchema,
} from "../schemas/responses-request";

type RoutingFields = Pick<RouteRequest, "model" | "models" | "provider">;
type ProviderOptions = NonNullable<z.infer<typeof ProviderPassthroughSchema>["options"]>;

/** A request under the preset it named: `presetId` is that preset's id (null when it named none). */
export interface UnderPreset<T> {
  body: T;
  presetId: string | null;
}

/**
 * A preset holds a responses-style config; on embeddings, speech and video only its routing fields apply
 * (`model: "@preset/<slug>"` or `"<model>@preset/<slug>"`): `model` is the one named before the preset,
 * else the preset's; `models` and `provider` come from the preset where the request sends none.
 */
export async function applyModelPreset<T extends RoutingFields>(
  env: Bindings,
  auth: AuthContext,
  route: T,
): Promise<T & { presetId?: string }> {
  const ref = presetRefOf(route.model);
  if (!ref) return route;
  const { slug } = ref;
  const preset = await presetOf(env, auth, slug);
  const { models, provider } = preset.config;
  const model = ref.model ?? preset.config.model;
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
  return {
    ...route,
    model,
    models: route.models ?? models ?? null,
    provider: preferences,
    presetId: preset.presetId,
  };
}

/**
 * The provider options (`provider.options`) of the preset a speech or video request names as its model,
 * for a request that sends none of its own (its own replace them whole, as `provider` does on chat).
 */
export async function presetProviderOptions(
  env: Bindings,
  auth: AuthContext,
  model: string,
): Promise<ProviderOptions | undefined> {
  const ref = presetRefOf(model);
  if (!ref) return undefined;
  const preset = await presetOf(env, auth, ref.slug);
  if (preset.config.provider == null) return undefined;
  const parsed = ProviderPassthroughSchema.safeParse(preset.config.provider);
  if (!parsed.success) {
    throw badRequest(
      `Preset '${ref.slug}' (version ${preset.version}) has provider options this route cannot use`,
    );
  }
  return parsed.data.options;
}

async function presetOf(env: Bindings, auth: AuthContext, slug: string): Promise<ResolvedPreset> {
  const preset = await resolvePreset(getDb(env.DB), auth.key.workspaceId, slug);
  if (!preset) throw notFound(`Preset '${slug}' not found in this workspace`);
  return preset;
}

/** The preset a request names (`preset`, or a model `@preset/<slug>` / `<model>@preset/<slug>`), if any. */
async function namedPreset(
  env: Bindings,
  auth: AuthContext,
  presetField: string | undefined,
  model: string | undefined,
): Promise<{ preset: ResolvedPreset; slug: string; model: string | undefined } | null> {
  const ref = presetRefOf(model);
  if (presetField !== undefined && ref) {
    throw badRequest(`Name one preset: both preset '${presetField}' and model '${model}' were sent`);
  }
  const slug = presetField ?? ref?.slug;
  if (slug === undefined) return null;
  // With `preset`, the request's model is its own; with a model reference, only a model named before it.
  const own = presetField !== undefined ? model : (ref?.model ?? undefined);
  return { preset: await presetOf(env, auth, slug), slug, model: own };
}

const cannotUse = (slug: string, preset: ResolvedPreset, field: string, api: string) =>
  badRequest(`Preset '${slug}' (version ${preset.version}) has a \`${field}\` ${api} cannot use`);

const namesNoModel = (slug: string, preset: ResolvedPreset) =>
  badRequest(`Preset '${slug}' (version ${preset.version}) names no model`);

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
): Promise<UnderPreset<ChatRequestBody>> {
  const named = await namedPreset(env, auth, body.preset, body.model);
  if (!named) return { body, presetId: null };
  const { preset, slug } = named;
  const stored: Record<string, unknown> = { ...preset.config };
  if (stored.max_tokens === undefined && stored.max_completion_tokens === undefined) {
    stored.max_tokens = stored.max_output_tokens;
  }

  const merged: Record<string, unknown> = { ...body, preset: undefined, model: named.model };
  for (const field of CHAT_PRESET_CONFIG_FIELDS) {
    const value = stored[field];
    if (merged[field] !== undefined || value === undefined) continue;
    const parsed = ChatRequestSchema.shape[field].safeParse(value);
    if (!parsed.success) throw cannotUse(slug, preset, field, "chat completions");
    merged[field] = parsed.data;
  }
  if (merged.model == null && !(merged.models as unknown[] | undefined)?.length) {
    throw namesNoModel(slug, preset);
  }
  if (preset.systemPrompt != null && !hasInstructions(body.messages)) {
    merged.messages = [{ role: "system", content: preset.systemPrompt }, ...body.messages];
  }
  return { body: merged as ChatRequestBody, presetId: preset.presetId };
}

/** A responses request under its preset, and what a preset made from a chat body adds in chat's own names. */
export interface ResponsesUnderPreset extends UnderPreset<ResponsesRequest> {
  /** Chat fields of the preset (a chat-made preset's `stop`, `seed`, `max_tokens`, chat-shaped `tools`, ...): they fill what the translated request leaves undefined. */
  chatDefaults: Partial<ChatRequestBody>;
}

/**
 * A responses request under the preset it names (`preset: "<slug>"` or `model: "@preset/<slug>"`), with
 * the same shallow merge as chat, the request winning field by field (an explicit null included). The
 * preset's system prompt becomes `instructions` when the request sends none. A preset made from a chat
 * body stores chat names: its `max_tokens` is the responses `max_output_tokens`; those the responses
 * shape cannot take but chat can (its `stop`, `seed`, chat-style `tools`, ...) are handed back to fill the translated chat request; a value
 * neither shape takes is a 400 naming the preset.
 */
export async function applyResponsesPreset(
  env: Bindings,
  auth: AuthContext,
  body: ResponsesRequest,
): Promise<ResponsesUnderPreset> {
  const named = await namedPreset(env, auth, body.preset, body.model);
  if (!named) return { body, chatDefaults: {}, presetId: null };
  const { preset, slug } = named;
  const merged: Record<string, unknown> = { ...body, preset: undefined, model: named.model };
  const chatDefaults: Record<string, unknown> = {};
  // A chat-made preset's output limit is the responses limit too, so the response object echoes it.
  const stored: Record<string, unknown> = { ...preset.config };
  stored.max_output_tokens ??= stored.max_completion_tokens ?? stored.max_tokens;
  for (const [field, value] of Object.entries(stored)) {
    if (value === undefined) continue;
    if (isResponsesField(field)) {
      if (merged[field] !== undefined) continue;
      const parsed = ResponsesRequestSchema.shape[field].safeParse(value);
      if (parsed.success) {
        merged[field] = parsed.data;
        continue;
      }
    }
    if (isChatField(field)) {
      const parsed = ChatRequestSchema.shape[field].safeParse(value);
      if (parsed.success) {
        chatDefaults[field] = parsed.data;
        continue;
      }
    }
    if (isResponsesField(field) || isChatField(field)) throw cannotUse(slug, preset, field, "responses");
  }
  if (merged.model == null && !(merged.models as unknown[] | undefined)?.length) {
    throw namesNoModel(slug, preset);
  }
  if (body.instructions === undefined && preset.systemPrompt != null) {
    merged.instructions = preset.systemPrompt;
  }
  return {
    body: merged as ResponsesRequest,
    chatDefaults: chatDefaults as Partial<ChatRequestBody>,
    presetId: preset.presetId,
  };
}

const isResponsesField = (f: string): f is (typeof PRESET_CONFIG_FIELDS)[number] =>
  (PRESET_CONFIG_FIELDS as readonly string[]).includes(f);
const isChatField = (f: string): f is (typeof CHAT_PRESET_CONFIG_FIELDS)[number] =>
  (CHAT_PRESET_CONFIG_FIELDS as readonly string[]).includes(f);
