// Tests run inside workerd with the global deployment's bindings and the D1 migrations applied in setup.
import { readFileSync } from "node:fs";
import path from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

export default defineConfig(async () => {
  const migrations = await readD1Migrations(path.join(import.meta.dirname, "schema/migrations"));
  return {
    plugins: [
      {
        // @openrouter/sdk points at source maps it does not ship; load it without the references.
        name: "drop-missing-sdk-sourcemaps",
        enforce: "pre" as const,
        load(id: string) {
          if (!id.includes("/node_modules/@openrouter/sdk/") || !id.endsWith(".js")) return null;
          return readFileSync(id.split("?")[0]!, "utf8").replace(/^\/\/# sourceMappingURL=.*$/m, "");
        },
      },
      cloudflareTest({
        wrangler: { configPath: "./wrangler.toml" },
        miniflare: {
          bindings: {
            TEST_MIGRATIONS: migrations,
            // Generation records straight to D1 despite the GENERATIONS queue, so a test reads a record
            // as soon as its request's waitUntil work is done (test/generations/queue.test.ts uses the queue).
            GENERATION_RECORDS: "d1",
            BYOK_MASTER_KEYS: JSON.stringify({ "1": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=" }),
          },
        },
      }),
    ],
    test: {
      setupFiles: ["./test/setup.ts"],
      // test/fuzz: cases per operation and a fixed seed to replay a failure (npm run fuzz sets 100,000).
      provide: { FUZZ_RUNS: process.env.FUZZ_RUNS ?? "", FUZZ_SEED: process.env.FUZZ_SEED ?? "" },
      include: ["test/**/*.test.ts"],
      // Each request's log line (src/lib/request-log.ts) would flood the output; tests that read logs spy on console.
      onConsoleLog: (line: string) => !line.includes('"message":"request"'),
      // CI machines have two cores shared by workerd and the test runner; keep slow-but-correct tests green.
      testTimeout: 30_000,
      hookTimeout: 30_000,
    },
  };
});
