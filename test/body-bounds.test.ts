// Request bodies with very many values are refused before they are parsed or validated (413), and a body
// whose validation overflows the stack is a 400, never a 500 (found by a hostile probe: 4 million invalid
// items in one array took 5 s and 1.7 GB, 130,000 made zod overflow its stack, and 16 MB of nested
// arrays took JSON.parse 1-2.6 s).
import { env } from "cloudflare:test";
import { eq } from "drizzle-orm";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import type { ZodType } from "zod";
import { getDb, tables } from "../src/db/client";
import type { AppEnv } from "../src/env";
import { ApiError } from "../src/lib/errors";
import { bodyValidationFailure, jsonBody, jsonShape, MAX_BODY_VALUES } from "../src/middleware/body";
import { ChatRequestSchema } from "../src/schemas/chat";
import { MAX_ITEMS, MAX_TURN_ITEMS } from "../src/schemas/common";
import { EmbeddingsInputSchema } from "../src/schemas/embeddings";
import { MessagesRequestSchema } from "../src/schemas/messages";
import { ResponsesRequestSchema } from "../src/schemas/responses-request";
import { createAccount } from "./helpers/accounts";
import { call, errorOf } from "./helpers/http";

const hi = [{ role: "user", content: "hi" }];
/** `[1,1,...]` with n items, as JSON text. */
const ones = (n: number) => `[${"1,".repeat(n - 1)}1]`;

async function generationsOf(accountId: string) {
  return getDb(env.DB).select().from(tables.generations).where(eq(tables.generations.accountId, accountId));
}

describe("jsonShape", () => {
  it("counts containers and values outside strings, escaped quotes included", () => {
    expect(jsonShape('{"a":[1,2,3],"b":{"c":null}}', 1_000)).toEqual({ containers: 3, values: 7 });
    // Brackets, commas and escaped quotes inside strings are text.
    expect(jsonShape('{"a":"[,{\\"]}\\\\","b":[1]}', 1_000)).toEqual({ containers: 2, values: 4 });
    expect(jsonShape(ones(50), 1_000).values).toBe(51);
  });

  it("stops counting past the bound", () => {
    expect(jsonShape(ones(100_000), 10).values).toBe(11);
  });
});

describe("bodies with too many values", () => {
  it("a chat whose content is 300,000 invalid items is a 413 naming the bound, and nothing is generated", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    const text = `{"model":"sandbox/chat-echo","messages":[{"role":"user","content":${ones(300_000)}}]}`;
    const res = await call("/chat/completions", { method: "POST", key: acct.apiKey, body: text });
    expect(res.status).toBe(413);
    expect((await errorOf(res)).message).toContain("more than 100,000 JSON values");
    expect(await generationsOf(acct.accountId)).toEqual([]);
  });

  it("150,000 invalid quantizations (which overflowed zod's stack: a 500) is a 413; 5,000 is a 400", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    const body = (n: number) =>
      `{"model":"sandbox/chat-echo","messages":${JSON.stringify(hi)},"provider":{"quantizations":${ones(n)}}}`;
    const many = await call("/chat/completions", { method: "POST", key: acct.apiKey, body: body(150_000) });
    expect(many.status).toBe(413);
    await many.arrayBuffer();
    const some = await call("/chat/completions", { method: "POST", key: acct.apiKey, body: body(5_000) });
    expect(some.status).toBe(400);
    expect((await errorOf(some)).message).toContain("provider.quantizations");
  });

  it("a guardrail with 150,000 built-in filter entries is a 413, not a 500", async () => {
    const acct = await createAccount();
    const text = `{"name":"g","content_filter_builtins":${ones(150_000)}}`;
    const res = await call("/guardrails", { method: "POST", key: acct.managementKey, body: text });
    expect(res.status).toBe(413);
    await res.arrayBuffer();
    const list = await call("/guardrails", { key: acct.managementKey });
    expect(((await list.json()) as { data: unknown[] }).data).toEqual([]);
  });

  it("150,000 nested arrays are refused before JSON.parse, with the same 413", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    const nest = `${"[".repeat(150_000)}${"]".repeat(150_000)}`;
    const text = `{"model":"sandbox/chat-echo","messages":${JSON.stringify(hi)},"x":${nest}}`;
    const res = await call("/chat/completions", { method: "POST", key: acct.apiKey, body: text });
    expect(res.status).toBe(413);
    expect((await errorOf(res)).message).toContain("JSON values");
  });

  it("a long real conversation near the bound (9,000 messages of two parts: ~81,000 values) is served", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const messages = Array.from({ length: 9_000 }, (_, i) => ({
      role: i % 2 ? "assistant" : "user",
      content: [
        { type: "text", text: `turn ${i}` },
        { type: "text", text: "more" },
      ],
    }));
    const body = { model: "sandbox/chat-echo", messages, max_tokens: 4 };
    expect(jsonShape(JSON.stringify(body), 1e9).values).toBeGreaterThan(80_000);
    const res = await call("/chat/completions", { method: "POST", key: acct.apiKey, body });
    if (res.status !== 200) throw new Error(await res.text());
    await res.arrayBuffer();
  });
});

