// The presets API: create a preset (or its next version) from a responses, chat or messages body, and read presets and versions.
import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { getDb } from "../db/client";
import {
  createPresetVersion,
  findPreset,
  findPresetVersion,
  findPresetWithVersion,
  listPresets,
  listPresetVersions,
  type NewPresetVersion,
  presetRefOf,
  presetVersionToWire,
} from "../db/presets";
import type { AppEnv } from "../env";
import { presetChatBodyOf } from "../inference/formats/messages-request";
import { responsesToChat } from "../inference/formats/responses-request";
import { pluginPlanOf } from "../inference/plugins";
import { badRequest, notFound } from "../lib/errors";
import { apiRoute, createRouter, describeZodError, jsonBody, jsonContent } from "../lib/openapi";
import { nowIso } from "../lib/time";
import { requireManagementKey } from "../middleware/auth";
import { requireJsonBody } from "../middleware/require-body";
import { ChatProviderSchema } from "../schemas/chat";
import { chatPresetConfigOf, PresetChatRequestSchema } from "../schemas/chat-preset";
import { hasLoneSurrogate, jsonBoundsProblem, PASSTHROUGH_MAX_DEPTH } from "../schemas/common";
import { PresetMessagesRequestSchema } from "../schemas/messages";
import {
  PresetPageQuerySchema,
  PresetSchema,
  PresetSlugParamSchema,
  PresetVersionParamSchema,
  PresetVersionSchema,
  PresetWithVersionSchema,
} from "../schemas/presets";
import {
  type PresetConfig,
  presetConfigOf,
  type ResponsesRequest,
  ResponsesRequestSchema,
} from "../schemas/responses-request";

const common = { tags: ["Presets"], security: [{ bearer: [] }] };

/** The route creating a preset (or its next designated version) from one request format's body. */
function createFrom<Body extends z.ZodType>(
  format: { path: string; operationId: string; what: string; body: Body },
  description: string,
) {
  return apiRoute(
    {
      ...common,
      method: "post",
      path: `/presets/{slug}/${format.path}`,
      operationId: format.operationId,
      summary: `Create a preset, or a new designated version of it, from ${format.what} request body`,
      description: `Management key required. ${description}`,
      middleware: [requireManagementKey, requireJsonBody] as const,
      request: { params: PresetSlugParamSchema, body: jsonBody(format.body) },
      responses: {
        200: jsonContent(
          z.object({ data: PresetWithVersionSchema }),
          "The preset with its new designated version",
        ),
      },
    },
    { also: [409] },
  );
}

const createFromResponses = createFrom(
  {
    path: "responses",
    operationId: "createPresetsResponses",
    what: "a responses",
    body: ResponsesRequestSchema,
  },
  "Only the fields that belong to a preset config persist; `instructions` becomes the system prompt; `input`, `stream`, `messages` and other fields are ignored.",
);

const createFromChat = createFrom(
  {
    path: "chat/completions",
    operationId: "createPresetsChatCompletions",
    what: "a chat completions",
    body: PresetChatRequestSchema,
  },
  "Only the fields that belong to a preset config persist; the system and developer messages become the system prompt; other messages, `stream` and other per-request fields are ignored.",
);

const createFromMessages = createFrom(
  {
    path: "messages",
    operationId: "createPresetsMessages",
    what: "an Anthropic Messages",
    body: PresetMessagesRequestSchema,
  },
  "The body is read as POST /messages reads it and kept in the chat form (so the preset serves every chat format): `system` becomes the system prompt, `stop_sequences` `stop`, `thinking` `reasoning`, tools function tools; `messages`, `stream` and other per-request fields are ignored.",
);

const list = apiRoute({
  ...common,
  method: "get",
  path: "/presets",
  operationId: "listPresets",
  summary: "List the workspace's presets, newest first",
  request: { query: PresetPageQuerySchema },
  responses: {
    200: jsonContent(z.object({ data: z.array(PresetSchema), total_count: z.int() }), "Presets"),
  },
});

const get = apiRoute({
  ...common,
  method: "get",
  path: "/presets/{slug}",
  operationId: "getPreset",
  summary: "Get a preset with its designated version",
  request: { params: PresetSlugParamSchema },
  responses: {
    200: jsonContent(z.object({ data: PresetWithVersionSchema }), "The preset"),
  },
});

const listVersions = apiRoute({
  ...common,
  method: "get",
  path: "/presets/{slug}/versions",
  operationId: "listPresetVersions",
  summary: "List a preset's versions, newest first",
  request: { params: PresetSlugParamSchema, query: PresetPageQuerySchema },
  responses: {
    200: jsonContent(z.object({ data: z.array(PresetVersionSchema), total_count: z.int() }), "Versions"),
  },
});

const getVersion = apiRoute({
  ...common,
  method: "get",
  path: "/presets/{slug}/versions/{version}",
  operationId: "getPresetVersion",
  summary: "Get one version of a preset",
  request: { params: PresetVersionParamSchema },
  responses: {
    200: jsonContent(z.object({ data: PresetVersionSchema }), "The version"),
  },
});

const presetNotFound = (slug: string) => notFound(`Preset '${slug}' not found`);

/**
 * A stored config is serialised whole (JSON.stringify recurses): its passthrough fields (reasoning,
 * text, plugins...) must not nest deeper than this. Bounded fields such as a tool's parameters
 * (PASSTHROUGH_MAX_DEPTH) sit a few levels down, well within it.
 */
export const PRESET_CONFIG_BOUNDS = { maxDepth: 2 * PASSTHROUGH_MAX_DEPTH, maxChars: 1_000_000 };

