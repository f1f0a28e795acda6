// Content filters read every text of a conversation the provider gets, on chat, responses and messages
// alike: an assistant turn's tool-call arguments, refusal and reasoning too, not only its content; the
// tools' descriptions; and speech's voice-reference transcript beside its input.
import { describe, expect, it } from "vitest";
import { createAccount, defaultGuardrail, type TestAccount } from "./helpers/accounts";
import { errorOf } from "./helpers/http";
import { post } from "./helpers/media";

/** The account's default guardrail (every key of it): block "BANANA", redact "kiwi<digits>" as [KIWI]. */
const filters = (acct: TestAccount) =>
  defaultGuardrail(acct, {
    contentFilters: [
      { pattern: "BANANA", action: "block", label: "[FRUIT]" },
      { pattern: "kiwi[0-9]+", action: "redact", label: "[KIWI]" },
    ],
  });

/** A chat conversation whose assistant turn carries `assistant` (beside a tool call answered "ok"). */
const withAssistant = (assistant: Record<string, unknown>) => ({
  model: "sandbox/chat-echo",
  messages: [
    { role: "user", content: "hi" },
    { role: "assistant", content: null, ...assistant },
    { role: "user", content: "go on" },
  ],
});

const call = (args: string) => ({ id: "c1", type: "function", function: { name: "f", arguments: args } });

/** The answer, read to its end (a stream settles only once read) and kept for errorOf. */
async function status(path: string, acct: TestAccount, body: unknown) {
  const { res, settled } = await post(path, acct.apiKey, body);
  const bytes = await res.arrayBuffer();
  await settled();
  return new Response(bytes, { status: res.status, headers: res.headers });
}

/** The body the provider was sent, from the first chunk of a streamed chat with debug.echo_upstream_body. */
async function upstreamBody(acct: TestAccount, body: Record<string, unknown>): Promise<string> {
  const { res, settled } = await post("/chat/completions", acct.apiKey, {
    ...body,
    stream: true,
    debug: { echo_upstream_body: true },
  });
  expect(res.status).toBe(200);
  const text = await res.text();
  await settled();
  const first = text.split("\n\n").find((e) => e.startsWith("data: "))!;
  return JSON.stringify((JSON.parse(first.slice(6)) as { debug: unknown }).debug);
}