describe("lists of a request", () => {
  /** Issues in a failed parse, those nested in a union's options included. */
  const issueCount = (issues: ReadonlyArray<{ errors?: unknown[][] }>): number =>
    issues.reduce(
      (n, i) => n + 1 + (i.errors ?? []).reduce<number>((m, e) => m + issueCount(e as typeof issues), 0),
      0,
    );
  const bad = Array.from({ length: MAX_ITEMS + 1 }, () => 1);
  const badTurn = Array.from({ length: MAX_TURN_ITEMS + 1 }, () => 1);
  const user = [{ role: "user", content: "hi" }];
  const cases: Array<[string, string, ZodType, unknown]> = [
    [
      "chat content parts",
      "/chat/completions",
      ChatRequestSchema,
      { model: "m", messages: [{ role: "user", content: bad }] },
    ],
    [
      "chat tool calls",
      "/chat/completions",
      ChatRequestSchema,
      { model: "m", messages: [{ role: "assistant", tool_calls: badTurn }] },
    ],
    [
      "messages content blocks",
      "/messages",
      MessagesRequestSchema,
      { model: "m", max_tokens: 5, messages: [{ role: "user", content: bad }] },
    ],
    [
      "messages system blocks",
      "/messages",
      MessagesRequestSchema,
      { model: "m", max_tokens: 5, system: bad, messages: user },
    ],
    [
      "responses content parts",
      "/responses",
      ResponsesRequestSchema,
      { model: "m", input: [{ role: "user", content: bad }] },
    ],
    ["responses tools", "/responses", ResponsesRequestSchema, { model: "m", input: "hi", tools: bad }],
  ];
  it.each(cases)(
    "%s past the bound fail on their length: a 400 with a handful of issues",
    async (_name, path, schema, body) => {
      const parsed = schema.safeParse(body);
      expect(parsed.success).toBe(false);
      // Without the bound, an issue per item: over a thousand.
      expect(issueCount(parsed.error!.issues as never)).toBeLessThan(10);
      const acct = await createAccount({ creditsUsd: 1 });
      const res = await call(path, { method: "POST", key: acct.apiKey, body });
      expect(res.status).toBe(400);
      await res.arrayBuffer();
    },
  );
});

describe("embeddings token inputs", () => {
  const tokens = (inputs: number, each: number, bad = false) =>
    Array.from({ length: inputs }, (_, i) =>
      Array.from({ length: each }, (_, j) => (bad && j === each - 1 ? -1 : (i * 7 + j) % 50_000)),
    );

  it("take more values than other bodies: 2,048 inputs of 100 tokens (over 200,000 values) are served", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const input = tokens(2_048, 100);
    expect(2_048 * 100).toBeGreaterThan(MAX_BODY_VALUES.default);
    const res = await call("/embeddings", {
      method: "POST",
      key: acct.apiKey,
      body: { model: "sandbox/embed-small", input },
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { data: unknown[] }).data).toHaveLength(2_048);
  });

  it("a bad token in every one of 2,048 inputs is a 400 on input", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const res = await call("/embeddings", {
      method: "POST",
      key: acct.apiKey,
      body: { model: "sandbox/embed-small", input: tokens(2_048, 100, true) },
    });
    expect(res.status).toBe(400);
    const error = await errorOf(res);
    expect(error.message).toContain("body.input");
    expect(await generationsOf(acct.accountId)).toEqual([]);
  });

  it("an input of wholly bad tokens makes an issue per input, not per token", () => {
    const input = Array.from({ length: 2_048 }, () => Array.from({ length: 150 }, () => -1));
    const result = EmbeddingsInputSchema.safeParse(input);
    expect(result.success).toBe(false);
    // Issues nested in the union's failed options, counted: 307,200 bad tokens, 2,048 lists.
    const count = (issues: ReadonlyArray<{ errors?: unknown[][] }>): number =>
      issues.reduce(
        (n, i) => n + 1 + (i.errors ?? []).reduce<number>((m, e) => m + count(e as typeof issues), 0),
        0,
      );
    // Each of the three array options fails once per input.
    expect(count(result.error!.issues as never)).toBeLessThan(4 * 2_048);
  });

  it("more values than even embeddings take is a 413", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const text = `{"model":"sandbox/embed-small","input":${ones(MAX_BODY_VALUES.embeddings + 10)}}`;
    const res = await call("/embeddings", { method: "POST", key: acct.apiKey, body: text });
    expect(res.status).toBe(413);
    expect((await errorOf(res)).message).toContain("more than 400,000 JSON values");
  });
});

describe("a stack overflow while the body is validated", () => {
  /** The body middleware before a route whose validation (or handler, once judged) throws a RangeError. */
  function appThrowing(judged: boolean) {
    const app = new Hono<AppEnv>();
    app.use("*", jsonBody);
    app.post("/x", (c) => {
      if (judged) c.set("bodyJudged", true);
      throw new RangeError("Maximum call stack size exceeded");
    });
    // What the app's error handler does first (src/app.ts).
    app.onError((raw, c) => {
      const err = bodyValidationFailure(raw, c) ?? raw;
      return err instanceof ApiError
        ? c.json({ message: err.message }, err.status as 400)
        : c.text("bug", 500);
    });
    return app;
  }
  const post = (app: Hono<AppEnv>) =>
    app.request("/x", { method: "POST", body: "{}", headers: { "Content-Type": "application/json" } });

  it("is a 400 before the validator judged the body, and stays a 500 (a bug) after", async () => {
    const before = await post(appThrowing(false));
    expect(before.status).toBe(400);
    expect(((await before.json()) as { message: string }).message).toContain("too many invalid values");
    expect((await post(appThrowing(true))).status).toBe(500);
  });
});
