// Turns measured rounds into figures (medians and ranges of paired gateway/passthrough rounds) and prints
// them, with the counting mode's per-request tallies.
import { summary } from "./stats.mjs";

/**
 * Paired per-round figures: each round's gateway phase against the passthrough phase beside it. With
 * `chunks` (the upstream's gaps between its first and last piece), the added time per chunk: the added
 * first-to-last-byte p50 over those gaps.
 */
export function figuresOf(rounds, chunks) {
  const pairs = rounds.map(({ gateway: g, passthrough: p, against: a }) => ({
    gateway_rps: g.rps,
    passthrough_rps: p.rps,
    ratio: g.rps / p.rps,
    gateway_p50_ms: g.latency_ms.p50,
    passthrough_p50_ms: p.latency_ms.p50,
    added_p50_ms: g.latency_ms.p50 - p.latency_ms.p50,
    added_p99_ms: g.latency_ms.p99 - p.latency_ms.p99,
    ...(g.ttfb_ms
      ? {
          added_ttfb_p50_ms: g.ttfb_ms.p50 - p.ttfb_ms.p50,
          completion_ratio: g.latency_ms.p50 / p.latency_ms.p50,
        }
      : {}),
    ...(chunks && g.body_ms ? { added_per_chunk_p50_ms: (g.body_ms.p50 - p.body_ms.p50) / chunks } : {}),
    ...(g.cpu_ms_per_request != null
      ? {
          gateway_cpu_ms: g.cpu_ms_per_request,
          passthrough_cpu_ms: p.cpu_ms_per_request,
          cpu_ratio: p.cpu_ms_per_request / g.cpu_ms_per_request,
        }
      : {}),
    // --against: this gateway against the other revision's, in the same round.
    ...(a
      ? {
          vs_against_ratio: g.rps / a.rps,
          vs_against_added_p50_ms: g.latency_ms.p50 - a.latency_ms.p50,
          ...(g.cpu_ms_per_request != null
            ? { vs_against_cpu_ratio: a.cpu_ms_per_request / g.cpu_ms_per_request }
            : {}),
        }
      : {}),
  }));
  const out = {};
  for (const name of Object.keys(pairs[0] ?? {})) out[name] = summary(pairs.map((x) => x[name]));
  return out;
}

const range = (s, unit = "") => `${s.median}${unit} (${s.min}..${s.max})`;
const signed = (s, digits = 2) => {
  const f = (x) => `${x >= 0 ? "+" : ""}${x.toFixed(digits)}`;
  return `${f(s.median)} ms (${f(s.min)}..${f(s.max)})`;
};

/** The headline figure of a scenario, as the README table shows it (with `--cpu`, workerd's CPU per request after it). */
export function headline(scenario, f) {
  let out = mainFigure(scenario, f);
  const ms = (s) => s.median.toFixed(3);
  if (f.cpu_ratio) {
    out += `; workerd CPU per request ${ms(f.gateway_cpu_ms)} vs ${ms(f.passthrough_cpu_ms)} ms (${range(f.cpu_ratio)}x)`;
  }
  if (f.vs_against_ratio) {
    out += `; against the other revision: ${range(f.vs_against_ratio)}x req/s, p50 ${signed(f.vs_against_added_p50_ms)}`;
    if (f.vs_against_cpu_ratio) out += `, CPU ${range(f.vs_against_cpu_ratio)}x`;
  }
  return out;
}

function mainFigure(scenario, f) {
  switch (scenario.figure) {
    case "throughput":
      return `${range(f.ratio)}x; gateway ${Math.round(f.gateway_rps.median)} vs ${Math.round(f.passthrough_rps.median)} req/s`;
    case "latency":
      return `p50 ${signed(f.added_p50_ms)}, p99 ${signed(f.added_p99_ms)}`;
    case "stream":
      return `${range(f.ratio)}x streams/s; TTFB p50 ${signed(f.added_ttfb_p50_ms)}${
        f.added_per_chunk_p50_ms != null ? `; per chunk p50 ${signed(f.added_per_chunk_p50_ms, 3)}` : ""
      }`;
    case "completion":
      return `${range(f.completion_ratio)}x; gateway ${f.gateway_p50_ms.median.toFixed(1)} vs ${f.passthrough_p50_ms.median.toFixed(1)} ms`;
    default:
      return "";
  }
}

