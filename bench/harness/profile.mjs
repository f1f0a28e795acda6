// Profile mode: CPU profiles (V8's sampling profiler over workerd's inspector) of every isolate in workerd
// while one arm runs: the Worker's own isolate, attributed through the bundle's source map to the source
// files and packages its time went to, and Miniflare's simulators beside it (D1, rate limiting, outbound
// fetch), which share workerd's thread locally but are other machines in production.
import { readFileSync, writeFileSync } from "node:fs";
import { SourceMap } from "node:module";

/** Sends CDP commands over one WebSocket and resolves each with its result. */
function devtools(url) {
  const socket = new WebSocket(url);
  let next = 1;
  const waiting = new Map();
  socket.addEventListener("message", (event) => {
    const msg = JSON.parse(String(event.data));
    const w = msg.id != null && waiting.get(msg.id);
    if (!w) return;
    waiting.delete(msg.id);
    if (msg.error) w.reject(new Error(`${msg.error.message}`));
    else w.resolve(msg.result);
  });
  const opened = new Promise((resolve, reject) => {
    socket.addEventListener("open", resolve, { once: true });
    socket.addEventListener("error", () => reject(new Error(`cannot open the inspector at ${url}`)), {
      once: true,
    });
  });
  return {
    opened,
    send: (method, params = {}) =>
      new Promise((resolve, reject) => {
        const id = next++;
        waiting.set(id, { resolve, reject });
        socket.send(JSON.stringify({ id, method, params }));
      }),
    close: () => socket.close(),
  };
}

const NO_SRC_FRAME = "(no src/ frame: runtime, framework, GC)";

/** Microseconds between samples asked of V8. */
const INTERVAL_US = 250;

/** The inspector's targets: one per isolate ("core:user:gateway", "d1:db", "ratelimit:ns", "outbound:0"...). */
export async function inspectorTargets(inspectorUrl) {
  const res = await fetch(`http://${inspectorUrl.host}/json/list`);
  return (await res.json()).map((t) => t.id);
}

/**
 * A full garbage collection in the `target` isolate, then the V8 heap it still uses (MB): what the isolate
 * holds, apart from whenever V8 would have collected on its own. workerd answers an idle isolate's
 * inspector only once the isolate runs again, so `poke` (a request to it) is repeated until it answered.
 */
export async function collectedHeapMb(inspectorUrl, target, poke) {
  const cdp = devtools(`ws://${inspectorUrl.host}/${target}`);
  let answered = false;
  const heap = (async () => {
    await cdp.opened;
    await cdp.send("HeapProfiler.collectGarbage");
    return (await cdp.send("Runtime.getHeapUsage")).usedSize;
  })().finally(() => {
    answered = true;
  });
  try {
    for (let i = 0; !answered && i < 100; i++) {
      await poke();
      await new Promise((r) => setTimeout(r, 50));
    }
    if (!answered) throw new Error(`the inspector of ${target} did not answer`);
    return (await heap) / (1024 * 1024);
  } finally {
    cdp.close();
  }
}

/** Runs `work` with the sampling profiler on in every `target` isolate; returns their V8 CPU profiles. */
export async function profileWhile(inspectorUrl, targets, work) {
  const sessions = targets.map((id) => ({ id, cdp: devtools(`ws://${inspectorUrl.host}/${id}`) }));
  try {
    for (const { cdp } of sessions) {
      await cdp.opened;
      await cdp.send("Profiler.enable");
      await cdp.send("Profiler.setSamplingInterval", { interval: INTERVAL_US });
      await cdp.send("Profiler.start");
    }
    await work();
    const profiles = {};
    for (const { id, cdp } of sessions) profiles[id] = (await cdp.send("Profiler.stop")).profile;
    return profiles;
  } finally {
    for (const { cdp } of sessions) cdp.close();
  }
}

