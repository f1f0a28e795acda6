// Bundles every regional deployment with `wrangler deploy --dry-run` (offline): proves all three build.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { quiet } from "./lib/d1.mjs";

const regionsDir = new URL("../regions/", import.meta.url);
const records = readdirSync(regionsDir)
  .filter((f) => f.endsWith(".json"))
  .map((f) => JSON.parse(readFileSync(new URL(f, regionsDir), "utf8")));

let failed = 0;
for (const record of records) {
  const outdir = mkdtempSync(join(tmpdir(), `dry-run-${record.name}-`));
  const args = ["wrangler", "deploy", "--dry-run", "--outdir", outdir];
  if (record.wranglerEnv) args.push("--env", record.wranglerEnv);
  try {
    execFileSync("npx", args, { env: quiet, stdio: ["ignore", "pipe", "pipe"] });
    console.log(`dry-run ${record.name}: ok`);
  } catch (error) {
    failed++;
    console.error(`dry-run ${record.name}: FAILED\n${error.stdout ?? ""}${error.stderr ?? ""}`);
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
}
process.exit(failed ? 1 : 0);