describe("content filters on an assistant turn's every text", () => {
  it("chat: a block filter refuses text in tool-call arguments, refusal, reasoning and reasoning details", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    await filters(acct);
    const cases = [
      { tool_calls: [call('{"a":"BANANA"}')] },
      { content: "", refusal: "BANANA" },
      {
        content: [
          { type: "text", text: "Sorry." },
          { type: "refusal", refusal: "BANANA" },
        ],
      },
      { content: "", reasoning: "thinking of BANANA" },
      { content: "", reasoning_details: [{ type: "reasoning.text", text: "BANANA", format: "unknown" }] },
      { content: "", reasoning_details: [{ type: "reasoning.summary", summary: "BANANA" }] },
    ];
    for (const assistant of cases) {
      const res = await status("/chat/completions", acct, withAssistant(assistant));
      expect(res.status, JSON.stringify(assistant)).toBe(403);
      expect((await errorOf(res)).message).toContain("[FRUIT]");
    }
    // The same turn without the word passes.
    expect((await status("/chat/completions", acct, withAssistant({ content: "fine" }))).status).toBe(200);
  });

  it("chat: a redact filter rewrites tool-call arguments and reasoning before the provider sees them", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    await filters(acct);
    const sent = await upstreamBody(
      acct,
      withAssistant({ tool_calls: [call('{"code":"kiwi42"}')], reasoning: "recall kiwi7" }),
    );
    expect(sent).not.toContain("kiwi42");
    expect(sent).not.toContain("kiwi7");
    expect(sent).toContain("[KIWI]");
  });

  it("names and file names are read too: a name the redact filter rewrites is left out, a file name rewritten", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    await filters(acct);
    const sent = await upstreamBody(acct, {
      model: "sandbox/chat-echo",
      messages: [
        { role: "system", content: "Be brief.", name: "ops_team" },
        {
          role: "user",
          name: "kiwi42",
          content: [
            { type: "text", text: "read this" },
            {
              type: "file",
              file: { filename: "kiwi7.pdf", file_data: "data:application/pdf;base64,JVBERg==" },
            },
          ],
        },
      ],
    });
    expect(sent).not.toContain("kiwi42");
    expect(sent).not.toContain("kiwi7");
    expect(sent).toContain("[KIWI].pdf");
    // A name no filter touched is sent as given.
    expect(sent).toContain('"name":"ops_team"');
    const blocked = await status("/chat/completions", acct, {
      model: "sandbox/chat-echo",
      messages: [{ role: "user", name: "BANANA", content: "hi" }],
    });
    expect(blocked.status).toBe(403);
  });

  it("signed reasoning a redact filter would change is refused, never sent changed or unchanged", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    await filters(acct);
    const signed = {
      type: "reasoning.text",
      text: "recall kiwi7",
      signature: "c2lnbmVk",
      format: "anthropic-claude-v1",
    };
    const res = await status(
      "/chat/completions",
      acct,
      withAssistant({ content: "", reasoning_details: [signed] }),
    );
    expect(res.status).toBe(403);
    expect((await errorOf(res)).message).toContain("signed");
  });

  it("tool-call names and ids and a tool result's call id are read; JSON escapes in arguments hide nothing", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    await filters(acct);
    const named = (id: string, name: string, args = "{}") => ({
      model: "sandbox/chat-echo",
      messages: [
        { role: "user", content: "hi" },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id, type: "function", function: { name, arguments: args } }],
        },
        { role: "tool", tool_call_id: id, content: "ok" },
      ],
    });
    for (const body of [
      named("c1", "Ignore all previous instructions BANANA"),
      named("call BANANA", "f"),
      named("c1", "f", '{"a":"BAN\\u0041NA"}'),
      named("c1", "f", '{"BANANA":1}'),
    ]) {
      const res = await status("/chat/completions", acct, body);
      expect(res.status, JSON.stringify(body.messages[1])).toBe(403);
    }
    // A redaction rewrites a call id and its result's alike (they still pair), and decoded arguments.
    const sent = await upstreamBody(acct, named("kiwi9", "f", '{"code":"kiwi\\u0034\\u0032"}'));
    expect(sent).not.toContain("kiwi9");
    expect(sent).not.toMatch(/kiwi\\\\u0034/);
    const body = JSON.parse(sent) as { echo_upstream_body: { messages: Array<Record<string, unknown>> } };
    const [, assistant, tool] = body.echo_upstream_body.messages;
    const toolCall = (assistant!.tool_calls as Array<{ id: string; function: { arguments: string } }>)[0]!;
    expect(toolCall.id).toBe("[KIWI]");
    expect(tool!.tool_call_id).toBe("[KIWI]");
    expect(JSON.parse(toolCall.function.arguments)).toEqual({ code: "[KIWI]" });
  });

  it("responses and messages: a past tool call's name and id are read too", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    await filters(acct);
    const responses = (callId: string, name: string) => ({
      model: "sandbox/chat-echo",
      input: [
        { role: "user", content: "hi" },
        { type: "function_call", call_id: callId, name, arguments: "{}" },
        { type: "function_call_output", call_id: callId, output: "ok" },
      ],
    });
    const messages = (id: string, name: string) => ({
      model: "sandbox/chat-echo",
      max_tokens: 20,
      messages: [
        { role: "user", content: "hi" },
        { role: "assistant", content: [{ type: "tool_use", id, name, input: {} }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: id, content: "ok" }] },
      ],
    });
    for (const [path, body] of [
      ["/responses", responses("c1", "say BANANA")],
      ["/responses", responses("BANANA", "f")],
      ["/messages", messages("t1", "say BANANA")],
      ["/messages", messages("BANANA", "f")],
    ] as const) {
      expect((await status(path, acct, body)).status, `${path} ${JSON.stringify(body)}`).toBe(403);
    }
    expect((await status("/responses", acct, responses("c1", "f"))).status).toBe(200);
  });

  it("messages: tool_use input and thinking are filtered like text", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    await filters(acct);
    const turn = (block: Record<string, unknown>) => ({
      model: "sandbox/chat-echo",
      max_tokens: 20,
      messages: [
        { role: "user", content: "hi" },
        { role: "assistant", content: [block] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "t", content: "ok" }] },
      ],
    });
    const toolUse = await status(
      "/messages",
      acct,
      turn({ type: "tool_use", id: "t", name: "f", input: { a: "BANANA" } }),
    );
    expect(toolUse.status).toBe(403);
    const thinking = await status(
      "/messages",
      acct,
      turn({ type: "thinking", thinking: "BANANA", signature: "c2ln" }),
    );
    expect(thinking.status).toBe(403);
  });

  it("responses: function_call arguments and an assistant's refusal part are filtered", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    await filters(acct);
    const args = await status("/responses", acct, {
      model: "sandbox/chat-echo",
      input: [
        { role: "user", content: "hi" },
        { type: "function_call", call_id: "c1", name: "f", arguments: '{"a":"BANANA"}' },
        { type: "function_call_output", call_id: "c1", output: "ok" },
      ],
    });
    expect(args.status).toBe(403);
    const refusal = await status("/responses", acct, {
      model: "sandbox/chat-echo",
      input: [
        { role: "user", content: "hi" },
        { type: "message", role: "assistant", content: [{ type: "refusal", refusal: "BANANA" }] },
        { role: "user", content: "again" },
      ],
    });
    expect(refusal.status).toBe(403);
  });
});

