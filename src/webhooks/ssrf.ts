// Webhook URL safety: only public HTTPS endpoints on the default port, checked without any network call.

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
  "in-addr.arpa",
  "ip6.arpa",
  // Public wildcard DNS services that resolve a name to the IP embedded in it.
  "nip.io",
  "sslip.io",
  "xip.io",
  "localtest.me",
  "lvh.me",
];

/** [network, prefix length] pairs of IPv4 space a webhook must never reach (RFC 6890 and cloud metadata). */
const BLOCKED_V4: Array<[string, number]> = [
  ["0.0.0.0", 8], // "this network"
  ["10.0.0.0", 8], // private
  ["100.64.0.0", 10], // CGNAT (also Alibaba's metadata 100.100.100.200)
  ["127.0.0.0", 8], // loopback
  ["169.254.0.0", 16], // link-local (AWS, GCP, Azure metadata 169.254.169.254)
  ["172.16.0.0", 12], // private
  ["192.0.0.0", 24], // IETF protocol assignments (incl. Oracle metadata 192.0.0.192)
  ["192.0.2.0", 24], // TEST-NET-1
  ["192.88.99.0", 24], // 6to4 relay anycast
  ["192.168.0.0", 16], // private
  ["198.18.0.0", 15], // benchmarking
  ["198.51.100.0", 24], // TEST-NET-2
  ["203.0.113.0", 24], // TEST-NET-3
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4], // reserved and broadcast
];

function v4ToInt(text: string): number | null {
  const parts = text.split(".");
  if (parts.length !== 4) return null;
  let out = 0;
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p)) return null;
    const n = Number(p);
    if (n > 255) return null;
    out = out * 256 + n;
  }
  return out;
}

function v4Blocked(addr: number): boolean {
  return BLOCKED_V4.some(([net, bits]) => {
    const size = 2 ** (32 - bits);
    const start = v4ToInt(net)!;
    return addr >= start && addr < start + size;
  });
}

/** Parses an IPv6 literal (no brackets) into eight 16-bit groups; null when it is not one. */
export function parseIpv6(text: string): number[] | null {
  let s = text.toLowerCase();
  const zone = s.indexOf("%");
  if (zone >= 0) s = s.slice(0, zone);
  // A trailing dotted quad (e.g. ::ffff:127.0.0.1) stands for the last two groups.
  const lastColon = s.lastIndexOf(":");
  if (s.slice(lastColon + 1).includes(".")) {
    const v4 = v4ToInt(s.slice(lastColon + 1));
    if (v4 == null) return null;
    s = `${s.slice(0, lastColon + 1)}${Math.floor(v4 / 65536).toString(16)}:${(v4 % 65536).toString(16)}`;
  }
  const halves = s.split("::");
  if (halves.length > 2) return null;
  const parse = (h: string) => (h === "" ? [] : h.split(":"));
  const head = parse(halves[0]!);
  const rest = halves.length === 2 ? parse(halves[1]!) : [];
  if (halves.length === 2 && head.length + rest.length > 7) return null;
  const groupsText =
    halves.length === 2 ? [...head, ...Array(8 - head.length - rest.length).fill("0"), ...rest] : head;
  if (groupsText.length !== 8) return null;
  const groups: number[] = [];
  for (const g of groupsText) {
    if (!/^[0-9a-f]{1,4}$/.test(g)) return null;
    groups.push(Number.parseInt(g, 16));
  }
  return groups;
}

function v6Blocked(g: number[]): boolean {
  const zeroPrefix = (n: number) => g.slice(0, n).every((x) => x === 0);
  if (zeroPrefix(8)) return true; // ::
  if (zeroPrefix(7) && g[7] === 1) return true; // ::1
  // IPv4-mapped (::ffff:a.b.c.d): a public service publishes its IPv4 address directly, so the
  // mapped form only ever serves to disguise one; refused whatever the embedded address.
  if (zeroPrefix(5) && g[5] === 0xffff) return true;
  if (zeroPrefix(6)) return true; // IPv4-compatible (deprecated)
  if (zeroPrefix(4) && g[4] === 0xffff && g[5] === 0) return true; // IPv4-translated
  if (g[0] === 0x64 && g[1] === 0xff9b) return true; // NAT64 reaches IPv4 space through a translator
  if (g[0] === 0x100 && g[1] === 0 && g[2] === 0 && g[3] === 0) return true; // discard-only
  if (g[0] === 0x2001 && g[1]! < 0x200) return true; // Teredo, benchmarking, ORCHID and other IETF blocks
  if (g[0] === 0x2001 && g[1] === 0xdb8) return true; // documentation
  if (g[0] === 0x2002) return true; // 6to4 embeds an IPv4 address
  const first = g[0]!;
  if ((first & 0xfe00) === 0xfc00) return true; // unique local fc00::/7 (incl. AWS fd00:ec2::254)
  if ((first & 0xffc0) === 0xfe80) return true; // link-local
  if ((first & 0xffc0) === 0xfec0) return true; // site-local (deprecated)
  if ((first & 0xff00) === 0xff00) return true; // multicast
  return false;
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
  const v4 = v4ToInt(host);
  if (v4 != null) {
    return v4Blocked(v4) ? deny("the URL points to a non-public IPv4 address") : { ok: true, url };
  }
  if (/^[\d.]+$/.test(host) || /^0x/i.test(host)) return deny("the URL's host is not a valid address");
  if (!host.includes(".")) return deny("the URL's host must be a fully qualified domain name");
  const blocked = BLOCKED_HOST_SUFFIXES.find((s) => host === s || host.endsWith(`.${s}`));
  if (blocked) return deny(`the URL's host is internal ('${blocked}')`);
  return { ok: true, url };
}
