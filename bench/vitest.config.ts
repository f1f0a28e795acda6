// Runs the ledger benchmark inside workerd with the Worker's own bindings (the test pool's setup, not a test).
import path from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

export default defineConfig(async () => {
  const root = path.join(import.meta.dirname, "..");
  const migrations = await readD1Migrations(path.join(root, "schema/migrations"));
  return {
    root,
    plugins: [
      cloudflareTest({
        // SELF.fetch reaches the bench worker, each call in its own request context.
        main: "./bench/ledger-worker.ts",
        wrangler: { configPath: "./wrangler.toml" },
        miniflare: {
          bindings: { TEST_MIGRATIONS: migrations },
          // The bench-only object that answers at once (see EmptyLedger in bench/ledger-worker.ts).
          durableObjects: { EMPTY_LEDGER: "EmptyLedger" },
        },
      }),
    ],
    test: {
      setupFiles: ["./test/setup.ts"],
      include: ["bench/ledger.bench.ts", "bench/gateway.bench.ts"],
      testTimeout: 600_000,
    },
  };
});