export function targetText(target = {}) {
  const parts = [];
  if (target.ratio != null) parts.push(`>= ${target.ratio}x`);
  if (target.addedP50Ms != null) parts.push(`p50 <= +${target.addedP50Ms} ms`);
  if (target.addedP99Ms != null) parts.push(`p99 <= +${target.addedP99Ms} ms`);
  if (target.addedTtfbP50Ms != null) parts.push(`TTFB p50 <= +${target.addedTtfbP50Ms} ms`);
  if (target.addedPerChunkP50Ms != null) parts.push(`per chunk p50 <= +${target.addedPerChunkP50Ms} ms`);
  if (target.completionRatio != null) parts.push(`<= ${target.completionRatio}x`);
  return parts.length > 0 ? parts.join(", ") : "none (a reference)";
}

/** The timing table: one line per scenario (markdown, so it can go into the README as it is). */
export function timingTable(results) {
  const lines = [
    "| scenario | gateway vs passthrough: median (range over rounds) | target | failed |",
    "|---|---|---|---|",
  ];
  for (const r of results) {
    const figure = r.skipped ? `skipped: ${r.skipped}` : headline(r, r.figures);
    lines.push(`| ${r.title} | ${figure} | ${targetText(r.target)} | ${r.skipped ? "" : r.failed} |`);
  }
  return lines.join("\n");
}

/** Per-request averages from a counting snapshot: totals by kind and place, and by what was called. */
export function perRequest(snapshot, upstreamCalls) {
  const n = snapshot.requests || 1;
  const per = (x) => Number((x / n).toFixed(3));
  const totals = {};
  for (const row of snapshot.rows) {
    const key = `${row.kind}_${row.place}`;
    totals[key] = (totals[key] ?? 0) + row.count;
  }
  return {
    requests: snapshot.requests,
    statuses: snapshot.statuses,
    upstream_calls: per(upstreamCalls),
    per_request: Object.fromEntries(Object.entries(totals).map(([k, v]) => [k, per(v)])),
    calls: snapshot.rows
      .map((row) => ({
        ...row,
        per_request: per(row.count),
        ms_each: Number((row.ms / row.count).toFixed(2)),
      }))
      .sort((a, b) => b.count - a.count),
  };
}

const fmt = (x) => (x == null ? "0" : String(x));

export function countingTable(results) {
  const lines = [
    "| scenario | requests | D1 queries: request path / background | DO calls: request path / background | waitUntil | timers fired: request path / background | ledger object's D1 | queue sends / consumer's D1 + DO calls | upstream calls | waits before / after the upstream call (ms) |",
    "|---|---|---|---|---|---|---|---|---|---|",
  ];
  for (const r of results) {
    if (r.skipped) {
      lines.push(`| ${r.title} | skipped: ${r.skipped} | | | | | | | | |`);
      continue;
    }
    const p = r.counts.per_request;
    const queueSends = (p.queue_request_path ?? 0) + (p.queue_background ?? 0);
    const wait = (label) => r.counts.calls.find((c) => c.kind === "wait" && c.label === label)?.ms_each ?? 0;
    lines.push(
      `| ${r.title} | ${r.counts.requests} | ${fmt(p.d1_request_path)} / ${fmt(p.d1_background)} | ` +
        `${fmt(p.do_request_path)} / ${fmt(p.do_background)} | ` +
        `${fmt((p.waitUntil_request_path ?? 0) + (p.waitUntil_background ?? 0))} | ` +
        `${fmt(p.timer_request_path)} / ${fmt(p.timer_background)} | ${fmt(p.d1_ledger_object)} | ` +
        `${fmt(Number(queueSends.toFixed(3)))} / ${fmt(p.d1_other_handler)} + ${fmt(p.do_other_handler)} | ` +
        `${r.counts.upstream_calls} | ${wait("request start -> upstream call")} / ${wait("upstream call -> response")} |`,
    );
  }
  return lines.join("\n");
}

/** Issue 11's memory target: growth of workerd's resident memory over the requests, after a warm-up. */
export function memoryTable(results) {
  const lines = [
    "| scenario | requests | workerd RSS before / after (MB) | growth | gateway isolate's V8 heap after a full GC, before / after (MB) | heap growth | target |",
    "|---|---|---|---|---|---|---|",
  ];
  for (const r of results) {
    if (r.skipped) {
      lines.push(`| ${r.title} | skipped: ${r.skipped} | | | | | |`);
      continue;
    }
    lines.push(
      `| ${r.title} | ${r.requests} | ${r.rss_before_mb} / ${r.rss_after_mb} | ${r.growth_mb} MB | ${r.heap_before_mb ?? "-"} / ${r.heap_after_mb ?? "-"} | ${r.heap_growth_mb ?? "-"} MB | <= 5 MB over 10k |`,
    );
  }
  return lines.join("\n");
}

