// Requests that pass the schema's shapes but not its sense: a tool choice naming a tool that is not there,
// media parts that are not media, and the 400s that say which rule failed (a list too long, a field of the
// request the caller sent rather than of its chat translation). Each is refused before anything is
// generated (found by a hostile probe: these were answered in plain text and billed, or refused with a
// bare "Invalid input" or a path the caller never sent).
import { env } from "cloudflare:test";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { getDb, tables } from "../src/db/client";
import { createAccount } from "./helpers/accounts";
import { call, errorOf } from "./helpers/http";

const user = (content: unknown) => [{ role: "user", content }];
const weather = { type: "function", function: { name: "get_weather", parameters: { type: "object" } } };

async function refused(path: string, body: Record<string, unknown>): Promise<string> {
  const acct = await createAccount({ creditsUsd: 1 });
  const res = await call(path, { method: "POST", key: acct.apiKey, body });
  expect(res.status).toBe(400);
  // /messages answers in Anthropic's error envelope.
  const message =
    path === "/messages"
      ? ((await res.json()) as { type: string; error: { message: string } }).error.message
      : (await errorOf(res)).message;
  const records = await getDb(env.DB)
    .select()
    .from(tables.generations)
    .where(eq(tables.generations.accountId, acct.accountId));
  expect(records).toEqual([]);
  return message;
}

describe("tool_choice against the tools", () => {
  it.each([
    [
      "chat: a named function not in tools",
      "/chat/completions",
      { tool_choice: { type: "function", function: { name: "zzz" } }, tools: [weather] },
      "tool_choice names the function 'zzz', which is not in tools",
    ],
    [
      "chat: required with no tools",
      "/chat/completions",
      { tool_choice: "required" },
      "tool_choice 'required' needs tools: the request has none",
    ],
  ])("%s is a 400", async (_name, path, extra, message) => {
    expect(await refused(path, { model: "sandbox/chat-tools", messages: user("hi"), ...extra })).toBe(
      message,
    );
  });

  it("responses: a named function not in tools is a 400", async () => {
    const message = await refused("/responses", {
      model: "sandbox/chat-tools",
      input: "hi",
      tools: [{ type: "function", name: "get_weather", parameters: { type: "object" } }],
      tool_choice: { type: "function", name: "zzz" },
    });
    expect(message).toBe("tool_choice names the function 'zzz', which is not in tools");
  });

  it.each([
    ["a tool not in tools", { tool_choice: { type: "tool", name: "zzz" } }, /'zzz', which is not in tools/],
    ["any with no tools", { tool_choice: { type: "any" } }, /needs tools/],
  ])("messages: %s is a 400", async (_name, extra, message) => {
    expect(
      await refused("/messages", {
        model: "sandbox/chat-tools",
        max_tokens: 20,
        messages: user("hi"),
        ...extra,
      }),
    ).toMatch(message);
  });

  it("responses: a call forced to a deferred tool is a 400 saying it is deferred", async () => {
    const tools = [
      { type: "function", name: "a", defer_loading: true },
      { type: "function", name: "b" },
    ];
    expect(
      await refused("/responses", {
        model: "sandbox/chat-tools",
        input: "hi",
        tools,
        tool_choice: { type: "function", name: "a" },
      }),
    ).toMatch(/'a', which is deferred \(defer_loading\)/);
  });

  it("a named function among the tools is served", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    const res = await call("/chat/completions", {
      method: "POST",
      key: acct.apiKey,
      body: {
        model: "sandbox/chat-tools",
        messages: user("weather in Paris?"),
        tools: [weather],
        tool_choice: { type: "function", function: { name: "get_weather" } },
      },
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as {
      choices: Array<{ message: { tool_calls: Array<{ function: { name: string } }> } }>;
    };
    expect(body.choices[0]!.message.tool_calls[0]!.function.name).toBe("get_weather");
  });
});

describe("media parts", () => {
  it.each([
    ["an image URL that is not one", { type: "image_url", image_url: { url: "not a url" } }, "image_url.url"],
    [
      "a javascript: image URL",
      { type: "image_url", image_url: { url: "javascript:alert(1)" } },
      "image_url.url",
    ],
    ["a malformed data URL", { type: "image_url", image_url: { url: "data:;;;,,," } }, "image_url.url"],
    [
      "audio that is not base64",
      { type: "input_audio", input_audio: { data: "!!!", format: "wav" } },
      "input_audio.data",
    ],
  ])("chat: %s is a 400 naming the field", async (_name, part, field) => {
    const message = await refused("/chat/completions", {
      model: "sandbox/chat-echo",
      messages: user([{ type: "text", text: "look" }, part]),
    });
    expect(message).toContain(`body.messages.0.content.1.${field}:`);
  });

  it("chat: http(s) and base64 data image URLs are served (any case, with RFC 2397 parameters)", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    for (const url of [
      "https://example.com/cat.png",
      "http://example.com/cat.png",
      "data:image/png;base64,iVBORw0KGgo=",
      "DATA:image/png;BASE64,iVBORw0KGgo=",
      "data:image/png;name=cat.png;base64,iVBORw0KGgo=",
    ]) {
      const res = await call("/chat/completions", {
        method: "POST",
        key: acct.apiKey,
        body: { model: "sandbox/chat-echo", messages: user([{ type: "image_url", image_url: { url } }]) },
      });
      expect(res.status, url).toBe(200);
    }
  });

  it.each([
    [
      "image data that is not base64",
      { type: "image", source: { type: "base64", media_type: "image/png", data: "!!!notbase64" } },
      "source.data",
    ],
    [
      "a javascript: image URL",
      { type: "image", source: { type: "url", url: "javascript:alert(1)" } },
      "source.url",
    ],
    [
      "a document URL that is not http(s)",
      { type: "document", source: { type: "url", url: "file:///etc/passwd" } },
      "source.url",
    ],
  ])("messages: %s is a 400 naming the field", async (_name, block, field) => {
    const message = await refused("/messages", {
      model: "sandbox/chat-echo",
      max_tokens: 20,
      messages: user([{ type: "text", text: "look" }, block]),
    });
    expect(message).toContain(`body.messages.0.content.1.${field}:`);
  });
});

