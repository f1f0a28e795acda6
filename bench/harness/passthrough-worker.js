// The baseline arm: a Worker that forwards the request to the mock upstream as it came (same path, method and
// body, the platform key added) and returns the upstream's answer untouched, body streamed. No auth, no parsing.
// Under /relay, the reference floor of any gateway that reads a stream in JavaScript: the same forward, but
// the body is read chunk by chunk and each chunk written on into a native pipe by JavaScript (no parsing,
// no auth, nothing else), so a stream costs the isolate one wake-up per upstream chunk. Under /json, the
// floor of any gateway that reads what it forwards: the request body parsed and serialised again, the
// answer parsed and serialised again (no auth, no routing, no billing).
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname.startsWith("/json/")) {
      const body = await request.json();
      const upstream = await fetch(`${env.UPSTREAM_URL}${url.pathname.slice("/json".length)}`, {
        method: "POST",
        headers: { "Content-Type": "application/json", Authorization: `Bearer ${env.UPSTREAM_KEY}` },
        body: JSON.stringify(body),
      });
      const answer = await upstream.json();
      return Response.json(answer, { status: upstream.status });
    }
    const relay = url.pathname.startsWith("/relay/");
    const path = relay ? url.pathname.slice("/relay".length) : url.pathname;
    const upstream = await fetch(`${env.UPSTREAM_URL}${path}`, {
      method: request.method,
      headers: {
        "Content-Type": request.headers.get("Content-Type") ?? "application/json",
        Authorization: `Bearer ${env.UPSTREAM_KEY}`,
      },
      body: request.body,
    });
    if (!relay || !upstream.body) {
      return new Response(upstream.body, { status: upstream.status, headers: upstream.headers });
    }
    const { readable, writable } = new IdentityTransformStream();
    const reader = upstream.body.getReader();
    const writer = writable.getWriter();
    (async () => {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        writer.write(value).catch(() => {});
      }
      await writer.close();
    })().catch((err) => writer.abort(err).catch(() => {}));
    return new Response(readable, { status: upstream.status, headers: upstream.headers });
  },
};
