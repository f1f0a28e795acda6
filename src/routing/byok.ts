// BYOK selection (pure): which credentials, platform or the workspace's own, an endpoint is attempted with.
import type { byokCredentials } from "../../schema/tables";
import type { CatalogEndpointEntry, CatalogModelEntry } from "../catalog/types";
import { modelNames } from "./filters";

export type ByokRecord = typeof byokCredentials.$inferSelect;

export type PlannedCredential = { source: "platform" } | { source: "byok"; credentialId: string };

export interface CredentialChoice {
  credentials: PlannedCredential[];
  /** Why the list is empty. */
  refusal: string | null;
}

export interface Caller {
  keyHash: string;
  userId: string | null;
}

/** Whether the credential's allowed_models / allowed_api_key_hashes / allowed_user_ids admit the request. */
export function usableBy(c: ByokRecord, model: CatalogModelEntry, caller: Caller): boolean {
  if (c.allowedModels && !modelNames(model).some((n) => c.allowedModels!.includes(n))) return false;
  if (c.allowedApiKeyHashes && !c.allowedApiKeyHashes.includes(caller.keyHash)) return false;
  if (c.allowedUserIds && (!caller.userId || !c.allowedUserIds.includes(caller.userId))) return false;
  return true;
}

/**
 * The credentials to try for one endpoint, in order:
 * 1. the workspace's usable BYOK credentials for the provider (by sort_order), except `is_fallback` ones;
 * 2. the platform key, unless a usable credential is `is_byok_only` or any enabled one is `is_required`;
 * 3. the `is_fallback` BYOK credentials, used only after the platform key failed.
 * A credential is usable when it is enabled and its allowed_models / allowed_api_key_hashes /
 * allowed_user_ids (null = unrestricted) admit the request.
 */
export function chooseCredentials(
  endpoint: CatalogEndpointEntry,
  model: CatalogModelEntry,
  byok: ByokRecord[],
  caller: Caller,
  platformAvailable: boolean,
): CredentialChoice {
  const enabled = byok
    .filter((c) => c.provider === endpoint.provider && !c.disabled)
    .sort((a, b) => a.sortOrder - b.sortOrder || a.id.localeCompare(b.id));
  const usable = enabled.filter((c) => usableBy(c, model, caller));
  const required = enabled.some((c) => c.isRequired);
  const byokOnly = usable.some((c) => c.isByokOnly);
  const asByok = (c: ByokRecord): PlannedCredential => ({ source: "byok", credentialId: c.id });

  const credentials: PlannedCredential[] = usable.filter((c) => !c.isFallback).map(asByok);
  if (platformAvailable && !required && !byokOnly) credentials.push({ source: "platform" });
  credentials.push(...usable.filter((c) => c.isFallback).map(asByok));

  if (credentials.length > 0) return { credentials, refusal: null };
  if (required) {
    return {
      credentials,
      refusal: `provider '${endpoint.provider}' requires a BYOK credential and none is usable for this request`,
    };
  }
  return { credentials, refusal: `no credential is configured for provider '${endpoint.provider}'` };
}