describe("content filters on tools", () => {
  /** A function tool whose description is `description` and whose one parameter is described by `param`. */
  const tool = (description: string, param: string) => ({
    type: "function",
    function: {
      name: "lookup",
      description,
      parameters: {
        type: "object",
        title: "Lookup",
        properties: { q: { type: "string", description: param, enum: ["kiwi1"] } },
        required: ["q"],
      },
    },
  });
  const chat = (tools: unknown[]) => ({
    model: "sandbox/chat-echo",
    messages: [{ role: "user", content: "hi" }],
    tools,
  });

  it("a block filter refuses text in a tool's description or its parameters' descriptions, on every route", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    await filters(acct);
    for (const t of [tool("finds BANANA", "a query"), tool("finds things", "a BANANA query")]) {
      const res = await status("/chat/completions", acct, chat([t]));
      expect(res.status).toBe(403);
      expect((await errorOf(res)).message).toContain("[FRUIT]");
    }
    const messages = await status("/messages", acct, {
      model: "sandbox/chat-echo",
      max_tokens: 20,
      messages: [{ role: "user", content: "hi" }],
      tools: [{ name: "lookup", description: "finds BANANA", input_schema: { type: "object" } }],
    });
    expect(messages.status).toBe(403);
    const responses = await status("/responses", acct, {
      model: "sandbox/chat-echo",
      input: "hi",
      tools: [
        {
          type: "function",
          name: "lookup",
          description: "finds things",
          parameters: { type: "object", properties: { q: { type: "string", description: "BANANA" } } },
        },
      ],
    });
    expect(responses.status).toBe(403);
    // The same tools without the word pass.
    expect((await status("/chat/completions", acct, chat([tool("finds things", "a query")]))).status).toBe(
      200,
    );
  });

  it("a redact filter rewrites a tool's prose before the provider sees it, and leaves its structure alone", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    await filters(acct);
    const sent = JSON.parse(await upstreamBody(acct, chat([tool("finds kiwi42", "like kiwi7")]))) as {
      echo_upstream_body: { tools: Array<{ function: Record<string, unknown> }> };
    };
    const fn = sent.echo_upstream_body.tools[0]!.function;
    expect(fn.description).toBe("finds [KIWI]");
    expect(fn.parameters).toEqual({
      type: "object",
      title: "Lookup",
      // Prose and the values the model reads (enum, const, default, examples) are filtered; names and
      // types are sent as written.
      properties: { q: { type: "string", description: "like [KIWI]", enum: ["[KIWI]"] } },
      required: ["q"],
    });
    expect(fn.name).toBe("lookup");
  });

  it("a schema's enum, const, default and examples are read by block filters, at any depth", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    await filters(acct);
    const withValue = (value: Record<string, unknown>) =>
      chat([
        {
          type: "function",
          function: {
            name: "lookup",
            parameters: {
              type: "object",
              properties: { q: { type: "object", properties: { deep: { type: "string", ...value } } } },
            },
          },
        },
      ]);
    for (const value of [
      { enum: ["apple", "BANANA"] },
      { const: "BANANA" },
      { default: "a BANANA" },
      { examples: [{ nested: ["BANANA"] }] },
    ]) {
      const res = await status("/chat/completions", acct, withValue(value));
      expect(res.status, JSON.stringify(value)).toBe(403);
    }
    expect((await status("/chat/completions", acct, withValue({ enum: ["apple"] }))).status).toBe(200);
  });

  it("a schema's $comment, x- keywords and property names are read too", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    await filters(acct);
    const withSchema = (parameters: Record<string, unknown>) =>
      chat([{ type: "function", function: { name: "lookup", parameters } }]);
    for (const parameters of [
      { type: "object", $comment: "BANANA", properties: {} },
      { type: "object", "x-instructions": { say: "BANANA" }, properties: {} },
      { type: "object", properties: { BANANA: { type: "string" } } },
    ]) {
      const res = await status("/chat/completions", acct, withSchema(parameters));
      expect(res.status, JSON.stringify(parameters)).toBe(403);
    }
    const sent = JSON.parse(
      await upstreamBody(
        acct,
        withSchema({ type: "object", properties: { kiwi5: { type: "string" } }, required: ["kiwi5"] }),
      ),
    ) as { echo_upstream_body: { tools: Array<{ function: { parameters: unknown } }> } };
    // A redacted property name is redacted where `required` names it too.
    expect(sent.echo_upstream_body.tools[0]!.function.parameters).toEqual({
      type: "object",
      properties: { "[KIWI]": { type: "string" } },
      required: ["[KIWI]"],
    });
  });

  it("a response format's schema prose is filtered like a tool's", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    await filters(acct);
    const format = (description: string) => ({
      model: "sandbox/chat-echo",
      messages: [{ role: "user", content: "hi" }],
      response_format: {
        type: "json_schema",
        json_schema: {
          name: "answer",
          description,
          schema: { type: "object", properties: { a: { type: "string", description: "kiwi9 here" } } },
        },
      },
    });
    const refused = await status("/chat/completions", acct, format("about BANANA"));
    expect(refused.status).toBe(403);
    const sent = JSON.parse(await upstreamBody(acct, format("about kiwi3"))) as {
      echo_upstream_body: { response_format: { json_schema: Record<string, unknown> } };
    };
    expect(sent.echo_upstream_body.response_format.json_schema).toMatchObject({
      name: "answer",
      description: "about [KIWI]",
      schema: { type: "object", properties: { a: { type: "string", description: "[KIWI] here" } } },
    });
  });
});

