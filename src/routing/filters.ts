// Pure candidate filters: each returns null when an endpoint may serve the request, else the reason it may not.
import type { DataRegion } from "../../regions";
import type { CatalogEndpointEntry, CatalogModelEntry } from "../catalog/types";
import type { EffectivePolicy } from "../guardrails/policy";
import { type ProviderPreferences, usd } from "./preferences";

/** One guardrail's own policy (effectivePolicy of that guardrail alone), so a refusal can name it. */
export interface GuardrailScope {
  id: string;
  name: string;
  policy: EffectivePolicy;
}

/** A parameter the request sets that an endpoint must support: `hard` always, else with require_parameters. */
export interface Requirement {
  param: string;
  hard: boolean;
  /** `model` is the endpoint's model, for what the catalog says per model (its input modalities). */
  fits(endpoint: CatalogEndpointEntry, model: CatalogModelEntry): boolean;
}

/** Model ids a list entry may name: slug, canonical slug, or the slug without `:free`. */
export function modelNames(model: CatalogModelEntry): string[] {
  const base = model.slug.replace(/:free$/, "");
  return [...new Set([model.slug, model.canonicalSlug, base])];
}

const listed = (list: string[], model: CatalogModelEntry) => modelNames(model).some((n) => list.includes(n));

/** The first rule of one guardrail that excludes this endpoint, as a sentence fragment. */
export function guardrailRefusal(
  policy: EffectivePolicy,
  model: CatalogModelEntry,
  endpoint: CatalogEndpointEntry,
): string | null {
  if (policy.allowedModels && !listed(policy.allowedModels, model)) return "model not in allowed_models";
  if (listed(policy.ignoredModels, model)) return "model in ignored_models";
  if (policy.allowedProviders && !policy.allowedProviders.includes(endpoint.provider)) {
    return `provider '${endpoint.provider}' not in allowed_providers`;
  }
  if (policy.ignoredProviders.includes(endpoint.provider)) {
    return `provider '${endpoint.provider}' in ignored_providers`;
  }
  if (policy.zdr[model.maker] && !endpoint.policies.zdr) {
    return `zero data retention is enforced for ${model.maker} models and provider '${endpoint.provider}' retains data`;
  }
  if (model.isFree && endpoint.policies.publishes_prompts && !policy.enableFreeModelPublication) {
    return "free endpoint publishes prompts and enable_free_model_publication is off";
  }
  if (endpoint.policies.trains_on_data) {
    if (model.isFree && !policy.enableFreeModelTraining) {
      return "free endpoint trains on request data and enable_free_model_training is off";
    }
    if (!model.isFree && !policy.enablePaidModelTraining) {
      return "paid endpoint trains on request data and enable_paid_model_training is off";
    }
  }
  return null;
}

export function regionRefusal(endpoint: CatalogEndpointEntry, region: DataRegion): string | null {
  return endpoint.regions.includes(region)
    ? null
    : `provider '${endpoint.provider}' does not serve the '${region}' data region`;
}

/** The input unit price (micro-dollars per token or character = USD per million units). */
export function unitPrice(endpoint: CatalogEndpointEntry): number {
  const p = endpoint.pricing;
  if (p.input_token != null) return p.input_token;
  if (p.character != null) return p.character;
  if (p.video_second) return Math.min(...Object.values(p.video_second));
  return 0;
}

/** `sort: "price"`: the lower unit price first, the lower output price between equals. */
export const cheaper = (a: CatalogEndpointEntry, b: CatalogEndpointEntry): number =>
  unitPrice(a) - unitPrice(b) || (a.pricing.output_token ?? 0) - (b.pricing.output_token ?? 0);

export function preferenceRefusal(
  prefs: ProviderPreferences | null | undefined,
  endpoint: CatalogEndpointEntry,
): string | null {
  if (!prefs) return null;
  const provider = endpoint.provider;
  if (prefs.only && !prefs.only.includes(provider)) return `provider '${provider}' not in provider.only`;
  if (prefs.ignore?.includes(provider)) return `provider '${provider}' in provider.ignore`;
  if (prefs.zdr && !endpoint.policies.zdr)
    return `provider '${provider}' is not zero data retention (provider.zdr)`;
  if (
    prefs.data_collection === "deny" &&
    (endpoint.policies.trains_on_data || endpoint.policies.publishes_prompts)
  ) {
    return `provider '${provider}' collects request data (provider.data_collection is deny)`;
  }
  const maxPrompt = usd(prefs.max_price?.prompt);
  if (maxPrompt != null && unitPrice(endpoint) > maxPrompt) {
    return `provider '${provider}' costs more than provider.max_price.prompt`;
  }
  const maxRequest = usd(prefs.max_price?.request);
  if (maxRequest != null && (endpoint.pricing.request ?? 0) / 1e6 > maxRequest) {
    return `provider '${provider}' costs more than provider.max_price.request`;
  }
  const maxCompletion = usd(prefs.max_price?.completion);
  if (maxCompletion != null && (endpoint.pricing.output_token ?? 0) > maxCompletion) {
    return `provider '${provider}' costs more than provider.max_price.completion`;
  }
  // Images and audio in a prompt are billed as prompt tokens: their caps bound the input price.
  for (const media of ["image", "audio"] as const) {
    const max = usd(prefs.max_price?.[media]);
    if (max != null && unitPrice(endpoint) > max) {
      return `provider '${provider}' costs more than provider.max_price.${media}`;
    }
  }
  return null;
}

export function capabilityRefusal(
  requirements: Requirement[],
  requireParameters: boolean,
  endpoint: CatalogEndpointEntry,
  model: CatalogModelEntry,
): string | null {
  const missing = requirements.filter((r) => (r.hard || requireParameters) && !r.fits(endpoint, model));
  if (missing.length === 0) return null;
  return `provider '${endpoint.provider}' does not support ${missing.map((r) => r.param).join(", ")}`;
}
