// Values that mean something to the gateway (models, providers, URLs, fixture ids), as body-field hints.
import fc from "fast-check";
import type { Fixture, FuzzAccount } from "./fixture";
import type { Operation } from "./openapi";
import type { SchemaContext } from "./schema-arbitrary";

/**
 * Sandbox models whose upstream fails on purpose (docs/routing.md, docs/media.md). Models that wait
 * for a deadline (`never-answers`, `slow-first-token`) are never generated: each case would cost seconds.
 */
export const FAILING_SANDBOX = [
  "always-503",
  "rate-limited-429",
  "overloaded-529",
  "-failover",
  "chat-503",
  "chat-429",
  "error-after-3",
  "truncated",
];

/** Per modality: mostly the free sandbox model (valid cases stay cheap), some of everything else. */
const MODELS: Record<string, Array<[number, string]>> = {
  embeddings: [
    [10, "sandbox/embed-small:free"],
    [1, "sandbox/embed-small"],
    [1, "sandbox/embed-failover"],
    [1, "sandbox/embed-always-503"],
    [1, "sandbox/embed-rate-limited-429"],
    [1, "sandbox/embed-overloaded-529"],
    [1, "openai/text-embedding-3-small"],
    [1, "cohere/embed-v4.0"],
    [1, "sandbox/tts-mini:free"],
  ],
  speech: [
    [10, "sandbox/tts-mini:free"],
    [1, "sandbox/tts-mini"],
    [1, "sandbox/tts-failover"],
    [1, "sandbox/tts-always-503"],
    [1, "openai/gpt-4o-mini-tts"],
    [1, "elevenlabs/eleven-flash-v2.5"],
    [1, "sandbox/embed-small:free"],
  ],
  video: [
    [10, "sandbox/video-mini:free"],
    [1, "sandbox/video-mini"],
    [1, "sandbox/video-failover"],
    [1, "sandbox/video-upscale"],
    [1, "openai/sora-2"],
    [1, "google/veo-3.1"],
    [1, "sandbox/embed-small:free"],
  ],
  chat: [
    [10, "sandbox/chat-echo:free"],
    [1, "sandbox/chat-echo"],
    [1, "sandbox/chat-tools"],
    [1, "sandbox/chat-reasoning"],
    [1, "sandbox/chat-503"],
    [1, "sandbox/chat-429"],
    [1, "sandbox/chat-error-after-3"],
    [1, "sandbox/chat-truncated"],
    [1, "sandbox/chat-failover"],
    [1, "openai/gpt-5-mini"],
    [1, "anthropic/claude-sonnet-4"],
    [1, "sandbox/embed-small:free"],
  ],
};

function modalityOf(path: string): keyof typeof MODELS | null {
  if (
    path.endsWith("/chat/completions") ||
    path.endsWith("/responses") ||
    path.endsWith("/messages") ||
    path === "/messages/count_tokens"
  )
    return "chat";
  if (path === "/embeddings") return "embeddings";
  if (path === "/audio/speech") return "speech";
  if (path === "/videos") return "video";
  return null;
}

const ALL_MODELS = [...new Set(Object.values(MODELS).flatMap((m) => m.map(([, slug]) => slug)))];
const PROVIDERS = ["sandbox", "sandbox-backup", "openai", "cohere", "elevenlabs", "google-ai-studio", "nope"];
const URLS = [
  "https://example.com/hook",
  "https://example.com/frame.png",
  "http://example.com/plain-http",
  "https://127.0.0.1/",
  "https://169.254.169.254/latest/meta-data/",
  "https://[::1]/",
  "https://localhost:8443/",
  "data:image/png;base64,iVBORw0KGgo=",
  "javascript:alert(1)",
  "not a url",
  "",
];
/** Custom content filters: plain, catastrophic backtracking, invalid, lookbehind, huge repetition. */
const PATTERNS = ["secret", "\\d{4}", "(a+)+$", "(", "[", "(?<=x)y", "\\", "a{1,100000}", ".*".repeat(50)];

export const pick = <T>(values: T[]) => fc.constantFrom(...values);
const weighted = (entries: Array<[number, string]>) =>
  fc.oneof(...entries.map(([weight, v]) => ({ weight, arbitrary: fc.constant(v) })));

/** Both accounts' values of a kind, account A's first. */
export const both = (fx: Fixture, f: (acct: FuzzAccount) => string[]) => [...f(fx.a), ...f(fx.b)];

/**
 * Hints by field name (`name[]` for array items, `query:name` for query parameters), so that valid
 * bodies reach the handlers with real ids and models instead of stopping at the first lookup.
 */
export function hints(op: Operation, fx: Fixture): SchemaContext["hint"] {
  const modality = modalityOf(op.path);
  const models = modality ? weighted(MODELS[modality]!) : pick(ALL_MODELS);
  const table: Record<string, fc.Arbitrary<unknown>> = {
    model: fc.oneof(
      { weight: 6, arbitrary: models },
      pick([`@preset/${fx.a.presetSlug}`, `@preset/${fx.b.presetSlug}`]),
    ),
    "models[]": models,
    "allowed_models[]": pick(ALL_MODELS),
    "ignored_models[]": pick(ALL_MODELS),
    "key_hashes[]": pick(both(fx, (x) => x.keyHashes)),
    "allowed_api_key_hashes[]": pick(both(fx, (x) => x.keyHashes)),
    "member_user_ids[]": pick(both(fx, (x) => [x.userId])),
    "allowed_user_ids[]": pick(both(fx, (x) => [x.userId])),
    creator_user_id: pick(both(fx, (x) => [x.userId])),
    workspace_id: pick(both(fx, (x) => [x.workspaceId])),
    "query:workspace_id": pick(both(fx, (x) => [x.workspaceId])),
    "query:id": pick(both(fx, (x) => [x.generationId])),
    "allowed_providers[]": pick(PROVIDERS),
    "ignored_providers[]": pick(PROVIDERS),
    "order[]": pick(PROVIDERS),
    "only[]": pick(PROVIDERS),
    "ignore[]": pick(PROVIDERS),
    url: pick(URLS),
    callback_url: pick(URLS),
    previous_job_id: pick(both(fx, (x) => [x.videoJobId])),
    pattern: pick(PATTERNS),
    voice: pick(["alloy", "nova", "x"]),
    prompt: pick(["a cat on a mat", "x"]),
    duration: pick([4, 8]),
    expires_at: pick(["2001-01-01T00:00:00Z", "2099-01-01T00:00:00+02:00", "2099-13-45T99:99:99Z"]),
  };
  // Only BYOK bodies name a provider by slug; elsewhere `provider` is the preferences object.
  if (op.path.startsWith("/byok")) table.provider = pick(PROVIDERS);
  return (name) => table[name];
}
