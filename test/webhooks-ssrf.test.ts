// Webhook URL safety: a corpus of internal, disguised and malformed targets, none of which is ever contacted.
import { env } from "cloudflare:test";
import { eq } from "drizzle-orm";
import { afterEach, describe, expect, it, vi } from "vitest";
import { getDb, tables } from "../src/db/client";
import { attemptDelivery } from "../src/webhooks/delivery";
import { checkWebhookUrl, parseIpv6 } from "../src/webhooks/ssrf";
import { createAccount } from "./helpers/accounts";
import { BLOCKED_URLS } from "./helpers/ssrf-corpus";

const ALLOWED_URLS = [
  "https://hooks.example.com/video",
  "https://hooks.example.com:443/video?x=1",
  "https://8.8.8.8/hook",
  "https://[2606:4700:4700::1111]/hook",
  "https://sub.domain.example.org/a/b",
];

afterEach(() => vi.restoreAllMocks());

describe("checkWebhookUrl", () => {
  it("refuses a corpus of more than 60 internal or malformed targets", () => {
    expect(BLOCKED_URLS.length).toBeGreaterThanOrEqual(60);
    const accepted = BLOCKED_URLS.filter((u) => checkWebhookUrl(u).ok);
    expect(accepted).toEqual([]);
  });

  it("accepts public https endpoints on the default port", () => {
    for (const u of ALLOWED_URLS) expect(checkWebhookUrl(u), u).toMatchObject({ ok: true });
  });

  it("says why a URL is refused", () => {
    expect(checkWebhookUrl("http://hooks.example.com/")).toEqual({
      ok: false,
      reason: "the URL must use https",
    });
    expect(checkWebhookUrl("https://0x7f000001/")).toMatchObject({
      ok: false,
      reason: expect.stringContaining("IPv4"),
    });
  });

  it("refuses userinfo even when empty, which the URL parser drops", () => {
    for (const u of [
      "https://:@example.com/",
      "https://@example.com/",
      "https:@example.com/",
      "https:\\\\:@example.com/",
      "HTTPS://:@example.com/",
    ]) {
      // The parsed URL shows no credentials at all: only the raw text gives them away.
      expect(new URL(u).href, u).toBe("https://example.com/");
      expect(checkWebhookUrl(u), u).toEqual({ ok: false, reason: "the URL must not carry credentials" });
    }
    expect(checkWebhookUrl("https://:\t@example.com/")).toMatchObject({ ok: false });
    // An @ after the authority is part of the path, query or fragment.
    for (const u of ["https://example.com/@x", "https://example.com/?a=@x", "https://example.com/#@x"]) {
      expect(checkWebhookUrl(u), u).toMatchObject({ ok: true });
    }
  });

  it("parses IPv6 forms, rejecting malformed ones", () => {
    expect(parseIpv6("::1")).toEqual([0, 0, 0, 0, 0, 0, 0, 1]);
    expect(parseIpv6("::ffff:127.0.0.1")).toEqual([0, 0, 0, 0, 0, 0xffff, 0x7f00, 1]);
    expect(parseIpv6("1:2:3:4:5:6:7:8::9")).toBeNull();
    expect(parseIpv6("1::2::3")).toBeNull();
    expect(parseIpv6("12345::")).toBeNull();
  });
});

describe("delivery re-checks the URL", () => {
  it("records a refused attempt without any outbound request", async () => {
    const acct = await createAccount();
    const fetchSpy = vi.spyOn(globalThis, "fetch");
    const jobId = `job-${crypto.randomUUID()}`;
    for (const [i, url] of BLOCKED_URLS.entries()) {
      const outcome = await attemptDelivery(
        env,
        { jobId, workspaceId: acct.workspaceId, webhookId: `msg_${i}`, url, body: "{}" },
        1,
      );
      expect(outcome).toMatchObject({ ok: false, retry: false });
    }
    expect(fetchSpy).not.toHaveBeenCalled();
    const rows = await getDb(env.DB)
      .select()
      .from(tables.webhookDeliveries)
      .where(eq(tables.webhookDeliveries.jobId, jobId));
    expect(rows).toHaveLength(BLOCKED_URLS.length);
    expect(rows.every((r) => r.statusCode === null && r.error?.startsWith("URL refused"))).toBe(true);
  });
});
