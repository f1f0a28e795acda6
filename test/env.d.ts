// Test-only bindings added in vitest.config.ts, on top of the Worker's own.
import type { D1Migration } from "cloudflare:test";
import type { Bindings } from "../src/env";

declare global {
  namespace Cloudflare {
    interface Env extends Bindings {
      TEST_MIGRATIONS: D1Migration[];
    }
  }
}