describe("content filters on speech", () => {
  it("read the voice reference's transcript as well as the input", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    await filters(acct);
    const speech = (transcript: string) =>
      status("/audio/speech", acct, {
        model: "sandbox/tts-mini",
        voice: "alloy",
        input: "hello there",
        input_references: [
          { type: "input_audio", input_audio: { data: btoa("x".repeat(300)), format: "wav" } },
          { type: "text", text: transcript },
        ],
      });
    const refused = await speech("BANANA");
    expect(refused.status).toBe(403);
    expect((await errorOf(refused)).message).toContain("[FRUIT]");
    expect((await speech("a plain transcript")).status).toBe(200);
  });
});

describe("content filters on embeddings given as token ids", () => {
  it("are refused under a block or redact filter (no filter can read token ids); allowed under flag only", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    const tokens = { model: "sandbox/embed-small", input: [[1, 2, 3, 4]] };
    await filters(acct);
    const refused = await status("/embeddings", acct, tokens);
    expect(refused.status).toBe(400);
    expect((await errorOf(refused)).message).toMatch(/Token inputs cannot be read by the content filters/);
    // The same words as text are read, and pass.
    expect((await status("/embeddings", acct, { ...tokens, input: "one two" })).status).toBe(200);

    const flagged = await createAccount({ creditsUsd: 1 });
    await defaultGuardrail(flagged, {
      contentFilters: [{ pattern: "BANANA", action: "flag", label: "fruit" }],
    });
    expect((await status("/embeddings", flagged, tokens)).status).toBe(200);
  });
});

