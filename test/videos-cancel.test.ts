// POST /videos/{id}/cancel: a request answered 4xx leaves the job exactly as it was.
import { describe, expect, it } from "vitest";
import { createAccount, createKey } from "./helpers/accounts";
import { BASE, type CallOptions, call, errorOf, send } from "./helpers/http";
import { poll, stateOf, step, submitOk } from "./helpers/videos";

// Many polls before done: the job stays in_progress however often its alarm fires during the test.
const body = {
  model: "sandbox/video-mini",
  prompt: "a lighthouse at dawn",
  duration: 4,
  resolution: "720p",
  provider: { options: { sandbox: { polls_before_done: 50 } } },
};

async function runningJob(key: string) {
  const job = await submitOk(key, body);
  await step(job.id);
  expect((await stateOf(job.id)).status).toBe("in_progress");
  return job;
}

describe("POST /videos/{id}/cancel", () => {
  it("answers every malformed or unauthorised request 4xx without touching the job", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const stranger = await createAccount({ creditsUsd: 5 });
    const disabled = await createKey(acct, { disabled: true });
    const expired = await createKey(acct, { expiresAt: "2001-01-01T00:00:00Z" });
    const europeOnly = await createKey(acct, { allowedDataRegions: ["europe"] });
    const job = await runningJob(acct.apiKey);
    const path = `/videos/${job.id}/cancel`;
    const post = (init: CallOptions = {}) => call(path, { method: "POST", key: acct.apiKey, ...init });
    const raw = (init: RequestInit) =>
      send(new Request(`${BASE}${path}`, { method: "POST", ...init, headers: { ...init.headers } }));
    const bearer = { Authorization: `Bearer ${acct.apiKey}` };
    const json = { ...bearer, "Content-Type": "application/json" };

    const cases: Array<[string, number, () => Promise<Response>]> = [
      ["no Authorization header", 401, () => post({ key: undefined })],
      ["malformed Authorization", 401, () => raw({ headers: { Authorization: "Basic abc" } })],
      ["unknown key", 401, () => post({ key: `sk-or-v1-${"0".repeat(64)}` })],
      ["disabled key", 401, () => post({ key: disabled.key })],
      ["expired key", 401, () => post({ key: expired.key })],
      ["other account's key", 404, () => post({ key: stranger.apiKey })],
      ["other account's management key", 404, () => post({ key: stranger.managementKey })],
      ["key not allowed in this region", 403, () => post({ key: europeOnly.key })],
      ["GET", 405, () => post({ method: "GET" })],
      ["PUT", 405, () => post({ method: "PUT", body: {} })],
      ["DELETE", 405, () => post({ method: "DELETE" })],
      ["PATCH", 405, () => post({ method: "PATCH", body: {} })],
      ["bad JSON", 400, () => post({ body: "{bad" })],
      ["truncated JSON", 400, () => post({ body: '{"a":' })],
      ["JSON null", 400, () => post({ body: "null" })],
      ["JSON array", 400, () => post({ body: [] })],
      ["JSON string", 400, () => post({ body: '"cancel"' })],
      ["unknown field", 400, () => post({ body: { force: true } })],
      [
        "streamed bad JSON",
        400,
        () => raw({ headers: json, body: new Blob(["{bad"]).stream(), duplex: "half" } as RequestInit),
      ],
      ["text/plain body", 400, () => post({ body: "{}", headers: { "Content-Type": "text/plain" } })],
      ["form body", 400, () => raw({ headers: bearer, body: new URLSearchParams({ force: "1" }) })],
      ["oversized body", 413, () => post({ body: { pad: "x".repeat(2 * 1024 * 1024) } })],
      ["malformed id", 400, () => call("/videos/not-a-job/cancel", { method: "POST", key: acct.apiKey })],
      [
        "upper-cased id",
        400,
        () => call(`/videos/${job.id.toUpperCase()}/cancel`, { method: "POST", key: acct.apiKey }),
      ],
      [
        "unknown id",
        404,
        () =>
          call("/videos/gen-vid-1700000000-AAAAAAAAAAAAAAAAAAAA/cancel", {
            method: "POST",
            key: acct.apiKey,
          }),
      ],
      ["trailing slash", 404, () => call(`${path}/`, { method: "POST", key: acct.apiKey })],
    ];

    for (const [name, status, make] of cases) {
      const res = await make();
      expect(res.status, name).toBe(status);
      expect((await errorOf(res)).code, name).toBe(status);
      expect((await stateOf(job.id)).status, name).toBe("in_progress");
    }
    expect(await poll(acct.apiKey, job.id)).toMatchObject({ status: "in_progress" });

    // The same job is still cancellable by a well-formed request: the batch was not a no-op by accident.
    const ok = await post({ body: {} });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ id: job.id, status: "cancelled" });
    expect((await stateOf(job.id)).status).toBe("cancelled");
  });

  it.each([
    ["no Content-Length", {}],
    ["Content-Length: 0", { "Content-Length": "0" }],
    ["only whitespace", {}, " \n"],
  ] as const)(
    "cancels with a JSON Content-Type and an empty body (%s), as clients that always send it do",
    async (_, extra, body?: string) => {
      const acct = await createAccount({ creditsUsd: 5 });
      const job = await runningJob(acct.apiKey);
      const res = await send(
        new Request(`${BASE}/videos/${job.id}/cancel`, {
          method: "POST",
          headers: { Authorization: `Bearer ${acct.apiKey}`, "Content-Type": "application/json", ...extra },
          ...(body ? { body } : {}),
        }),
      );
      expect(res.status).toBe(200);
      expect((await stateOf(job.id)).status).toBe("cancelled");
    },
  );

  it("an operation that needs a body, sent an empty one under a JSON Content-Type, says what is missing", async () => {
    const acct = await createAccount();
    const res = await send(
      new Request(`${BASE}/keys`, {
        method: "POST",
        headers: { Authorization: `Bearer ${acct.managementKey}`, "Content-Type": "application/json" },
      }),
    );
    expect(res.status).toBe(400);
    expect((await errorOf(res)).message).toContain("name");
  });

  it("cancels with no body at all", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const job = await runningJob(acct.apiKey);
    const res = await call(`/videos/${job.id}/cancel`, { method: "POST", key: acct.apiKey });
    expect(res.status).toBe(200);
    expect((await stateOf(job.id)).status).toBe("cancelled");
  });
});
