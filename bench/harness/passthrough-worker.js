// The baseline arm: a Worker that forwards the request to the mock upstream as it came (same path, method and
// body, the platform key added) and returns the upstream's answer untouched, body streamed. No auth, no parsing.
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const upstream = await fetch(`${env.UPSTREAM_URL}${url.pathname}`, {
      method: request.method,
      headers: {
        "Content-Type": request.headers.get("Content-Type") ?? "application/json",
        Authorization: `Bearer ${env.UPSTREAM_KEY}`,
      },
      body: request.body,
    });
    return new Response(upstream.body, { status: upstream.status, headers: upstream.headers });
  },
};