/**
 * A version's system prompt and config (as stored: UTF-8, the config as JSON) together: D1 refuses a
 * value or row above 2 MB (local SQLite's limit is higher, so a test could not show it), and every
 * request under the preset sends the prompt.
 */
const PRESET_MAX_BYTES = 1_500_000;
const utf8 = new TextEncoder();

/** The models a config's plugins name (fusion's `model` and `analysis_models`). */
function pluginModels(plugins: unknown): string[] {
  if (!Array.isArray(plugins)) return [];
  return plugins.flatMap((p: { model?: unknown; analysis_models?: unknown }) =>
    [p?.model, ...(Array.isArray(p?.analysis_models) ? p.analysis_models : [])].filter(
      (m): m is string => typeof m === "string",
    ),
  );
}

/**
 * A responses config is read as POST /responses reads it (reasoning, text format, tool choice, tools...,
 * which the body's schema takes as any object): a preset never stores one every request would be
 * refused for. The model and input are stand-ins when the preset leaves them to the request.
 */
function checkAsResponses(config: PresetConfig) {
  const model = config.model ?? (config.models?.length ? undefined : "preset/check");
  responsesToChat({ ...config, model, input: "check" } as ResponsesRequest);
}

/** Stores a new designated version of the workspace's preset; a preset never names another one. */
async function createVersion(
  c: Context<AppEnv>,
  slug: string,
  { config, systemPrompt }: Pick<NewPresetVersion, "config" | "systemPrompt">,
) {
  const { key, account } = c.get("auth");
  // Either form, `@preset/x` or chat's `m@preset/x`, would make a preset reach another: as its model,
  // a fallback, or a plugin's model (fusion's `model` and `analysis_models`).
  const nested = [config.model, ...(config.models ?? []), ...pluginModels(config.plugins)].find(
    (m) => presetRefOf(m) !== null,
  );
  if (nested) throw badRequest(`A preset cannot name another preset ('${nested}') as a model`);
  // The provider object as inference reads it: a preset never stores options a request would be refused
  // for (the responses body takes any object there, and its route checks it only when converting).
  if (config.provider != null) {
    const checked = z.object({ provider: ChatProviderSchema }).safeParse({ provider: config.provider });
    if (!checked.success) throw badRequest(describeZodError("body", checked.error));
  }
  const problem = jsonBoundsProblem(config, PRESET_CONFIG_BOUNDS);
  if (problem) throw badRequest(`Invalid request: the preset config ${problem}`);
  const bytes = utf8.encode(systemPrompt ?? "").length + utf8.encode(JSON.stringify(config)).length;
  if (bytes > PRESET_MAX_BYTES) {
    throw badRequest(
      `Invalid request: a preset's system prompt and config hold at most ${PRESET_MAX_BYTES.toLocaleString("en-US")} bytes of UTF-8 together (this one ${bytes.toLocaleString("en-US")})`,
    );
  }
  // Its plugins as every inference route runs them: one the gateway cannot run is refused here, not on
  // every request under the preset (a request may still send `enabled: false` for a stored one).
  pluginPlanOf(config as Parameters<typeof pluginPlanOf>[0]);
  // Stored text reads back as sent: D1 would keep a lone surrogate as U+FFFD (see storedText).
  if (hasLoneSurrogate(config) || (systemPrompt != null && hasLoneSurrogate(systemPrompt))) {
    throw badRequest("Invalid request: the preset must be valid Unicode text (it has an unpaired surrogate)");
  }
  return createPresetVersion(getDb(c.env.DB), {
    accountId: account.id,
    workspaceId: key.workspaceId,
    slug,
    creatorId: key.creatorUserId ?? account.id,
    config,
    systemPrompt,
    now: nowIso(),
  });
}

export const presetsRoutes = createRouter()
  .openapi(createFromResponses, async (c) => {
    const { slug } = c.req.valid("param");
    const version = presetConfigOf(c.req.valid("json"));
    checkAsResponses(version.config);
    const data = await createVersion(c, slug, version);
    return c.json({ data }, 200);
  })
  .openapi(createFromChat, async (c) => {
    const { slug } = c.req.valid("param");
    const data = await createVersion(c, slug, chatPresetConfigOf(c.req.valid("json")));
    return c.json({ data }, 200);
  })
  .openapi(createFromMessages, async (c) => {
    const { slug } = c.req.valid("param");
    const data = await createVersion(c, slug, chatPresetConfigOf(presetChatBodyOf(c.req.valid("json"))));
    return c.json({ data }, 200);
  })
  .openapi(list, async (c) => {
    const page = c.req.valid("query");
    const result = await listPresets(getDb(c.env.DB), c.get("auth").key.workspaceId, page);
    return c.json(result, 200);
  })
  .openapi(get, async (c) => {
    const { slug } = c.req.valid("param");
    const data = await findPresetWithVersion(getDb(c.env.DB), c.get("auth").key.workspaceId, slug);
    if (!data) throw presetNotFound(slug);
    return c.json({ data }, 200);
  })
  .openapi(listVersions, async (c) => {
    const { slug } = c.req.valid("param");
    const page = c.req.valid("query");
    const db = getDb(c.env.DB);
    const preset = await findPreset(db, c.get("auth").key.workspaceId, slug);
    if (!preset) throw presetNotFound(slug);
    return c.json(await listPresetVersions(db, preset.id, page), 200);
  })
  .openapi(getVersion, async (c) => {
    const { slug, version } = c.req.valid("param");
    const db = getDb(c.env.DB);
    const preset = await findPreset(db, c.get("auth").key.workspaceId, slug);
    if (!preset) throw presetNotFound(slug);
    const row = await findPresetVersion(db, preset.id, version);
    if (!row) throw notFound(`Preset '${slug}' has no version ${version}`);
    return c.json({ data: presetVersionToWire(row) }, 200);
  });