export function countingDetail(results) {
  const out = [];
  for (const r of results) {
    if (r.skipped) continue;
    out.push(`${r.id} (${r.counts.requests} requests, statuses ${JSON.stringify(r.counts.statuses)}):`);
    for (const c of r.counts.calls) {
      out.push(
        `  ${c.kind.padEnd(9)} ${c.place.padEnd(16)} ${c.label.padEnd(44)} ${String(c.per_request).padStart(7)}/req  ${c.ms_each} ms each`,
      );
    }
  }
  return out.join("\n");
}

/** "gateway 4.1, d1:db 2.3, ..." for the isolates that did work, biggest first. */
const isolatesText = (isolates) =>
  Object.entries(isolates)
    .sort((a, b) => b[1] - a[1])
    .map(([id, ms]) => `${id.replace(/^core:user:/, "")} ${ms}`)
    .join(", ");

export function profileTable(results) {
  const lines = [
    "| scenario | workerd CPU ms per request, gateway arm (by isolate) | passthrough arm (by isolate) | gateway isolate's top owners of CPU |",
    "|---|---|---|---|",
  ];
  for (const r of results) {
    if (r.skipped) {
      lines.push(`| ${r.title} | skipped: ${r.skipped} | | |`);
      continue;
    }
    const { gateway: g, passthrough: p } = r.profile;
    const owners = g.by_owner
      .slice(0, 5)
      .map((o) => `${o.name} ${(o.share * 100).toFixed(0)}%`)
      .join(", ");
    lines.push(
      `| ${r.title} | ${g.cpu_ms_per_request} (${isolatesText(g.isolates_cpu_ms_per_request)}) | ` +
        `${p.cpu_ms_per_request} (${isolatesText(p.isolates_cpu_ms_per_request)}) | ${owners} |`,
    );
  }
  return lines.join("\n");
}

export function profileDetail(results) {
  const out = [];
  for (const r of results) {
    if (r.skipped) continue;
    const g = r.profile.gateway;
    out.push(`${r.id}: gateway ${g.responses} requests, ${g.busy_ms} ms busy (profile: ${g.file})`);
    for (const o of g.by_owner) out.push(`  ${(o.share * 100).toFixed(1).padStart(5)}%  ${o.name}`);
    out.push("  top functions (self time):");
    for (const f of g.by_function) out.push(`  ${(f.share * 100).toFixed(1).padStart(5)}%  ${f.name}`);
    out.push("  by nearest src/ file (libraries and runtime calls below it included):");
    for (const f of g.by_src_file ?? []) out.push(`  ${(f.share * 100).toFixed(1).padStart(5)}%  ${f.name}`);
    out.push("  by nearest src/ function:");
    for (const f of g.by_src_function ?? [])
      out.push(`  ${(f.share * 100).toFixed(1).padStart(5)}%  ${f.name}`);
  }
  return out.join("\n");
}

/** Isolates grouped as the README shows them: the Worker itself, Miniflare's simulators, the rest. */
function byPart(isolates, own) {
  const parts = { worker: 0, d1: 0, ratelimit: 0, outbound: 0, other: 0 };
  for (const [id, ms] of Object.entries(isolates)) {
    const part =
      id === `core:user:${own}`
        ? "worker"
        : id.startsWith("d1:")
          ? "d1"
          : id.startsWith("ratelimit:")
            ? "ratelimit"
            : id.startsWith("outbound:")
              ? "outbound"
              : "other";
    parts[part] += ms;
  }
  return parts;
}

/** The profile mode's figures in one line per scenario (for the README). */
export function profileSummaryTable(results) {
  const lines = [
    "| scenario | workerd CPU ms per request, gateway arm: gateway isolate + D1 sim + rate-limit sim + outbound | passthrough arm: Worker + outbound | gateway isolate's top owners |",
    "|---|---|---|---|",
  ];
  const f = (x) => x.toFixed(2);
  for (const r of results) {
    if (r.skipped) continue;
    const g = byPart(r.profile.gateway.isolates_cpu_ms_per_request, "gateway");
    const p = byPart(r.profile.passthrough.isolates_cpu_ms_per_request, "passthrough");
    const owners = r.profile.gateway.by_owner
      .slice(0, 4)
      .map((o) => `${o.name} ${(o.share * 100).toFixed(0)}%`)
      .join(", ");
    lines.push(
      `| ${r.title} | ${f(r.profile.gateway.cpu_ms_per_request)} = ${f(g.worker)} + ${f(g.d1)} + ${f(g.ratelimit)} + ${f(g.outbound)} | ` +
        `${f(r.profile.passthrough.cpu_ms_per_request)} = ${f(p.worker)} + ${f(p.outbound)} | ${owners} |`,
    );
  }
  return lines.join("\n");
}
