// Dumps the OpenAPI document the Worker serves (GET /api/v1/openapi.json from the bundle `wrangler deploy`
// builds, run in workerd) and checks it: `redocly lint` (redocly.yaml) and @readme/openapi-parser's validate.
// `--out FILE` keeps the document (default: a temporary file, removed after).
import { execFile, execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs, promisify } from "node:util";
import { compileErrors, validate } from "@readme/openapi-parser";
import { convertV4MiniflareOptions, Log, LogLevel, Miniflare } from "miniflare";
import { bundleModules } from "./lib/bundle.mjs";
import { quiet } from "./lib/d1.mjs";

const root = new URL("..", import.meta.url).pathname;
const { values } = parseArgs({ options: { out: { type: "string" } } });
const dir = mkdtempSync(join(tmpdir(), "openapi-check-"));
const file = values.out ? resolve(values.out) : join(dir, "openapi.json");

/** wrangler.toml's compatibility date and flags (top level: the global deployment). */
function compatibility() {
  const toml = readFileSync(join(root, "wrangler.toml"), "utf8");
  const date = /^compatibility_date\s*=\s*"([^"]+)"/m.exec(toml)?.[1];
  const flags = /^compatibility_flags\s*=\s*\[([^\]]*)\]/m.exec(toml)?.[1] ?? "";
  return { compatibilityDate: date, compatibilityFlags: [...flags.matchAll(/"([^"]+)"/g)].map((m) => m[1]) };
}

async function servedDocument() {
  const outdir = join(dir, "bundle");
  await promisify(execFile)("npx", ["wrangler", "deploy", "--dry-run", "--outdir", outdir, "--env="], {
    cwd: root,
    env: quiet,
    maxBuffer: 64 * 1024 * 1024,
  });
  // Serving the document touches no binding: the Worker alone, with its compatibility settings.
  // (Miniflare 5 takes Miniflare 4's option shape through its converter, as the bench does.)
  const mf = new Miniflare(
    convertV4MiniflareOptions({
      log: new Log(LogLevel.WARN),
      cf: false,
      rootPath: outdir,
      modules: bundleModules(outdir),
      ...compatibility(),
      bindings: { REGION: "global" },
    }),
  );
  try {
    const res = await mf.dispatchFetch("http://gateway.test/api/v1/openapi.json");
    if (res.status !== 200) throw new Error(`GET /api/v1/openapi.json answered ${res.status}`);
    return await res.text();
  } finally {
    await mf.dispose();
  }
}

let failed = false;
try {
  writeFileSync(file, await servedDocument());
  console.log(`openapi: document written to ${file}`);
  try {
    execFileSync(
      "npx",
      ["redocly", "lint", file, "--config", join(root, "redocly.yaml"), "--format", "stylish"],
      {
        env: { ...quiet, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" },
        stdio: "inherit",
      },
    );
    console.log("openapi: redocly lint passed");
  } catch {
    failed = true;
    console.error("openapi: redocly lint FAILED");
  }
  const result = await validate(file);
  if (result.valid && result.warnings.length === 0)
    console.log("openapi: @readme/openapi-parser validate passed");
  else {
    failed ||= !result.valid;
    console.error(`openapi: @readme/openapi-parser validate:\n${compileErrors(result)}`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
