// The attempt runner: failover order, non-retryable stops, deadlines, and the final status mapping.
import { describe, expect, it } from "vitest";
import { runAttempts } from "../../src/inference/attempts";
import { UpstreamError } from "../../src/providers/errors";
import { planRoute } from "../../src/routing/plan";
import { context, endpoint, model } from "../routing/fixtures";

const plan = (n: number, over: Parameters<typeof endpoint>[1] = {}) =>
  planRoute(
    { modality: "embeddings", model: "v/m" },
    context([
      model(
        "v/m",
        Array.from({ length: n }, (_, i) => endpoint(`p${i}`, over)),
      ),
    ]),
  );
const http = (status: number, retryAfterSeconds?: number, providerCode?: string) =>
  new UpstreamError({ kind: "http", status, retryAfterSeconds, providerCode, message: `answered ${status}` });
const platform = async () => ({ source: "platform" as const, apiKey: "k" });

async function run(
  n: number,
  outcomes: Array<UpstreamError | "ok" | "hang">,
  timeoutStatus: 408 | 524 = 524,
) {
  const seen: string[] = [];
  const result = await runAttempts(plan(n, { timeouts: { first_byte_ms: 50 } }), {
    modality: "embeddings",
    timeoutStatus,
    resolveCredential: platform,
    call: async (attempt, ctx) => {
      seen.push(attempt.endpoint.provider);
      const o = outcomes[seen.length - 1];
      if (o === "ok") return attempt.endpoint.provider;
      if (o === "hang") return new Promise<string>(() => {});
      expect(ctx.signal.aborted).toBe(false);
      throw o;
    },
  });
  return { result, seen };
}

describe("runAttempts", () => {
  it("fails over on 429/5xx until one succeeds", async () => {
    const { result, seen } = await run(3, [http(503), http(429), "ok"]);
    expect(seen).toEqual(["p0", "p1", "p2"]);
    expect(result.ok && result.value).toBe("p2");
    expect(result.log.map((l) => l.outcome)).toEqual(["http", "http", "ok"]);
  });

  it("stops at a non-retryable 400 and reports it as 400", async () => {
    const { result, seen } = await run(2, [http(400)]);
    expect(seen).toEqual(["p0"]);
    expect(!result.ok && result.error.status).toBe(400);
  });

  it("all 429 with hints -> 429 with the largest Retry-After and the provider code", async () => {
    const { result } = await run(2, [http(429, 3, "rl"), http(429, 9, "rl2")]);
    if (result.ok) throw new Error("expected failure");
    expect(result.error.status).toBe(429);
    expect(result.error.headers).toEqual({ "Retry-After": "9" });
    expect(result.error.metadata).toMatchObject({ provider_code: "rl2" });
  });

  it("all 429 but one without a hint -> no Retry-After", async () => {
    const { result } = await run(2, [http(429, 3), http(429)]);
    expect(!result.ok && result.error.headers).toBeUndefined();
  });

  it.each([
    [[http(500), http(502)], 502],
    [[http(503), new UpstreamError({ kind: "connection", message: "x" })], 503],
    [[http(529), http(529)], 529],
    [[http(500), http(529)], 529],
  ] as const)("maps %j to %i", async (outcomes, status) => {
    const { result } = await run(2, [...outcomes]);
    expect(!result.ok && result.error.status).toBe(status);
  });

  it("a hung attempt is cut at its deadline and the next one runs; all hung -> 524 (408 for embeddings)", async () => {
    const { result, seen } = await run(2, ["hang", "ok"]);
    expect(seen).toEqual(["p0", "p1"]);
    expect(result.ok).toBe(true);
    expect((await run(1, ["hang"])).result).toMatchObject({ ok: false, error: { status: 524 } });
    expect((await run(1, ["hang"], 408)).result).toMatchObject({ ok: false, error: { status: 408 } });
  });

  it("a credential that cannot be resolved is refused without calling the adapter", async () => {
    let calls = 0;
    const result = await runAttempts(plan(1), {
      modality: "embeddings",
      resolveCredential: async () => null,
      call: async () => {
        calls++;
        return 1;
      },
    });
    expect(calls).toBe(0);
    expect(!result.ok && result.error.status).toBe(503);
  });
});
