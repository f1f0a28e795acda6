// The D1 tables of the whole domain: the single source drizzle-kit generates migrations from.
// Money is integer micro-dollars (`*_micros`); JSON columns hold arrays or objects, never secrets in clear.
import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/** The SQL default of every timestamp column: now, as an ISO 8601 string with milliseconds. */
export const NOW_SQL = "(strftime('%Y-%m-%dT%H:%M:%fZ','now'))";
const createdAt = () => text("created_at").notNull().default(sql.raw(NOW_SQL));
const updatedAt = () => text("updated_at").notNull().default(sql.raw(NOW_SQL));
const bool = (name: string) => integer(name, { mode: "boolean" });
const json = <T>(name: string) => text(name, { mode: "json" }).$type<T>();

export const accounts = sqliteTable("accounts", {
  id: text("id").primaryKey(),
  name: text("name").notNull(),
  /** The workspace used when a request names none; null once that workspace is deleted. */
  defaultWorkspaceId: text("default_workspace_id"),
  /** Exempt from free-model request limits (e.g. internal or partner accounts). */
  exemptFreeLimits: bool("exempt_free_limits").notNull().default(false),
  /**
   * Raised by every change that can revoke access or lower a limit (keys, guardrails, assignments);
   * the ledger refuses admissions made on an older copy, so cached auth records cannot outlive it.
   */
  authorityVersion: integer("authority_version").notNull().default(0),
  createdAt: createdAt(),
});

/** Append-only record of credits bought; their sum is the account's all-time credits purchased. */
export const creditGrants = sqliteTable(
  "credit_grants",
  {
    id: text("id").primaryKey(),
    accountId: text("account_id").notNull(),
    amountMicros: integer("amount_micros").notNull(),
    note: text("note"),
    createdAt: createdAt(),
  },
  (t) => [index("credit_grants_account").on(t.accountId)],
);

/**
 * What operators did through the admin CLI (scripts/admin.mjs), append-only: credits added with their
 * reason, accounts created, management keys created or revoked. Never holds a key, only its hash.
 */
export const adminAudit = sqliteTable(
  "admin_audit",
  {
    id: text("id").primaryKey(),
    action: text("action", {
      enum: ["account.create", "credits.add", "management_key.create", "management_key.revoke"],
    }).notNull(),
    accountId: text("account_id").notNull(),
    /** Who ran the command: the operator's login name as the CLI saw it. */
    actor: text("actor").notNull(),
    reason: text("reason"),
    detail: json<Record<string, unknown>>("detail"),
    createdAt: createdAt(),
  },
  (t) => [index("admin_audit_account").on(t.accountId, t.createdAt)],
);

export const workspaces = sqliteTable(
  "workspaces",
  {
    id: text("id").primaryKey(),
    accountId: text("account_id").notNull(),
    name: text("name").notNull(),
    slug: text("slug").notNull(),
    /** Assigned at creation; the guardrail row exists only once it has been configured (PATCHed). */
    defaultGuardrailId: text("default_guardrail_id").notNull(),
    /** Default completion webhook for video jobs (HTTPS). */
    videoWebhookUrl: text("video_webhook_url"),
    /** Webhook signing secret (`whsec_...`), AES-GCM ciphertext under the master key. */
    webhookSecretCiphertext: text("webhook_secret_ciphertext"),
    /** The secret replaced by the last rotation; deliveries are signed with both for a grace period. */
    webhookSecretPreviousCiphertext: text("webhook_secret_previous_ciphertext"),
    webhookSecretRotatedAt: text("webhook_secret_rotated_at"),
    deletedAt: text("deleted_at"),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex("workspaces_account_slug").on(t.accountId, t.slug)],
);

export const users = sqliteTable("users", {
  id: text("id").primaryKey(),
  accountId: text("account_id").notNull(),
  email: text("email").notNull(),
  name: text("name"),
  createdAt: createdAt(),
});

export const members = sqliteTable(
  "members",
  {
    workspaceId: text("workspace_id").notNull(),
    userId: text("user_id").notNull(),
    role: text("role", { enum: ["admin", "member"] })
      .notNull()
      .default("member"),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.userId] })],
);