describe("what a 400 says", () => {
  it("messages: empty or non-base64 data and a url source without its url say so", async () => {
    const image = (source: Record<string, unknown>) => ({
      model: "sandbox/chat-echo",
      max_tokens: 20,
      messages: user([{ type: "image", source }]),
    });
    expect(
      await refused("/messages", image({ type: "base64", media_type: "image/png", data: "" })),
    ).toContain("source.data: must not be empty");
    expect(
      await refused("/messages", image({ type: "base64", media_type: "image/png", data: "iVBO\nRw0=" })),
    ).toContain("source.data: must be base64: the standard alphabet, without a data: prefix or line breaks");
    expect(await refused("/messages", image({ type: "url" }))).toContain("source.url: url is required");
  });

  it("responses: a bad media part is named in the input, where the caller sent it", async () => {
    const message = await refused("/responses", {
      model: "sandbox/chat-echo",
      instructions: "be nice",
      input: [
        { role: "user", content: "a" },
        { role: "user", content: [{ type: "input_image", image_url: "data:image/png;base64,@@" }] },
      ],
    });
    expect(message).toContain("body.input.1.content.0.image_url: must be an http(s) URL");
  });

  it("responses: a content part's missing field is named inside the item", async () => {
    const message = await refused("/responses", {
      model: "sandbox/chat-echo",
      input: [{ role: "user", content: [{ type: "input_text" }] }],
    });
    expect(message).toBe(
      "Invalid request: body.input.0.content.0.text: Invalid input: expected string, received undefined",
    );
  });

  it("embeddings: a value that takes two branches' types keeps zod's word; one of no branch's type names the types", async () => {
    // [-1] fits a list of strings and a list of tokens alike: which was meant cannot be told.
    const ambiguous = await refused("/embeddings", { model: "sandbox/embed-small", input: [-1] });
    expect(ambiguous).not.toMatch(/expected string, received number/);
    expect(await refused("/embeddings", { model: "sandbox/embed-small", input: { a: 1 } })).toBe(
      "Invalid request: body.input: Invalid input: expected string or array",
    );
  });

  it("a list past its limit under a union says the limit, not 'Invalid input'", async () => {
    const message = await refused("/chat/completions", {
      model: "sandbox/chat-echo",
      messages: user("hi"),
      stop: Array.from({ length: 100 }, (_, i) => `s${i}`),
    });
    expect(message).toBe("Invalid request: body.stop: Too big: expected array to have <=16 items");
  });

  it("a wrong field inside a union's part names the field", async () => {
    const message = await refused("/chat/completions", {
      model: "sandbox/chat-echo",
      messages: user([{ type: "image_url", image_url: "https://example.com/cat.png" }]),
    });
    expect(message).toBe(
      "Invalid request: body.messages.0.content.0.image_url: Invalid input: expected object, received string",
    );
  });

  it("an object whose `type` names one form is explained by that form", async () => {
    const message = await refused("/chat/completions", {
      model: "sandbox/chat-echo",
      messages: user("hi"),
      tool_choice: { type: "function" },
    });
    expect(message).toBe(
      "Invalid request: body.tool_choice.function: Invalid input: expected object, received undefined",
    );
  });

  it("a value of none of a union's types names the types", async () => {
    const message = await refused("/chat/completions", {
      model: "sandbox/chat-echo",
      messages: user("hi"),
      stop: 7,
    });
    expect(message).toBe("Invalid request: body.stop: Invalid input: expected string or array");
  });

  it("responses: a text past the limit is named where the caller sent it", async () => {
    const big = "x".repeat(4_000_001);
    expect(await refused("/responses", { model: "sandbox/chat-echo", input: "hi", instructions: big })).toBe(
      "Invalid request: body.instructions: Too big: a prompt's text is at most 4,000,000 characters",
    );
    const output = await refused("/responses", {
      model: "sandbox/chat-echo",
      input: [
        { type: "function_call", call_id: "c1", name: "f", arguments: "{}" },
        { type: "function_call_output", call_id: "c1", output: big },
      ],
    });
    expect(output).toBe(
      "Invalid request: body.input.1.output: Too big: a prompt's text is at most 4,000,000 characters",
    );
  });
});
