// Webhook URL safety: only public HTTPS endpoints on the default port, checked without any network call.
import ipaddr from "ipaddr.js";

export type UrlVerdict = { ok: true; url: URL } | { ok: false; reason: string };

/** Hostnames that always mean "this machine" or an internal network, whatever DNS says. */
const BLOCKED_HOST_SUFFIXES = [
  "localhost",
  "localdomain",
  "local",
  "internal",
  "intranet",
  "lan",
  "home.arpa",
  // Names that never resolve on the public internet but do inside clusters and corporate networks:
  // Kubernetes services (`name.namespace.svc`), and the TLDs ICANN keeps undelegated for private use.
  "svc",
  "corp",
  "home",
  "invalid",
  "in-addr.arpa",
  "ip6.arpa",
  // Public wildcard DNS services that resolve a name to the IP embedded in it, or every name to loopback.
  // A list is never complete: the runtime's own refusal of private addresses is the rule, this a second wall.
  "nip.io",
  "sslip.io",
  "xip.io",
  "xip.name",
  "traefik.me",
  "localtest.me",
  "lvh.me",
  "localh.st",
  "vcap.me",
  "lacolhost.com",
  "localhost.run",
];

/**
 * Address ranges come from ipaddr.js: anything its `range()` does not call `unicast` is refused (RFC 6890
 * special-purpose space: private, loopback, link-local with the cloud metadata addresses, CGNAT, TEST-NETs,
 * benchmarking, multicast, reserved; for IPv6 also mapped, translated, NAT64, 6to4, Teredo, ORCHID,
 * documentation, unique local and site-local). These stay refused too, though the library calls them unicast.
 */
const EXTRA_BLOCKED_V6 = [
  // IPv4-compatible (deprecated, ::a.b.c.d): only ever a disguise for an IPv4 address.
  ipaddr.IPv6.parseCIDR("::/96"),
];

/** The eight 16-bit groups of an IPv6 literal (no brackets), or null when it is not one. */
export function parseIpv6(text: string): number[] | null {
  return ipaddr.IPv6.isValid(text) ? ipaddr.IPv6.parse(text).parts : null;
}

function v4Blocked(address: string): boolean {
  return ipaddr.IPv4.parse(address).range() !== "unicast";
}

function v6Blocked(groups: number[]): boolean {
  const address = new ipaddr.IPv6(groups);
  // IPv4-mapped (::ffff:a.b.c.d): a public service publishes its IPv4 address directly, so the mapped form
  // only ever serves to disguise one; refused whatever the embedded address (the library's `ipv4Mapped`).
  return address.range() !== "unicast" || EXTRA_BLOCKED_V6.some((cidr) => address.match(cidr));
}

const deny = (reason: string): UrlVerdict => ({ ok: false, reason });

/** Whether `raw` holds a space or control character, which the parser would silently strip or drop. */
function hasControlOrSpace(raw: string): boolean {
  for (let i = 0; i < raw.length; i++) {
    const code = raw.charCodeAt(i);
    if (code <= 0x20 || code === 0x7f) return true;
  }
  return false;
}

/**
 * Whether the URL as written has userinfo: an `@` in its authority. The parser drops an empty one
 * (`https://:@host/` becomes `https://host/`), so this reads the raw text; like the parser, it
 * takes backslashes for slashes and allows any number of them after the scheme.
 */
function hasUserinfo(raw: string): boolean {
  const afterScheme = raw.replace(/^[A-Za-z][A-Za-z0-9+.-]*:[/\\]*/, "");
  return (afterScheme.split(/[/\\?#]/, 1)[0] ?? "").includes("@");
}

/**
 * Decides whether the gateway may POST to `raw`. The WHATWG parser already normalises decimal,
 * octal, hex and shortened IPv4 forms (`https://0x7f.1/` has hostname `127.0.0.1`), so range checks
 * see the real address. Public IP literals are allowed; names are checked by suffix, and the
 * Workers runtime itself refuses to connect to private addresses a public name resolves to.
 */
export function checkWebhookUrl(raw: string): UrlVerdict {
  if (raw.length > 2048) return deny("the URL is longer than 2048 characters");
  if (hasControlOrSpace(raw)) return deny("the URL must not contain spaces or control characters");
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return deny("the URL cannot be parsed");
  }
  if (url.protocol !== "https:") return deny("the URL must use https");
  if (url.username || url.password || hasUserinfo(raw)) return deny("the URL must not carry credentials");
  if (url.port !== "") return deny("the URL must use the default HTTPS port");
  const host = url.hostname.toLowerCase().replace(/\.+$/, "");
  if (host === "") return deny("the URL has no host");
  if (host.startsWith("[")) {
    const groups = parseIpv6(host.slice(1, -1));
    if (!groups) return deny("the URL's IPv6 address cannot be parsed");
    return v6Blocked(groups) ? deny("the URL points to a non-public IPv6 address") : { ok: true, url };
  }
  // The parser has already turned every IPv4 spelling into four decimal parts.
  if (ipaddr.IPv4.isValidFourPartDecimal(host)) {
    return v4Blocked(host) ? deny("the URL points to a non-public IPv4 address") : { ok: true, url };
  }
  if (/^[\d.]+$/.test(host) || /^0x/i.test(host)) return deny("the URL's host is not a valid address");
  if (!host.includes(".")) return deny("the URL's host must be a fully qualified domain name");
  // One trailing dot (the root) is allowed; an empty label elsewhere (`a..b.com`, `b.com..`) names no host.
  if (
    url.hostname
      .replace(/\.$/, "")
      .split(".")
      .some((label) => label === "")
  ) {
    return deny("the URL's host has an empty label");
  }
  const blocked = BLOCKED_HOST_SUFFIXES.find((s) => host === s || host.endsWith(`.${s}`));
  if (blocked) return deny(`the URL's host is internal ('${blocked}')`);
  return { ok: true, url };
}
