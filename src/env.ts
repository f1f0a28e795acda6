// Worker bindings and per-request context variables, typed once for the whole app.
import type { DataRegion } from "../regions";
import type { AuthContext } from "./db/auth-records";
import type { RecordsMessage } from "./generations/insert";
import type { Ledger } from "./ledger/object";
import type { RequestTrace } from "./lib/request-log";

export interface Bindings {
  DB: D1Database;
  LEDGER: DurableObjectNamespace<Ledger>;
  // VIDEO_JOBS (the VideoJob Durable Objects) is declared beside its class in videos/job.ts, so that
  // this file, which every module imports, imports nothing that imports it back.
  ABUSE_LIMITER?: RateLimit;
  /** Generation records leave the request path through this queue (src/generations); absent: straight to D1. */
  GENERATIONS?: Queue<RecordsMessage>;
  /** "d1": write generation records straight to D1 even with the queue bound (the tests set it). */
  GENERATION_RECORDS?: string;
  REGION: DataRegion;
  /** JSON {"<version>": "<base64 32-byte key>"}; the highest version encrypts new secrets. */
  BYOK_MASTER_KEYS?: string;
  /** JSON {"<provider slug>": "<platform API key>"}. */
  PROVIDER_KEYS?: string;
  /** JSON overrides of the free-model limits: {per_minute, per_day, per_day_high_tier, tier_threshold_usd}. */
  FREE_MODEL_LIMITS?: string;
  /** Milliseconds, shorter than the 10-minute default lease of a reservation (local kill tests only). */
  LEDGER_LEASE_MS?: string;
}

export interface Variables {
  requestId: string;
  /** What the request did, for its log line and Server-Timing (lib/request-log.ts). */
  trace: RequestTrace;
  auth: AuthContext;
  /** false once the body is parsed, true once the route's validator judged it (middleware/body.ts). */
  bodyJudged?: boolean;
}

export type AppEnv = { Bindings: Bindings; Variables: Variables };
