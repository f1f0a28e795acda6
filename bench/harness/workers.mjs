// Builds the gateway bundle as `wrangler deploy` would, and runs it under Miniflare beside the passthrough
// Worker in one workerd: the gateway with wrangler.toml's own bindings (D1, Durable Objects, rate limiting,
// vars), each Worker on its own loopback port, state in the bench's own directory.
import { execFileSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { convertV4MiniflareOptions, Log, LogLevel, Miniflare } from "miniflare";
import { quiet } from "../../scripts/lib/d1.mjs";

const root = new URL("../..", import.meta.url).pathname;

/**
 * `wrangler deploy --dry-run` of the top-level (global) deployment into `outdir`: the exact bundle a
 * deploy uploads. `entry` replaces wrangler.toml's `main` (the counting mode's wrapper).
 */
export function buildBundle(outdir, entry) {
  const args = ["wrangler", "deploy", ...(entry ? [entry] : []), "--dry-run", "--outdir", outdir, "--env="];
  try {
    execFileSync("npx", args, { cwd: root, env: quiet, stdio: ["ignore", "pipe", "pipe"] });
  } catch (error) {
    throw new Error(`wrangler deploy --dry-run failed:\n${error.stdout ?? ""}${error.stderr ?? ""}`);
  }
  // Named after the entry (index.js, counting-entry.js): the one module in the directory.
  const [module] = readdirSync(outdir).filter((f) => f.endsWith(".js"));
  return join(outdir, module);
}

/** wrangler.toml's bindings for the global deployment, as Miniflare worker options (no script). */
async function gatewayOptions() {
  // Imported here: loading wrangler takes a few seconds and only this needs it.
  const { unstable_getMiniflareWorkerOptions } = await import("wrangler");
  const { workerOptions } = unstable_getMiniflareWorkerOptions(join(root, "wrangler.toml"), "");
  // The bundle is one module: the rules for finding others do not apply (and Miniflare 5 refuses them).
  const { modulesRules: _rules, ...options } = workerOptions;
  return options;
}

/**
 * Starts workerd with the gateway (`bundle`) and the passthrough Worker, both forwarding to `upstreamUrl`.
 * `providerSlug`/`providerKey` become the gateway's PROVIDER_KEYS. Returns each Worker's base URL.
 */
export async function startWorkers({ bundle, upstreamUrl, persistDir, providerSlug, providerKey }) {
  const options = await gatewayOptions();
  // wrangler hands out Miniflare 4's option shape; Miniflare 5 converts it.
  const config = convertV4MiniflareOptions({
    // Only warnings and errors (a gateway 500 logs its cause with console.error).
    log: new Log(LogLevel.WARN),
    resourcePersistencePath: persistDir,
    // No fetch of the `Request.cf` placeholder from the internet.
    cf: false,
    workers: [
      {
        ...options,
        name: "gateway",
        // Module names are paths relative to the root: the bundle's own directory.
        rootPath: dirname(bundle),
        modules: true,
        scriptPath: bundle,
        bindings: {
          ...options.bindings,
          PROVIDER_KEYS: JSON.stringify({ [providerSlug]: providerKey }),
          // A fixed throwaway master key: the bench makes no BYOK records.
          BYOK_MASTER_KEYS: JSON.stringify({ 1: Buffer.alloc(32, 7).toString("base64") }),
        },
        // Its own port, straight into the Worker (no Miniflare entry proxy), like the passthrough's.
        unsafeDirectSockets: [{ host: "127.0.0.1", port: 0 }],
      },
      {
        name: "passthrough",
        rootPath: join(root, "bench/harness"),
        modules: true,
        scriptPath: join(root, "bench/harness/passthrough-worker.js"),
        compatibilityDate: options.compatibilityDate,
        compatibilityFlags: options.compatibilityFlags,
        bindings: { UPSTREAM_URL: upstreamUrl, UPSTREAM_KEY: providerKey },
        unsafeDirectSockets: [{ host: "127.0.0.1", port: 0 }],
      },
    ],
  });
  const mf = new Miniflare(config);
  await mf.ready;
  const base = async (name) => (await mf.unsafeGetDirectURL(name)).origin;
  return { mf, gateway: await base("gateway"), passthrough: await base("passthrough") };
}