export const apiKeys = sqliteTable(
  "api_keys",
  {
    /** SHA-256 (hex) of the full key; the key itself is never stored. */
    hash: text("hash").primaryKey(),
    accountId: text("account_id").notNull(),
    workspaceId: text("workspace_id").notNull(),
    name: text("name").notNull(),
    /** Masked form shown to users, e.g. `sk-gw-v1-3f2...9ab`. */
    label: text("label").notNull(),
    isManagement: bool("is_management").notNull().default(false),
    isProvisioning: bool("is_provisioning").notNull().default(false),
    isFreeTier: bool("is_free_tier").notNull().default(false),
    disabled: bool("disabled").notNull().default(false),
    expiresAt: text("expires_at"),
    limitMicros: integer("limit_micros"),
    limitReset: text("limit_reset", { enum: ["daily", "weekly", "monthly"] }),
    includeByokInLimit: bool("include_byok_in_limit").notNull().default(false),
    allowedDataRegions: json<string[]>("allowed_data_regions").notNull(),
    creatorUserId: text("creator_user_id"),
    externalUser: text("external_user"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index("api_keys_account").on(t.accountId)],
);

export type ContentFilterBuiltin = { slug: string; action: "block" | "redact" | "flag"; label: string };
export type ContentFilterCustom = { pattern: string; action: "block" | "redact" | "flag"; label: string };

export const guardrails = sqliteTable(
  "guardrails",
  {
    id: text("id").primaryKey(),
    accountId: text("account_id").notNull(),
    workspaceId: text("workspace_id").notNull(),
    name: text("name").notNull(),
    description: text("description"),
    limitMicros: integer("limit_micros"),
    resetInterval: text("reset_interval", { enum: ["daily", "weekly", "monthly"] }),
    includeByokInBudgets: bool("include_byok_in_budgets").notNull().default(false),
    allowedDataRegions: json<string[]>("allowed_data_regions"),
    allowedModels: json<string[]>("allowed_models"),
    ignoredModels: json<string[]>("ignored_models"),
    allowedProviders: json<string[]>("allowed_providers"),
    ignoredProviders: json<string[]>("ignored_providers"),
    contentFilterBuiltins: json<ContentFilterBuiltin[]>("content_filter_builtins"),
    contentFilters: json<ContentFilterCustom[]>("content_filters"),
    enableFreeModelPublication: bool("enable_free_model_publication").notNull().default(false),
    enableFreeModelTraining: bool("enable_free_model_training").notNull().default(false),
    enablePaidModelTraining: bool("enable_paid_model_training").notNull().default(false),
    enforceZdr: bool("enforce_zdr"),
    enforceZdrVendorA: bool("enforce_zdr_vendor_a").notNull().default(false),
    enforceZdrVendorB: bool("enforce_zdr_vendor_b").notNull().default(false),
    enforceZdrVendorC: bool("enforce_zdr_vendor_c").notNull().default(false),
    enforceZdrVendorD: bool("enforce_zdr_vendor_d").notNull().default(false),
    enforceZdrOther: bool("enforce_zdr_other").notNull().default(false),
    /** Bumped on every update; updates are conditional on it (optimistic concurrency). */
    version: integer("version").notNull().default(1),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index("guardrails_workspace").on(t.workspaceId)],
);

export const guardrailKeyAssignments = sqliteTable(
  "guardrail_key_assignments",
  {
    guardrailId: text("guardrail_id").notNull(),
    keyHash: text("key_hash").notNull(),
    assignedBy: text("assigned_by"),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.guardrailId, t.keyHash] }), index("gka_key").on(t.keyHash)],
);

export const guardrailMemberAssignments = sqliteTable(
  "guardrail_member_assignments",
  {
    guardrailId: text("guardrail_id").notNull(),
    userId: text("user_id").notNull(),
    workspaceId: text("workspace_id").notNull(),
    assignedBy: text("assigned_by"),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.guardrailId, t.userId] }), index("gma_user").on(t.userId)],
);

