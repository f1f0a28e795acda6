// Reaching a job's provider again after the request that created it is gone: catalog, adapter, credential.
import type { DataRegion } from "../../regions";
import { getCatalog } from "../catalog/cache";
import { baseUrlFor, findModel } from "../catalog/types";
import type { Bindings } from "../env";
import { callEndpointOf } from "../inference/attempts";
import { credentialResolver, workspaceByok } from "../inference/context";
import { UpstreamError } from "../providers/errors";
import { getAdapter } from "../providers/registry";
import type { CallContext, VideoAdapter } from "../providers/types";
import type { PlannedAttempt } from "../routing/plan";
import type { PlannedTarget } from "./state";

/** Each poll or content request gets this long before it counts as a failed attempt. */
export const UPSTREAM_CALL_MS = 30_000;

/** The planned attempts of a job, re-read from the current catalog; targets that vanished are dropped. */
export async function attemptsFor(
  env: Bindings,
  region: string,
  targets: PlannedTarget[],
): Promise<PlannedAttempt[]> {
  const catalog = await getCatalog(env.DB);
  const out: PlannedAttempt[] = [];
  for (const t of targets) {
    const model = findModel(catalog, t.modelSlug);
    const endpoint = model?.endpoints.find((e) => e.id === t.endpointId);
    if (!model || !endpoint) continue;
    out.push({
      model,
      endpoint,
      baseUrl: baseUrlFor(endpoint, region as DataRegion),
      credential: t.credential,
    });
  }
  return out;
}

export function videoAdapterOf(adapterName: string): VideoAdapter {
  const videos = getAdapter(adapterName)?.videos;
  if (!videos)
    throw new UpstreamError({
      kind: "invalid_response",
      message: "The job's provider no longer serves video",
      retryable: false,
    });
  return videos;
}

/**
 * The adapter and call context for one target, with its credential resolved now (BYOK keys are
 * decrypted only here). Throws UpstreamError when the endpoint or credential is no longer usable.
 */
export async function connect(
  env: Bindings,
  workspaceId: string,
  region: string,
  target: PlannedTarget,
  signal: AbortSignal,
): Promise<{ adapter: VideoAdapter; call: CallContext }> {
  const [attempt] = await attemptsFor(env, region, [target]);
  if (!attempt) {
    throw new UpstreamError({
      kind: "invalid_response",
      message: "The job's endpoint is no longer in the catalog",
      retryable: false,
    });
  }
  const credential = await credentialResolver(env, await workspaceByok(env.DB, workspaceId))(attempt);
  if (!credential)
    throw new UpstreamError({
      kind: "credential",
      message: `The credential for provider ${attempt.endpoint.provider} could not be used`,
    });
  return {
    adapter: videoAdapterOf(attempt.endpoint.adapter),
    call: {
      endpoint: callEndpointOf(attempt),
      credential,
      signal,
      fetch: (input, init) => globalThis.fetch(input, init),
    },
  };
}
