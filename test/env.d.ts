// Test-only bindings added in vitest.config.ts.
declare namespace Cloudflare {
  interface Env extends import("../src/env").Bindings {
    TEST_MIGRATIONS: import("cloudflare:test").D1Migration[];
  }
}
