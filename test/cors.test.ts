// Browsers calling the API from another origin: preflights answered before auth, answers (errors
// included) readable by the page, the headers clients read exposed; no credentials are ever allowed.
import { describe, expect, it } from "vitest";
import { createAccount } from "./helpers/accounts";
import { BASE, errorOf, send } from "./helpers/http";

const ORIGIN = "https://chat.example.com";

async function fetchFrom(path: string, init: RequestInit & { headers?: Record<string, string> } = {}) {
  return send(new Request(`${BASE}${path}`, { ...init, headers: { Origin: ORIGIN, ...init.headers } }));
}

describe("CORS", () => {
  it("answers a preflight with 204 before any key is asked for, allowing the headers the page will send", async () => {
    const res = await fetchFrom("/chat/completions", {
      method: "OPTIONS",
      headers: {
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type, x-stainless-os, http-referer",
      },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get("Access-Control-Allow-Origin")).toBe("*");
    expect(res.headers.get("Access-Control-Allow-Methods")).toContain("POST");
    expect(res.headers.get("Access-Control-Allow-Headers")).toBe(
      "authorization,content-type,x-stainless-os,http-referer",
    );
    expect(res.headers.get("Access-Control-Max-Age")).toBe("86400");
    expect(res.headers.get("Access-Control-Allow-Credentials")).toBeNull();
  });

  it("allows in a preflight only the methods the path serves", async () => {
    const preflight = (path: string) =>
      fetchFrom(path, { method: "OPTIONS", headers: { "Access-Control-Request-Method": "DELETE" } });
    const key = await preflight("/key");
    expect(key.status).toBe(204);
    expect(key.headers.get("Access-Control-Allow-Methods")).toBe("GET,HEAD");
    const one = await preflight(`/keys/${"a".repeat(64)}`);
    expect(one.headers.get("Access-Control-Allow-Methods")?.split(",")).toEqual(
      expect.arrayContaining(["GET", "PATCH", "DELETE"]),
    );
  });

  it("lets the page read an answer and the headers clients use", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const res = await fetchFrom("/chat/completions", {
      method: "POST",
      headers: { Authorization: `Bearer ${acct.apiKey}`, "Content-Type": "application/json" },
      body: JSON.stringify({ model: "sandbox/chat-echo", messages: [{ role: "user", content: "hi" }] }),
    });
    expect(res.status).toBe(200);
    await res.json();
    expect(res.headers.get("Access-Control-Allow-Origin")).toBe("*");
    const exposed = res.headers.get("Access-Control-Expose-Headers")!.split(",");
    expect(exposed).toEqual(expect.arrayContaining(["X-Generation-Id", "X-Request-Id", "Retry-After"]));
    expect(res.headers.get("X-Generation-Id")).toMatch(/^gen-/);
  });

  it("streams to the page as to any client", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const res = await fetchFrom("/chat/completions", {
      method: "POST",
      headers: { Authorization: `Bearer ${acct.apiKey}`, "Content-Type": "application/json" },
      body: JSON.stringify({
        model: "sandbox/chat-echo",
        stream: true,
        messages: [{ role: "user", content: "hi" }],
      }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toContain("text/event-stream");
    expect(res.headers.get("Access-Control-Allow-Origin")).toBe("*");
    expect(await res.text()).toContain("data: [DONE]");
  });

  it("lets the page read an error too (401, 404 and 405 alike)", async () => {
    const unauthorized = await fetchFrom("/key");
    expect(unauthorized.status).toBe(401);
    expect(unauthorized.headers.get("Access-Control-Allow-Origin")).toBe("*");
    await errorOf(unauthorized);
    const wrongMethod = await fetchFrom("/key", { method: "DELETE" });
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get("Access-Control-Allow-Origin")).toBe("*");
    await errorOf(wrongMethod);
    // An unknown path is 404 whatever the method, a preflight included (a served path with a trailing
    // slash is another path: the router does not serve it either).
    for (const [method, path] of [
      ["OPTIONS", "/nothing-here"],
      ["GET", "/nothing-here"],
      ["OPTIONS", "/chat/completions/"],
    ] as const) {
      const unknown = await fetchFrom(path, {
        method,
        headers: { "Access-Control-Request-Method": "GET" },
      });
      expect(unknown.status).toBe(404);
      expect(unknown.headers.get("Access-Control-Allow-Origin")).toBe("*");
      await errorOf(unknown);
    }
  });

  it("adds nothing for a request without an Origin (servers, SDKs)", async () => {
    const res = await send(new Request(`${BASE}/key`));
    expect(res.status).toBe(401);
    expect(res.headers.get("Access-Control-Allow-Origin")).toBeNull();
    await errorOf(res);
    const options = await send(new Request(`${BASE}/key`, { method: "OPTIONS" }));
    expect(options.status).toBe(405);
    await errorOf(options);
  });
});