export const byokCredentials = sqliteTable(
  "byok_credentials",
  {
    id: text("id").primaryKey(),
    accountId: text("account_id").notNull(),
    workspaceId: text("workspace_id").notNull(),
    provider: text("provider").notNull(),
    name: text("name").notNull(),
    label: text("label").notNull(),
    /** base64 AES-256-GCM ciphertext; AAD binds workspace, provider and credential id. */
    ciphertext: text("ciphertext").notNull(),
    iv: text("iv").notNull(),
    keyVersion: text("key_version").notNull(),
    disabled: bool("disabled").notNull().default(false),
    isByokOnly: bool("is_byok_only").notNull().default(false),
    isFallback: bool("is_fallback").notNull().default(false),
    isRequired: bool("is_required").notNull().default(false),
    sortOrder: integer("sort_order").notNull().default(0),
    allowedApiKeyHashes: json<string[]>("allowed_api_key_hashes"),
    allowedModels: json<string[]>("allowed_models"),
    allowedUserIds: json<string[]>("allowed_user_ids"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
    /** The caller's own statement that this upstream account has zero data retention; null when unstated. */
    declaredZdr: bool("declared_zdr"),
  },
  (t) => [index("byok_workspace").on(t.workspaceId, t.sortOrder)],
);

export const presets = sqliteTable(
  "presets",
  {
    id: text("id").primaryKey(),
    accountId: text("account_id").notNull(),
    workspaceId: text("workspace_id").notNull(),
    slug: text("slug").notNull(),
    name: text("name").notNull(),
    description: text("description"),
    status: text("status").notNull().default("active"),
    statusUpdatedAt: text("status_updated_at"),
    creatorUserId: text("creator_user_id").notNull(),
    designatedVersionId: text("designated_version_id"),
    /** Highest version number; the next version is latest + 1, claimed atomically. */
    latestVersion: integer("latest_version").notNull().default(0),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [uniqueIndex("presets_workspace_slug").on(t.workspaceId, t.slug)],
);

export const presetVersions = sqliteTable(
  "preset_versions",
  {
    id: text("id").primaryKey(),
    presetId: text("preset_id").notNull(),
    version: integer("version").notNull(),
    config: json<Record<string, unknown>>("config").notNull(),
    systemPrompt: text("system_prompt"),
    creatorId: text("creator_id").notNull(),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [uniqueIndex("preset_versions_preset_version").on(t.presetId, t.version)],
);

/** Catalog: models, seeded from catalog/catalog.json. */
export const models = sqliteTable("models", {
  slug: text("slug").primaryKey(),
  canonicalSlug: text("canonical_slug").notNull(),
  name: text("name").notNull(),
  /** vendor_a..vendor_d or other: which ZDR guardrail field governs it. */
  maker: text("maker").notNull(),
  modality: text("modality", { enum: ["embeddings", "speech", "video"] }).notNull(),
  isFree: bool("is_free").notNull().default(false),
  description: text("description"),
  /** Model-level facts (context length, input modalities...) as the catalog file states them. */
  details: json<Record<string, unknown>>("details").notNull(),
  catalogVersion: text("catalog_version").notNull(),
});

/** Catalog: one provider endpoint serving a model. */
export const endpoints = sqliteTable(
  "endpoints",
  {
    id: text("id").primaryKey(),
    modelSlug: text("model_slug").notNull(),
    provider: text("provider").notNull(),
    adapter: text("adapter").notNull(),
    upstreamModel: text("upstream_model").notNull(),
    /** {"default": url, "europe"?: url, "us"?: url} */
    baseUrls: json<Record<string, string>>("base_urls").notNull(),
    pricing: json<Record<string, unknown>>("pricing").notNull(),
    capabilities: json<Record<string, unknown>>("capabilities").notNull(),
    /** {zdr, trains_on_data, publishes_prompts} */
    policies: json<Record<string, boolean>>("policies").notNull(),
    regions: json<string[]>("regions").notNull(),
    exemptFreeLimits: bool("exempt_free_limits").notNull().default(false),
    catalogVersion: text("catalog_version").notNull(),
    /** {first_byte_ms?}: per-endpoint attempt deadline overriding the modality default. */
    timeouts: json<{ first_byte_ms?: number }>("timeouts").notNull().default({}),
    /** Position in the model's endpoint list: the default routing order. */
    position: integer("position").notNull().default(0),
  },
  (t) => [index("endpoints_model").on(t.modelSlug)],
);

/** One record per inference call (usage and cost), written after the response. */
export const generations = sqliteTable(
  "generations",
  {
    id: text("id").primaryKey(),
    accountId: text("account_id").notNull(),
    workspaceId: text("workspace_id").notNull(),
    keyHash: text("key_hash").notNull(),
    modality: text("modality").notNull(),
    /** The client API the request came in through when the modality does not say (responses, messages). */
    apiType: text("api_type"),
    model: text("model").notNull(),
    provider: text("provider"),
    endpointId: text("endpoint_id"),
    isByok: bool("is_byok").notNull().default(false),
    status: text("status", { enum: ["completed", "failed", "cancelled"] }).notNull(),
    usage: json<Record<string, number>>("usage").notNull(),
    costMicros: integer("cost_micros").notNull().default(0),
    region: text("region").notNull(),
    metadata: json<Record<string, unknown>>("metadata"),
    user: text("user"),
    flags: json<string[]>("flags"),
    attempts: json<Array<Record<string, unknown>>>("attempts"),
    error: text("error"),
    /**
     * The ledger block the request was admitted against in its isolate, if any: a block reclaimed
     * without its final report is charged from its records (docs/billing.md, "Reclaim").
     */
    blockId: text("block_id"),
    /** The caller's session (`session_id`, or the `x-session-id` header; the body wins). */
    sessionId: text("session_id"),
    /** Whether the answer was streamed to the client; null in records written before it was kept. */
    streamed: bool("streamed"),
    /** How the answer ended (stop, length, tool_calls, content_filter) and the provider's own word; a failed record reads as "error". */
    finishReason: text("finish_reason"),
    nativeFinishReason: text("native_finish_reason"),
    /** From the start of the attempt that served to the answer's end (its last byte, for a stream). */
    generationMs: integer("generation_ms"),
    /** The provider's own id for its answer (`chatcmpl-...`, `msg_...`, a video job's id), when it gave one. */
    upstreamId: text("upstream_id"),
    /** The caller's `HTTP-Referer` and `User-Agent` headers (app attribution), cut to their bounds. */
    httpReferer: text("http_referer"),
    userAgent: text("user_agent"),
    /** The preset the request ran under (its id), if any. */
    presetId: text("preset_id"),
    /** The X-Request-Id of the request that made it (the caller's, or the one the gateway gave): its log line. */
    requestId: text("request_id"),
    createdAt: createdAt(),
  },
  (t) => [
    index("generations_key").on(t.keyHash, t.createdAt),
    index("generations_block").on(t.blockId),
    // GET /activity and GET /generations read an account's records by time.
    index("generations_account").on(t.accountId, t.createdAt),
  ],
);

export const videoJobs = sqliteTable(
  "video_jobs",
  {
    id: text("id").primaryKey(),
    accountId: text("account_id").notNull(),
    workspaceId: text("workspace_id").notNull(),
    keyHash: text("key_hash").notNull(),
    model: text("model").notNull(),
    provider: text("provider"),
    endpointId: text("endpoint_id"),
    status: text("status", {
      enum: ["pending", "in_progress", "completed", "failed", "cancelled", "expired"],
    }).notNull(),
    isByok: bool("is_byok").notNull().default(false),
    callbackUrl: text("callback_url"),
    idempotencyKey: text("idempotency_key"),
    requestHash: text("request_hash"),
    generationId: text("generation_id"),
    costMicros: integer("cost_micros"),
    error: text("error"),
    region: text("region").notNull(),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [uniqueIndex("video_jobs_idempotency").on(t.keyHash, t.idempotencyKey)],
);

export const webhookDeliveries = sqliteTable(
  "webhook_deliveries",
  {
    id: text("id").primaryKey(),
    jobId: text("job_id").notNull(),
    webhookId: text("webhook_id").notNull(),
    attempt: integer("attempt").notNull(),
    statusCode: integer("status_code"),
    error: text("error"),
    createdAt: createdAt(),
  },
  (t) => [index("webhook_deliveries_job").on(t.jobId, t.attempt)],
);
