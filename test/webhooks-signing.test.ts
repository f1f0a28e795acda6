// Webhook signing (verified with the standardwebhooks library), secret rotation and the retry schedule.
import { env } from "cloudflare:test";
import { eq } from "drizzle-orm";
import { Webhook } from "standardwebhooks";
import { afterEach, describe, expect, it, vi } from "vitest";
import { getDb, tables } from "../src/db/client";
import {
  attemptDelivery,
  mayRetry,
  RETRY_WINDOW_MS,
  retryDelayMs,
  WEBHOOK_MAX_ATTEMPTS,
} from "../src/webhooks/delivery";
import { rotateWorkspaceSecret, signingSecrets } from "../src/webhooks/secrets";
import { isWebhookSecret, newWebhookSecret, webhookHeaders } from "../src/webhooks/signing";
import { createAccount } from "./helpers/accounts";

afterEach(() => vi.restoreAllMocks());

describe("signatures", () => {
  it("verify with the standardwebhooks library", async () => {
    const secret = newWebhookSecret();
    expect(isWebhookSecret(secret)).toBe(true);
    const body = JSON.stringify({ type: "video.completed", data: { id: "x" } });
    const ts = Math.floor(Date.now() / 1000);
    const headers = await webhookHeaders([secret], "msg_abc", ts, body);
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    // A changed body or another secret fails.
    expect(() => new Webhook(secret).verify(`${body} `, headers)).toThrow();
    expect(() => new Webhook(newWebhookSecret()).verify(body, headers)).toThrow();
  });

  it("are byte for byte what the replaced WebCrypto code signed", async () => {
    const secret = newWebhookSecret();
    const body = JSON.stringify({ type: "video.completed", data: { id: "gen-vid-1", note: "héllo" } });
    const key = await crypto.subtle.importKey(
      "raw",
      Uint8Array.from(atob(secret.slice("whsec_".length)), (c) => c.charCodeAt(0)),
      { name: "HMAC", hash: "SHA-256" },
      false,
      ["sign"],
    );
    const mac = new Uint8Array(
      await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(`msg_fixed.1767225600.${body}`)),
    );
    const expected = `v1,${btoa(String.fromCharCode(...mac))}`;
    expect(webhookHeaders([secret], "msg_fixed", 1767225600, body)["webhook-signature"]).toBe(expected);
  });

  it("carry one signature per secret during a rotation, each verifying", async () => {
    const [a, b] = [newWebhookSecret(), newWebhookSecret()];
    const body = "{}";
    const headers = await webhookHeaders([a, b], "msg_1", Math.floor(Date.now() / 1000), body);
    expect(headers["webhook-signature"]!.split(" ")).toHaveLength(2);
    expect(new Webhook(a).verify(body, headers)).toEqual({});
    expect(new Webhook(b).verify(body, headers)).toEqual({});
  });
});

describe("workspace secrets", () => {
  it("are stored encrypted, and the previous one keeps signing for the grace period", async () => {
    const acct = await createAccount();
    const first = await rotateWorkspaceSecret(env, acct.workspaceId);
    const row = await getDb(env.DB)
      .select()
      .from(tables.workspaces)
      .where(eq(tables.workspaces.id, acct.workspaceId))
      .get();
    expect(row?.webhookSecretCiphertext).not.toContain(first.slice(6));
    expect(await signingSecrets(env, acct.workspaceId)).toEqual([first]);
    const second = await rotateWorkspaceSecret(env, acct.workspaceId);
    expect(await signingSecrets(env, acct.workspaceId)).toEqual([second, first]);
    expect(await signingSecrets(env, acct.workspaceId, Date.now() + 25 * 3600_000)).toEqual([second]);
  });
});

describe("delivery", () => {
  it("POSTs the signed body once, without following redirects, and records the attempt", async () => {
    const acct = await createAccount();
    const secret = await rotateWorkspaceSecret(env, acct.workspaceId);
    const seen: Request[] = [];
    vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
      seen.push(new Request(input, init));
      return new Response(null, { status: 302, headers: { Location: "https://169.254.169.254/" } });
    });
    const jobId = `job-${crypto.randomUUID()}`;
    const body = JSON.stringify({ hello: "world" });
    const event = {
      jobId,
      workspaceId: acct.workspaceId,
      webhookId: "msg_redirect",
      url: "https://hooks.example.com/v",
      body,
    };
    const outcome = await attemptDelivery(env, event, 1);
    expect(outcome).toEqual({ ok: false, statusCode: 302, error: "redirect not followed", retry: true });
    expect(seen).toHaveLength(1);
    expect(seen[0]!.redirect).toBe("manual");
    const headers = Object.fromEntries(seen[0]!.headers);
    expect(new Webhook(secret).verify(await seen[0]!.text(), headers)).toEqual({ hello: "world" });
    const rows = await getDb(env.DB)
      .select()
      .from(tables.webhookDeliveries)
      .where(eq(tables.webhookDeliveries.jobId, jobId));
    expect(rows).toMatchObject([{ attempt: 1, statusCode: 302, webhookId: "msg_redirect" }]);
  });

  it("treats 2xx as delivered and 410 as final", async () => {
    const acct = await createAccount();
    const statuses = [204, 410, 500];
    vi.spyOn(globalThis, "fetch").mockImplementation(
      async () => new Response(null, { status: statuses.shift()! }),
    );
    const event = {
      jobId: crypto.randomUUID(),
      workspaceId: acct.workspaceId,
      webhookId: "msg_x",
      url: "https://hooks.example.com/",
      body: "{}",
    };
    expect(await attemptDelivery(env, event, 1)).toEqual({ ok: true, statusCode: 204 });
    expect(await attemptDelivery(env, event, 2)).toMatchObject({ ok: false, statusCode: 410, retry: false });
    expect(await attemptDelivery(env, event, 3)).toMatchObject({ ok: false, statusCode: 500, retry: true });
  });
});

describe("retry schedule", () => {
  it("grows exponentially with jitter, capped, within a bounded number and period", () => {
    expect(retryDelayMs(1, () => 0)).toBe(15_000);
    expect(retryDelayMs(1, () => 1)).toBe(30_000);
    expect(retryDelayMs(3, () => 0.5)).toBe(90_000);
    expect(retryDelayMs(20, () => 1)).toBe(3_600_000);
    const samples = new Set(Array.from({ length: 20 }, () => retryDelayMs(4)));
    expect(samples.size).toBeGreaterThan(1);
    const t0 = Date.now();
    expect(mayRetry(1, t0, t0)).toBe(true);
    expect(mayRetry(WEBHOOK_MAX_ATTEMPTS, t0, t0)).toBe(false);
    expect(mayRetry(2, t0, t0 + RETRY_WINDOW_MS)).toBe(false);
  });
});
