// Builds the gateway bundle as `wrangler deploy` would, and runs it under Miniflare beside the passthrough
// Worker in one workerd: the gateway with wrangler.toml's own bindings (D1, Durable Objects, rate limiting,
// the generation records' queue and its consumer, vars), each Worker on its own loopback port, state in
// the bench's own directory.
import { execFile } from "node:child_process";
import { createServer } from "node:net";
import { basename, dirname, join } from "node:path";
import { promisify } from "node:util";
import { convertV4MiniflareOptions, Log, LogLevel, Miniflare } from "miniflare";
import { bundleModules, entryFileOf } from "../../scripts/lib/bundle.mjs";
import { quiet } from "../../scripts/lib/d1.mjs";

const root = new URL("../..", import.meta.url).pathname;
/** The baseline Worker's one module (plain JS: nothing to build). */
const PASSTHROUGH = join(root, "bench/harness/passthrough-worker.js");
/** The counting mode's entry: src/index.ts with its bindings wrapped (see counting-entry.ts). */
export const COUNTING_ENTRY = "bench/harness/counting-entry.ts";

/**
 * `wrangler deploy --dry-run` of the top-level (global) deployment into `outdir`: the exact bundle a
 * deploy uploads. `entry` replaces wrangler.toml's `main` (the counting mode's wrapper); `cwd` is the
 * checkout built (another revision's, for --against).
 */
export async function buildBundle(outdir, entry, cwd = root) {
  const args = ["wrangler", "deploy", ...(entry ? [entry] : []), "--dry-run", "--outdir", outdir, "--env="];
  try {
    await promisify(execFile)("npx", args, { cwd, env: quiet, maxBuffer: 64 * 1024 * 1024 });
  } catch (error) {
    throw new Error(`wrangler deploy --dry-run failed:\n${error.stdout ?? ""}${error.stderr ?? ""}`);
  }
  // Named after the entry (index.js, counting-entry.js); beside it, the console's text modules.
  return join(outdir, entryFileOf(entry));
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
 * Starts workerd with the gateway (`bundles.gateway`), the counting gateway (`bundles.counting`, if
 * given: same bindings, same D1; its own Durable Object namespaces), another revision's gateway
 * (`bundles.against`, the same way) and the passthrough Worker, all
 * forwarding to `upstreamUrl`. `providerSlug`/`providerKey` become PROVIDER_KEYS. Returns each Worker's
 * base URL (and the inspector's, with `inspect`).
 */
export async function startWorkers({ bundles, upstreamUrl, persistDir, providerSlug, providerKey, inspect }) {
  const options = await gatewayOptions();
  const gateway = (name, bundle) => ({
    ...options,
    ...ownQueues(options, name),
    name,
    // Module names are paths relative to the root: the bundle's own directory.
    rootPath: dirname(bundle),
    modules: bundleModules(dirname(bundle), basename(bundle)),
    bindings: {
      ...options.bindings,
      PROVIDER_KEYS: JSON.stringify({ [providerSlug]: providerKey }),
      // A fixed throwaway master key: the bench makes no BYOK records.
      BYOK_MASTER_KEYS: JSON.stringify({ 1: Buffer.alloc(32, 7).toString("base64") }),
      ...(process.env.BENCH_RECORDS ? { GENERATION_RECORDS: process.env.BENCH_RECORDS } : {}),
    },
    // Its own port, straight into the Worker (no Miniflare entry proxy), like the passthrough's.
    unsafeDirectSockets: [{ host: "127.0.0.1", port: 0 }],
  });
  const names = Object.keys(bundles).filter((name) => bundles[name]);
  // wrangler hands out Miniflare 4's option shape; Miniflare 5 converts it.
  const config = convertV4MiniflareOptions({
    // Only warnings and errors (a gateway 500 logs its cause with console.error).
    log: new Log(LogLevel.WARN),
    // The same for the Workers' own lines: the gateway writes one per request, and echoing 1,000 of them
    // a second through this process would take CPU from the machine the figures are measured on.
    handleStructuredLogs: ({ level, message }) => {
      if (level === "warn" || level === "error") process.stderr.write(`${message}\n`);
    },
    resourcePersistencePath: persistDir,
    // No fetch of the `Request.cf` placeholder from the internet.
    cf: false,
    // The profile mode's way in (workerd's own inspector, one target per isolate).
    ...(inspect ? { inspectorPort: await freePort() } : {}),
    workers: [
      ...names.map((name) => gateway(name, bundles[name])),
      {
        name: "passthrough",
        rootPath: dirname(PASSTHROUGH),
        modules: true,
        scriptPath: PASSTHROUGH,
        compatibilityDate: options.compatibilityDate,
        compatibilityFlags: options.compatibilityFlags,
        bindings: { UPSTREAM_URL: upstreamUrl, UPSTREAM_KEY: providerKey },
        unsafeDirectSockets: [{ host: "127.0.0.1", port: 0 }],
      },
    ],
  });
  const mf = new Miniflare(config);
  await mf.ready;
  const urls = {};
  for (const name of [...names, "passthrough"]) urls[name] = (await mf.unsafeGetDirectURL(name)).origin;
  return { mf, urls, inspector: inspect ? await mf.getInspectorURL() : undefined };
}

/**
 * wrangler.toml's queues, renamed for one gateway Worker of the run: a queue has one consumer, and
 * each gateway (the timed one, the counting one) consumes what it produces.
 */
function ownQueues(options, worker) {
  const rename = (queue) => (queue ? `${queue}-${worker}` : queue);
  return {
    queueProducers: Object.fromEntries(
      Object.entries(options.queueProducers ?? {}).map(([binding, p]) => [
        binding,
        typeof p === "string" ? rename(p) : { ...p, queueName: rename(p.queueName) },
      ]),
    ),
    queueConsumers: Object.fromEntries(
      Object.entries(options.queueConsumers ?? {}).map(([queue, c]) => [
        rename(queue),
        { ...c, deadLetterQueue: rename(c.deadLetterQueue) },
      ]),
    ),
  };
}

/** A loopback port nothing listens on right now. */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}
