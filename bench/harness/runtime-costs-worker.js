// What single runtime operations cost in workerd: GET /?op=NAME&n=N runs the operation N times in one request,
// and bench/runtime-costs.mjs reads workerd's CPU time around it. The operations are the ones every gateway
// request makes a few of (its log line, the key's hash, timers, an AbortController, answers and their headers).
const LINE = JSON.stringify({
  level: "info",
  message: "request",
  request_id: "0123456789abcdef0123456789abcdef",
  region: "global",
  method: "POST",
  route: "/api/v1/embeddings",
  status: 200,
  key_hash: "abcdef012345",
  account: "acct_0123456789",
  model: "bench/embed-8",
  provider: "bench",
  upstream_ms: 1,
  gateway_ms: 0,
  duration_ms: 1,
  cost_usd: 0.000001,
});
const KEY = `sk-gw-v1-${"0".repeat(64)}`;
const encoder = new TextEncoder();
const headers = new Headers({ authorization: `Bearer ${KEY}`, "content-type": "application/json" });
const json = { "content-type": "application/json" };

export const OPERATIONS = {
  nothing: () => {},
  "console.log of a request's line": () => console.log(LINE),
  "JSON.parse + JSON.stringify of that line": () => JSON.stringify(JSON.parse(LINE)),
  "SHA-256 of an API key (encode + subtle.digest)": () =>
    crypto.subtle.digest("SHA-256", encoder.encode(KEY)),
  "crypto.randomUUID()": () => crypto.randomUUID(),
  "one header read": () => headers.get("authorization"),
  "new Response(text, {headers: {1 header}})": () => new Response(LINE, { status: 200, headers: json }),
  "new Response(text, {headers: {4 headers}})": () =>
    new Response(LINE, {
      status: 200,
      headers: {
        ...json,
        "x-generation-id": "gen-1",
        "x-request-id": "req-1",
        "server-timing": "gateway;dur=0",
      },
    }),
  "new Response + 3 headers.set": () => {
    const res = new Response(LINE, { status: 200, headers: json });
    res.headers.set("X-Generation-Id", "gen-1");
    res.headers.set("X-Request-Id", "req-1");
    res.headers.set("Server-Timing", "gateway;dur=0");
  },
  "new Request(POST, body) + .json()": () => new Request("http://x/", { method: "POST", body: LINE }).json(),
  "setTimeout + clearTimeout": () => clearTimeout(setTimeout(() => {}, 10_000)),
  "AbortController + add/removeEventListener": () => {
    const controller = new AbortController();
    const listener = () => {};
    controller.signal.addEventListener("abort", listener);
    controller.signal.removeEventListener("abort", listener);
  },
};

export default {
  async fetch(request) {
    const url = new URL(request.url);
    const op = OPERATIONS[url.searchParams.get("op")];
    if (!op) return new Response("unknown op", { status: 404 });
    const n = Number(url.searchParams.get("n"));
    for (let i = 0; i < n; i++) await op();
    return new Response("ok");
  },
};
