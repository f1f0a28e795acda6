// GET /models' query: the filters, sort and page @openrouter/sdk's models.list sends, answered from the
// catalog. A model passes a filter when the model as GET /models shows it does (its parameters, inputs
// and providers are the union over its endpoints); filters on data the gateway does not keep are refused.
import { providerDisplayName } from "../catalog/providers";
import { type CatalogModelEntry, OUTPUT_MODALITY } from "../catalog/types";
import { badRequest } from "../lib/errors";
import { MODEL_FILTERS_UNTRACKED, type ModelsQuery } from "../schemas/models";
import { architectureOf, supportedParametersOf } from "./model-shapes";

const DAY_S = 86_400;
const DEFAULT_PAGE = 500;

const list = (value: string | undefined) => (value ? value.toLowerCase().split(",") : undefined);

/** USD per million units is micro-dollars per unit: the catalog's numbers as they are. */
const promptPrice = (m: CatalogModelEntry) => {
  const p = m.endpoints[0]!.pricing;
  return p.input_token ?? p.character ?? 0;
};
const outputPrice = (m: CatalogModelEntry) => m.endpoints[0]!.pricing.output_token ?? 0;
/**
 * Models priced by the second of video have no price per token (their listing says "0"): the price
 * filters leave them out and the price sorts put them last, rather than ranking them free.
 */
const tokenPriced = (m: CatalogModelEntry) => m.endpoints[0]!.pricing.video_second === undefined;

/** The model passes every filter the query sets. */
function matcher(q: ModelsQuery, nowS: number): (m: CatalogModelEntry) => boolean {
  const outputs =
    q.output_modalities && q.output_modalities !== "all" ? list(q.output_modalities) : undefined;
  const parameters = list(q.supported_parameters);
  const inputs = list(q.input_modalities);
  const authors = list(q.model_authors);
  const providers = list(q.providers)?.map((p) => p.trim());
  const words = q.q?.toLowerCase().split(/\s+/).filter(Boolean);
  const arch = q.arch?.toLowerCase();
  const region = q.region === "eu" ? "europe" : q.region;
  const priceFiltered = [q.min_price, q.max_price, q.min_output_price, q.max_output_price].some(
    (v) => v !== undefined,
  );
  return (m) => {
    if (outputs && !outputs.includes(OUTPUT_MODALITY[m.modality])) return false;
    if (parameters) {
      const listed = supportedParametersOf(m);
      if (!parameters.every((p) => listed.includes(p))) return false;
    }
    if (inputs && !inputs.every((i) => m.inputModalities.includes(i))) return false;
    if (authors && !authors.includes(m.slug.split("/")[0]!.toLowerCase())) return false;
    if (
      providers &&
      !m.endpoints.some(
        (e) =>
          providers.includes(e.provider) || providers.includes(providerDisplayName(e.provider).toLowerCase()),
      )
    )
      return false;
    if (words) {
      const text = `${m.slug} ${m.name} ${m.description}`.toLowerCase();
      if (!words.every((w) => text.includes(w))) return false;
    }
    if (arch && architectureOf(m).tokenizer?.toLowerCase() !== arch) return false;
    if (q.context !== undefined && (m.contextLength ?? 0) < q.context) return false;
    if (priceFiltered && !tokenPriced(m)) return false;
    if (q.min_price !== undefined && promptPrice(m) < q.min_price) return false;
    if (q.max_price !== undefined && promptPrice(m) > q.max_price) return false;
    if (q.min_output_price !== undefined && outputPrice(m) < q.min_output_price) return false;
    if (q.max_output_price !== undefined && outputPrice(m) > q.max_output_price) return false;
    if (q.zdr && !m.endpoints.some((e) => e.policies.zdr)) return false;
    if (region && !m.endpoints.some((e) => e.regions.includes(region))) return false;
    const ageDays = (nowS - m.created) / DAY_S;
    if (q.min_age_days !== undefined && ageDays < q.min_age_days) return false;
    if (q.max_age_days !== undefined && ageDays > q.max_age_days) return false;
    return true;
  };
}

/** Sorts the catalog can answer; usage, performance and benchmark sorts keep the catalog's order. */
function sorted(models: CatalogModelEntry[], sort: ModelsQuery["sort"]): CatalogModelEntry[] {
  const average = (m: CatalogModelEntry) => (promptPrice(m) + outputPrice(m)) / 2;
  const unpricedLast = (a: CatalogModelEntry, b: CatalogModelEntry) =>
    Number(!tokenPriced(a)) - Number(!tokenPriced(b));
  const by: Partial<
    Record<NonNullable<ModelsQuery["sort"]>, (a: CatalogModelEntry, b: CatalogModelEntry) => number>
  > = {
    "pricing-low-to-high": (a, b) => unpricedLast(a, b) || average(a) - average(b),
    "pricing-high-to-low": (a, b) => unpricedLast(a, b) || average(b) - average(a),
    "context-high-to-low": (a, b) => (b.contextLength ?? 0) - (a.contextLength ?? 0),
    newest: (a, b) => b.created - a.created,
  };
  const compare = sort ? by[sort] : undefined;
  // Array.prototype.sort is stable: ties keep the catalog's order.
  return compare ? [...models].sort(compare) : models;
}

export interface ModelsPage {
  models: CatalogModelEntry[];
  total: number;
  /** The query string of the next page, when there is one. */
  next: string | null;
}

/**
 * The page of models the query asks for. `search` is the request's own query string, kept for the next
 * page's link with only offset and limit moved on.
 */
export function selectModels(
  models: CatalogModelEntry[],
  q: ModelsQuery,
  search: URLSearchParams,
  nowS = Math.floor(Date.now() / 1000),
): ModelsPage {
  const untracked = MODEL_FILTERS_UNTRACKED.filter((name) => q[name] !== undefined);
  if (untracked.length > 0) {
    throw badRequest(
      `This gateway keeps no use-case categories, distillability, benchmark indices or tool-call success rates: ${untracked.join(", ")} cannot be applied`,
      { parameters: untracked },
    );
  }
  const matched = sorted(models.filter(matcher(q, nowS)), q.sort);
  if (q.offset === undefined && q.limit === undefined)
    return { models: matched, total: matched.length, next: null };
  const offset = q.offset ?? 0;
  const limit = q.limit ?? DEFAULT_PAGE;
  let next: string | null = null;
  if (offset + limit < matched.length) {
    const more = new URLSearchParams(search);
    more.set("offset", String(offset + limit));
    more.set("limit", String(limit));
    next = more.toString();
  }
  return { models: matched.slice(offset, offset + limit), total: matched.length, next };
}
