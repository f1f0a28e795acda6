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

/** Forms the corpus must cover (issue 14): userinfo tricks, disguised IPv4, mapped IPv6, name variants. */
const REQUIRED_CASES = [
  "https://user@127.0.0.1/video",
  "https://hooks.example.com@127.0.0.1/video",
  "https://:@hooks.example.com/video",
  "https://[::ffff:127.0.0.1]/video",
  "https://[::ffff:7f00:1]/video",
  "https://2130706433/video",
  "https://0177.0.0.1/video",
  "https://0x7f.1/video",
  "https://127.1/video",
  "https://169.254.169.254/latest/meta-data/",
  "https://100.64.0.1/video",
  "https://LOCALHOST./video",
  "https://foo.localhost/video",
  "https://[::1]/video",
  "https://[fd12:3456:789a::1]/video",
  "https://[fe80::1]/video",
  "http://hooks.example.com/video",
  "https://hooks.example.com:8443/video",
];

const isInternal = (url: string) => !checkWebhookUrl(url.replace(/^http:/, "https:")).ok;

/**
 * A receiver at hooks.example.com that answers 302 to an internal address. Like the runtime, the
 * mock follows the redirect itself (through the spied fetch, so the hop is counted) unless the
 * caller asked for `redirect: "manual"`.
 */
function redirectingReceiver(location = "http://127.0.0.1/admin") {
  const spy = vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const req = new Request(input, init);
    if (new URL(req.url).hostname !== "hooks.example.com") return new Response("internal", { status: 200 });
    if ((init?.redirect ?? "follow") === "follow") return globalThis.fetch(location, { method: req.method });
    return new Response(null, { status: 302, headers: { Location: location } });
  });
  return {
    urls: () => spy.mock.calls.map(([input]) => new Request(input).url),
  };
}

afterEach(() => vi.restoreAllMocks());

describe("checkWebhookUrl", () => {
  it("refuses a corpus of more than 60 internal or malformed targets", () => {
    expect(BLOCKED_URLS.length).toBeGreaterThanOrEqual(60);
    expect(BLOCKED_URLS).toEqual(expect.arrayContaining(REQUIRED_CASES));
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
    expect(checkWebhookUrl("https://a..b.com/x")).toEqual({
      ok: false,
      reason: "the URL's host has an empty label",
    });
    expect(checkWebhookUrl("https://.example.com/x")).toMatchObject({ ok: false });
    expect(checkWebhookUrl("https://example.com../x")).toMatchObject({ ok: false });
    // The root's dot at the end is a fully qualified name, not an empty label.
    expect(checkWebhookUrl("https://hooks.example.com./x")).toMatchObject({ ok: true });
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

/**
 * The ranges the hand-written checker refused before ipaddr.js took over, at both ends, with the public
 * addresses just outside them: the library must draw the same lines.
 */
const RANGE_EDGES: Array<[string, "blocked" | "allowed"]> = [
  ...(
    [
      ["0.0.0.0", "0.255.255.255", null, "1.0.0.0"],
      ["10.0.0.0", "10.255.255.255", "9.255.255.255", "11.0.0.0"],
      ["100.64.0.0", "100.127.255.255", "100.63.255.255", "100.128.0.0"],
      ["127.0.0.0", "127.255.255.255", "126.255.255.255", "128.0.0.0"],
      ["169.254.0.0", "169.254.255.255", "169.253.255.255", "169.255.0.0"],
      ["172.16.0.0", "172.31.255.255", "172.15.255.255", "172.32.0.0"],
      ["192.0.0.0", "192.0.0.255", "191.255.255.255", "192.0.1.0"],
      ["192.0.2.0", "192.0.2.255", "192.0.1.255", "192.0.3.0"],
      ["192.88.99.0", "192.88.99.255", "192.88.98.255", "192.88.100.0"],
      ["192.168.0.0", "192.168.255.255", "192.167.255.255", "192.169.0.0"],
      ["198.18.0.0", "198.19.255.255", "198.17.255.255", "198.20.0.0"],
      ["198.51.100.0", "198.51.100.255", "198.51.99.255", "198.51.101.0"],
      ["203.0.113.0", "203.0.113.255", "203.0.112.255", "203.0.114.0"],
      ["224.0.0.0", "255.255.255.255", "223.255.255.255", null],
    ] as const
  ).flatMap(([first, last, before, after]) => [
    [first, "blocked"] as [string, "blocked"],
    [last, "blocked"] as [string, "blocked"],
    ...(before ? [[before, "allowed"] as [string, "allowed"]] : []),
    ...(after ? [[after, "allowed"] as [string, "allowed"]] : []),
  ]),
  ["[::]", "blocked"],
  ["[::1]", "blocked"],
  ["[::2]", "blocked"], // IPv4-compatible ::/96
  ["[::1:0:0]", "allowed"],
  ["[::ffff:8.8.8.8]", "blocked"],
  ["[::ffff:0:808:808]", "blocked"], // IPv4-translated
  ["[64:ff9b::808:808]", "blocked"],
  ["[100::1]", "blocked"],
  ["[2001::1]", "blocked"],
  ["[2001:1ff:ffff::1]", "blocked"],
  ["[2001:200::1]", "allowed"],
  ["[2001:db8::1]", "blocked"],
  ["[2002:808:808::1]", "blocked"],
  ["[fc00::1]", "blocked"],
  ["[fdff:ffff::1]", "blocked"],
  ["[fe80::1]", "blocked"],
  ["[febf::1]", "blocked"],
  ["[fec0::1]", "blocked"],
  ["[ff02::1]", "blocked"],
  ["[2606:4700::1111]", "allowed"],
  ["[2a00:1450:4001::1]", "allowed"],
];

describe("address ranges (ipaddr.js draws the lines the hand-written checker drew)", () => {
  it.each(RANGE_EDGES)("%s is %s", (host, expected) => {
    const verdict = checkWebhookUrl(`https://${host}/hook`);
    expect(verdict.ok ? "allowed" : "blocked").toBe(expected);
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

describe("delivery never follows a redirect", () => {
  it("records a 302 to an internal address as a failed attempt, with no request to that address", async () => {
    const acct = await createAccount();
    const jobId = `job-${crypto.randomUUID()}`;
    const locations = ["http://127.0.0.1/", "https://169.254.169.254/latest/meta-data/", "https://[::1]/"];
    for (const [i, location] of locations.entries()) {
      const receiver = redirectingReceiver(location);
      const event = {
        jobId,
        workspaceId: acct.workspaceId,
        webhookId: `msg_${i}`,
        url: "https://hooks.example.com/video",
        body: "{}",
      };
      const outcome = await attemptDelivery(env, event, i + 1);
      expect(outcome, location).toEqual({
        ok: false,
        statusCode: 302,
        error: "redirect not followed",
        retry: true,
      });
      // One outbound request, to the receiver itself; none to the address it pointed at.
      expect(receiver.urls(), location).toEqual(["https://hooks.example.com/video"]);
      expect(receiver.urls().filter(isInternal), location).toEqual([]);
      vi.restoreAllMocks();
    }
    const rows = await getDb(env.DB)
      .select()
      .from(tables.webhookDeliveries)
      .where(eq(tables.webhookDeliveries.jobId, jobId));
    expect(rows.map((r) => r.statusCode)).toEqual([302, 302, 302]);
  });
});
