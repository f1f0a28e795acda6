// Webhook URL safety: a corpus of internal, disguised and malformed targets, none of which is ever contacted.
import { env } from "cloudflare:test";
import { eq } from "drizzle-orm";
import { afterEach, describe, expect, it, vi } from "vitest";
import { getDb, tables } from "../src/db/client";
import { attemptDelivery } from "../src/webhooks/delivery";
import { checkWebhookUrl, parseIpv6 } from "../src/webhooks/ssrf";
import { createAccount } from "./helpers/accounts";

export const BLOCKED_URLS = [
  // scheme, credentials, port
  "http://hooks.example.com/video",
  "ftp://hooks.example.com/video",
  "ws://hooks.example.com/video",
  "javascript:alert(1)",
  "file:///etc/passwd",
  "https://user:pass@hooks.example.com/video",
  "https://user@hooks.example.com/video",
  "https://:secret@hooks.example.com/video",
  "https://hooks.example.com:8443/video",
  "https://hooks.example.com:80/video",
  "https://hooks.example.com:1/video",
  // names
  "https://localhost/video",
  "https://LOCALHOST/video",
  "https://localhost./video",
  "https://api.localhost/video",
  "https://printer.local/video",
  "https://metadata.google.internal/computeMetadata/v1/",
  "https://instance-data/latest/meta-data/",
  "https://intranet/video",
  "https://127.0.0.1.nip.io/video",
  "https://10.0.0.1.sslip.io/video",
  "https://app.localtest.me/video",
  "https://router.home.arpa/video",
  // IPv4 loopback, private, link-local, CGNAT, metadata, reserved
  "https://127.0.0.1/video",
  "https://127.1.2.3/video",
  "https://0.0.0.0/video",
  "https://10.0.0.1/video",
  "https://10.255.255.255/video",
  "https://172.16.0.1/video",
  "https://172.31.255.254/video",
  "https://192.168.1.1/video",
  "https://169.254.169.254/latest/meta-data/",
  "https://169.254.170.2/v2/credentials",
  "https://100.64.0.1/video",
  "https://100.100.100.200/latest/meta-data/",
  "https://100.127.255.255/video",
  "https://192.0.0.192/opc/v1/instance/",
  "https://192.0.2.10/video",
  "https://198.18.0.1/video",
  "https://224.0.0.1/video",
  "https://255.255.255.255/video",
  "https://240.0.0.1/video",
  // IPv4 in disguise: decimal, octal, hex, shortened
  "https://2130706433/video",
  "https://017700000001/video",
  "https://0x7f000001/video",
  "https://0x7f.0.0.1/video",
  "https://0177.0.0.1/video",
  "https://127.1/video",
  "https://0/video",
  "https://2852039166/latest/meta-data/",
  "https://0xa9fea9fe/latest/meta-data/",
  "https://0251.0376.0251.0376/latest/meta-data/",
  "https://167772161/video",
  "https://3232235777/video",
  // IPv6
  "https://[::1]/video",
  "https://[::]/video",
  "https://[0:0:0:0:0:0:0:1]/video",
  "https://[::ffff:127.0.0.1]/video",
  "https://[::ffff:7f00:1]/video",
  "https://[::ffff:169.254.169.254]/video",
  "https://[::ffff:8.8.8.8]/video",
  "https://[::127.0.0.1]/video",
  "https://[64:ff9b::a9fe:a9fe]/video",
  "https://[fe80::1]/video",
  "https://[fc00::1]/video",
  "https://[fd00:ec2::254]/latest/meta-data/",
  "https://[fec0::1]/video",
  "https://[ff02::1]/video",
  "https://[2001:db8::1]/video",
  "https://[2002:7f00:1::]/video",
  "https://[2001:0::1]/video",
  "https://[100::1]/video",
  // malformed
  "not a url",
  "https://",
  "//hooks.example.com/video",
  `https://hooks.example.com/${"a".repeat(2100)}`,
];

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