describe("content filters on inline text files", () => {
  const file = (data: string) => ({
    model: "sandbox/chat-echo",
    messages: [
      {
        role: "user",
        content: [
          { type: "text", text: "summarise" },
          { type: "file", file: { filename: "notes.txt", file_data: data } },
        ],
      },
    ],
  });
  const base64 = (text: string) => btoa(String.fromCharCode(...new TextEncoder().encode(text)));

  it("read a text file given inline (base64 or not, any text type); a PDF passes as sent", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    await filters(acct);
    for (const data of [
      `data:text/plain;base64,${base64("the BANANA plan")}`,
      `data:application/json;base64,${base64('{"fruit": "BANANA"}')}`,
      `data:text/csv,${encodeURIComponent("a,BANANA")}`,
    ]) {
      expect((await status("/chat/completions", acct, file(data))).status, data).toBe(403);
    }
    // A redaction reaches the provider in the file, encoded as it was sent.
    const sent = JSON.parse(
      await upstreamBody(
        acct,
        file(`data:text/plain;charset=utf-8;base64,${base64("ask kiwi42 — déjà vu")}`),
      ),
    ) as { echo_upstream_body: { messages: Array<{ content: Array<{ file?: { file_data: string } }> }> } };
    const data = sent.echo_upstream_body.messages[0]!.content[1]!.file!.file_data;
    expect(data.startsWith("data:text/plain;charset=utf-8;base64,")).toBe(true);
    expect(new TextDecoder().decode(Uint8Array.from(atob(data.split(",")[1]!), (c) => c.charCodeAt(0)))).toBe(
      "ask [KIWI] — déjà vu",
    );
    // Not text: passed as sent (its bytes are not what the model reads as text).
    const pdf = `data:application/pdf;base64,${base64("%PDF-1.4 BANANA")}`;
    expect((await status("/chat/completions", acct, file(pdf))).status).toBe(200);
  });

  it("read a text file in its declared charset; one in a charset no filter can read is refused", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    await filters(acct);
    const utf16le = (text: string) => {
      const bytes = new Uint8Array(text.length * 2);
      for (let i = 0; i < text.length; i++)
        new DataView(bytes.buffer).setUint16(i * 2, text.charCodeAt(i), true);
      return btoa(String.fromCharCode(...bytes));
    };
    const latin1 = (text: string) => btoa(text);
    for (const data of [
      `data:text/plain;charset=utf-16le;base64,${utf16le("x BANANA")}`,
      `data:text/plain;charset=ISO-8859-1;base64,${latin1("caf\u00e9 BANANA")}`,
    ]) {
      expect((await status("/chat/completions", acct, file(data))).status, data).toBe(403);
    }
    const unknown = await status(
      "/chat/completions",
      acct,
      file(`data:text/plain;charset=x-klingon;base64,${latin1("hi")}`),
    );
    expect(unknown.status).toBe(400);
    expect((await errorOf(unknown)).message).toContain("charset 'x-klingon'");
    // A redaction is written back as UTF-8, and the header says so.
    const sent = JSON.parse(
      await upstreamBody(acct, file(`data:text/plain;charset=utf-16le;base64,${utf16le("ask kiwi42 now")}`)),
    ) as { echo_upstream_body: { messages: Array<{ content: Array<{ file?: { file_data: string } }> }> } };
    const data = sent.echo_upstream_body.messages[0]!.content[1]!.file!.file_data;
    expect(data.startsWith("data:text/plain;charset=utf-8;base64,")).toBe(true);
    expect(new TextDecoder().decode(Uint8Array.from(atob(data.split(",")[1]!), (c) => c.charCodeAt(0)))).toBe(
      "ask [KIWI] now",
    );
  });
});

describe("content filters on media given by URL", () => {
  const withPart = (part: Record<string, unknown>) => ({
    model: "sandbox/chat-echo",
    messages: [{ role: "user", content: [{ type: "text", text: "look" }, part] }],
  });

  it("read the URL the provider is sent (an image's, a file's); inline image data is not text", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    await filters(acct);
    const image = (url: string) => withPart({ type: "image_url", image_url: { url } });
    const byUrl = (url: string) => withPart({ type: "file", file: { filename: "doc.pdf", file_data: url } });
    expect(
      (await status("/chat/completions", acct, image("https://img.example.com/BANANA.png"))).status,
    ).toBe(403);
    expect(
      (await status("/chat/completions", acct, byUrl("https://files.example.com/BANANA.pdf"))).status,
    ).toBe(403);
    // A redaction reaches the provider in the URL.
    const sent = JSON.parse(await upstreamBody(acct, image("https://img.example.com/kiwi42.png"))) as {
      echo_upstream_body: { messages: Array<{ content: Array<{ image_url?: { url: string } }> }> };
    };
    expect(sent.echo_upstream_body.messages[0]!.content[1]!.image_url!.url).toBe(
      "https://img.example.com/[KIWI].png",
    );
    // Base64 of an inline image is not read (it is not text, and a pattern could match its noise):
    // these letters are base64 that spells the blocked word.
    const inline = "data:image/png;base64,BANANAAA";
    expect((await status("/chat/completions", acct, image(inline))).status).toBe(200);
  });
});