/** "src/routing/plan.ts", or the package for dependencies ("zod", "hono", "drizzle-orm"). */
function ownerOf(source) {
  // drizzle-orm's maps name its TypeScript sources without the package folder (node_modules/src/...).
  if (/node_modules\/src\//.test(source)) return "drizzle-orm";
  const pkg = /.*node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(source);
  if (pkg) return pkg[1];
  const own = /(?:^|\/)((?:src|bench|schema|regions|catalog)\/.*)$/.exec(source);
  return own ? own[1] : source;
}

/** Where a profile frame's code lives: a source file or package of the bundle, or a part of the runtime. */
function frameOwner(frame, bundleName, map) {
  if (frame.functionName.startsWith("(") && !frame.url) return { owner: frame.functionName, where: "" };
  if (!frame.url) return { owner: "(runtime APIs)", where: "" };
  const file = frame.url.split("/").pop();
  if (/^(cloudflare|node)-internal:/.test(frame.url)) return { owner: `(runtime) ${frame.url}`, where: "" };
  if (!map || file !== bundleName) return { owner: file, where: "" };
  const entry = frame.lineNumber >= 0 ? map.findEntry(frame.lineNumber, frame.columnNumber) : undefined;
  if (!entry?.originalSource) return { owner: "(bundle, unmapped)", where: "" };
  const owner = ownerOf(entry.originalSource);
  return { owner, where: `${owner}:${entry.originalLine + 1}` };
}

/**
 * Self time by owner (file or package) and by function, as shares of the isolate's busy time (idle
 * excluded; "(program)" — the runtime's own work — and "(garbage collector)" kept: they are part of the cost).
 * V8 samples an isolate only while it runs, so a sample after an idle gap carries the gap in its time
 * delta: each sample counts for at most 1.5 intervals. `bundle` (with its .map) names the sources, and
 * adds each sample's nearest src/ frame (time by our own file and function, libraries and runtime included).
 */
export function summarizeProfile(profile, bundle, top = 15) {
  const map = bundle ? new SourceMap(JSON.parse(readFileSync(`${bundle}.map`, "utf8"))) : undefined;
  const bundleName = bundle?.split("/").pop();
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map();
  profile.samples.forEach((id, i) => {
    const us = Math.min(profile.timeDeltas[i] ?? 0, 1.5 * INTERVAL_US);
    selfUs.set(id, (selfUs.get(id) ?? 0) + us);
  });
  const parentOf = new Map();
  for (const n of profile.nodes) for (const child of n.children ?? []) parentOf.set(child, n.id);
  const located = new Map();
  const locate = (id) => {
    if (!located.has(id)) located.set(id, frameOwner(byId.get(id).callFrame, bundleName, map));
    return located.get(id);
  };
  /** The nearest frame of our own code (src/...) at or above a sample: who asked for the work. */
  const ownCaller = (id) => {
    for (let at = id; at != null; at = parentOf.get(at)) {
      const { owner, where } = locate(at);
      if (owner.startsWith("src/")) return `${byId.get(at).callFrame.functionName || "(anonymous)"} ${where}`;
    }
    return NO_SRC_FRAME;
  };
  const owners = new Map();
  const functions = new Map();
  const callers = new Map();
  const callerFiles = new Map();
  let busy = 0;
  const add = (m, k, us) => m.set(k, (m.get(k) ?? 0) + us);
  for (const [id, us] of selfUs) {
    const frame = byId.get(id).callFrame;
    if (frame.functionName === "(idle)") continue;
    busy += us;
    const { owner, where } = locate(id);
    add(owners, owner, us);
    add(functions, `${frame.functionName || "(anonymous)"} ${where || owner}`.trim(), us);
    if (map) {
      const caller = ownCaller(id);
      add(callers, caller, us);
      add(callerFiles, caller === NO_SRC_FRAME ? caller : caller.split(" ").pop().replace(/:\d+$/, ""), us);
    }
  }
  const share = (entries) =>
    [...entries]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, us]) => ({ name, share: Number((us / busy).toFixed(3)), ms: Math.round(us / 1000) }));
  return {
    busy_ms: Number((busy / 1000).toFixed(1)),
    by_owner: share(owners),
    by_function: share(functions),
    // Inclusive of the libraries and runtime calls below: what our own code costs, file by file.
    ...(map ? { by_src_file: share(callerFiles), by_src_function: share(callers) } : {}),
  };
}

export function writeProfile(file, profile) {
  writeFileSync(file, JSON.stringify(profile));
}
