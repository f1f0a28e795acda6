// A mock upstream inside the runtime: globalThis.fetch is replaced for the test, answering from fixtures
// by host and path and recording every request; any other URL fails the test (tests never reach the internet).
import { vi } from "vitest";

export interface Recorded {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: unknown;
}

export type Responder = (req: Recorded) => Response | Promise<Response>;

export function mockUpstream(routes: Record<string, Responder>) {
  const requests: Recorded[] = [];
  const spy = vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const req = new Request(input, init);
    const url = new URL(req.url);
    const text = await req.text();
    const recorded: Recorded = {
      url: req.url,
      method: req.method,
      headers: Object.fromEntries(req.headers),
      body: text ? JSON.parse(text) : undefined,
    };
    requests.push(recorded);
    const responder = routes[`${req.method} ${url.host}${url.pathname}`];
    if (!responder) throw new TypeError(`mock upstream: no route for ${req.method} ${req.url}`);
    return responder(recorded);
  });
  return { requests, restore: () => spy.mockRestore() };
}

export const json = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json", ...headers } });

/** An OpenAI `chat.completion` answering `content` with the given usage (prompt tokens, one completion token). */
export const chatCompletionBody = (promptTokens: number, content = "ok") => ({
  id: "chatcmpl-1",
  object: "chat.completion",
  created: 1,
  model: "gpt-4.1-mini",
  choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
  usage: { prompt_tokens: promptTokens, completion_tokens: 1, total_tokens: promptTokens + 1 },
});
