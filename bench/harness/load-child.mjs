// The load generator, in its own process (forked by bench/run.mjs, driven over IPC) so its CPU is not the
// harness's: autocannon for request/response phases; for streamed bodies, a closed loop over node:http that
// times the first body byte and the end (autocannon times only whole responses).
import http from "node:http";
import autocannon from "autocannon";
import { percentile } from "./stats.mjs";

/** Latency figures (ms) of one phase's samples. */
const latency = (ms) => ({
  p50: percentile(ms, 50),
  p90: percentile(ms, 90),
  p99: percentile(ms, 99),
  mean: ms.length ? ms.reduce((a, b) => a + b, 0) / ms.length : Number.NaN,
});

/**
 * One autocannon phase: `connections` closed loops for `durationMs` (or until `amount` responses).
 * Latencies come from every response's own timing, not autocannon's 1 ms histogram buckets.
 */
async function requestPhase(spec) {
  const samples = [];
  const statuses = {};
  const started = performance.now();
  const instance = autocannon({
    url: spec.url,
    method: spec.method,
    headers: spec.headers,
    body: spec.body,
    connections: spec.connections,
    pipelining: 1,
    timeout: 30,
    // Each connection cycles through these in turn: one per key when the arm spreads over several keys.
    ...(spec.authorizations
      ? {
          requests: spec.authorizations.map((authorization) => ({
            headers: { ...spec.headers, authorization },
          })),
        }
      : {}),
    ...(spec.amount ? { amount: spec.amount } : { duration: spec.durationMs / 1000 }),
  });
  instance.on("response", (_client, status, _bytes, ms) => {
    samples.push(ms);
    statuses[status] = (statuses[status] ?? 0) + 1;
  });
  const result = await instance;
  const seconds = (performance.now() - started) / 1000;
  return {
    responses: samples.length,
    seconds,
    rps: samples.length / seconds,
    latency_ms: latency(samples),
    statuses,
    errors: result.errors,
    timeouts: result.timeouts,
  };
}

/** One request whose body is read to the end, timing its first byte and its end (ms from sending). */
function streamOnce(agent, spec, i) {
  const headers = spec.authorizations
    ? { ...spec.headers, authorization: spec.authorizations[i % spec.authorizations.length] }
    : spec.headers;
  return new Promise((resolve) => {
    const t0 = performance.now();
    const req = http.request(spec.url, { method: spec.method, headers, agent }, (res) => {
      let ttfb = null;
      let bytes = 0;
      res.on("data", (chunk) => {
        ttfb ??= performance.now() - t0;
        bytes += chunk.length;
      });
      res.on("end", () =>
        resolve({
          status: res.statusCode,
          ttfb: ttfb ?? performance.now() - t0,
          total: performance.now() - t0,
          bytes,
        }),
      );
      res.on("error", () => resolve({ error: true }));
    });
    req.on("error", () => resolve({ error: true }));
    req.end(spec.body);
  });
}

/** `connections` loops, each starting its next stream when the last one ended, for `durationMs` (or `amount`). */
async function streamPhase(spec) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: spec.connections });
  const ttfb = [];
  const total = [];
  // First byte to last: the stream's own pace (the upstream's chunk gaps plus what each arm adds per chunk).
  const body = [];
  const statuses = {};
  const byteCounts = {};
  let errors = 0;
  let sent = 0;
  const started = performance.now();
  const deadline = started + (spec.durationMs ?? Number.POSITIVE_INFINITY);
  const more = () => (spec.amount ? sent < spec.amount : performance.now() < deadline);
  await Promise.all(
    Array.from({ length: spec.connections }, async () => {
      while (more()) {
        const r = await streamOnce(agent, spec, sent++);
        if (r.error) {
          errors++;
          continue;
        }
        statuses[r.status] = (statuses[r.status] ?? 0) + 1;
        byteCounts[r.bytes] = (byteCounts[r.bytes] ?? 0) + 1;
        ttfb.push(r.ttfb);
        total.push(r.total);
        body.push(r.total - r.ttfb);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  agent.destroy();
  return {
    responses: total.length,
    seconds,
    rps: total.length / seconds,
    latency_ms: latency(total),
    ttfb_ms: latency(ttfb),
    body_ms: latency(body),
    statuses,
    body_bytes: byteCounts,
    errors,
    timeouts: 0,
  };
}

process.on("message", async ({ id, spec }) => {
  try {
    const result = spec.tool === "stream" ? await streamPhase(spec) : await requestPhase(spec);
    process.send({ id, result });
  } catch (error) {
    process.send({ id, error: String(error?.stack ?? error) });
  }
});
