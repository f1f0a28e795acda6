// Admission reserves a ceiling on the prompt's tokens, not an estimate: one token per UTF-8 byte, which no
// byte-level tokenizer exceeds. With three characters a token, a prompt of rare CJK (2.5 tokens a
// character in cl100k) let a capped key spend six times its cap (found by a hostile probe).
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import {
  billedPromptTokens,
  estimatePromptTokens,
  hasFileByUrl,
  promptTokenCeiling,
  utf8Bytes,
} from "../../src/inference/prompt-estimate";
import { geminiUnboundedMedia } from "../../src/providers/google/request";
import type { ChatMessage } from "../../src/providers/types";
import { addByok, createAccount, createKey } from "../helpers/accounts";
import { call } from "../helpers/http";
import { chatCompletionBody, json, mockUpstream } from "../helpers/upstream";

let restore: (() => void) | undefined;
afterEach(() => restore?.());

/** 10,000 UTF-16 units of rare CJK: 25,000 tokens in cl100k (as counted by gpt-tokenizer), 30,000 UTF-8 bytes. */
const CJK = "龘靐齉麤".repeat(2_500);
const CJK_TOKENS = 25_000;

describe("billedPromptTokens (a cut stream's prompt)", () => {
  it("counts the text the messages carry, not their JSON, plus 3 tokens a message and 3 for the reply", () => {
    const text = "x".repeat(396);
    // 396 + "user" = 400 characters: 100 tokens, and 3 + 3 of framing.
    expect(billedPromptTokens([{ role: "user", content: text }], {})).toBe(106);
    const turns: ChatMessage[] = Array.from({ length: 10 }, (_, i) => ({
      role: i % 2 ? "assistant" : "user",
      content: [{ type: "text", text: "ok" }],
    }));
    // 5 x ("user" + "text" + "ok") + 5 x ("assistant" + "text" + "ok") = 50 + 75 = 125 characters.
    expect(billedPromptTokens(turns, {})).toBe(Math.ceil(125 / 4) + 33);
  });

  it("prices images by kind, not by their base64", () => {
    const photo: ChatMessage[] = [
      {
        role: "user",
        content: [{ type: "image_url", image_url: { url: `data:image/png;base64,${"A".repeat(300_000)}` } }],
      },
    ];
    expect(billedPromptTokens(photo, {})).toBeLessThan(2_600);
  });

  it("never exceeds the ceiling admission reserves", () => {
    fc.assert(
      fc.property(fc.array(fc.string(), { minLength: 1, maxLength: 5 }), (texts) => {
        const messages: ChatMessage[] = texts.map((content) => ({ role: "user", content }));
        return billedPromptTokens(messages, {}) <= promptTokenCeiling(messages);
      }),
      { numRuns: 500 },
    );
  });
});

describe("utf8Bytes", () => {
  it("is the length TextEncoder gives, lone surrogates (sent as U+FFFD) included", () => {
    const encoder = new TextEncoder();
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), (s) => utf8Bytes(s) === encoder.encode(s).length),
      { numRuns: 2_000 },
    );
    for (const s of ["", "abc", "é", "龘", "🦄", "\ud800", "\udc00x", "a\ud83e\udd84b"]) {
      expect(utf8Bytes(s), JSON.stringify(s)).toBe(encoder.encode(s).length);
    }
  });

  it("makes the prompt ceiling at least the text's bytes, where the old estimate was a third of its characters", () => {
    const messages = [{ role: "user" as const, content: CJK }];
    expect(promptTokenCeiling(messages)).toBeGreaterThanOrEqual(30_000);
    expect(promptTokenCeiling(messages)).toBeGreaterThan(CJK_TOKENS);
  });
});

/**
 * `count` parallel requests to `path` on a fresh key capped at `limitUsd` (BYOK counted in the cap): some
 * are served, the rest refused with 402, and the key's spend ends within its cap.
 */
async function spendWithinCap(opts: {
  route: string;
  answer: unknown;
  limitUsd: number;
  count: number;
  body: unknown;
}) {
  const acct = await createAccount({ creditsUsd: 5 });
  await addByok(acct, "openai", "sk-user-openai-key");
  const upstream = mockUpstream({ [`POST api.openai.com/v1${opts.route}`]: () => json(opts.answer) });
  restore = upstream.restore;
  const key = await createKey(acct, { limitUsd: opts.limitUsd, includeByokInLimit: true });
  const answers = await Promise.all(
    Array.from({ length: opts.count }, () =>
      call(opts.route, { method: "POST", key: key.key, body: opts.body }),
    ),
  );
  const statuses = answers.map((r) => r.status);
  await Promise.all(answers.map((r) => r.arrayBuffer()));
  expect(statuses.filter((s) => s === 200).length).toBeGreaterThan(0);
  expect(statuses.filter((s) => s !== 200 && s !== 402)).toEqual([]);
  const info = (await (await call("/key", { key: key.key })).json()) as {
    data: { byok_usage: number; limit: number };
  };
  expect(info.data.byok_usage).toBeGreaterThan(0);
  expect(info.data.byok_usage).toBeLessThanOrEqual(info.data.limit);
}

describe("a capped key and a prompt that takes more tokens than characters", () => {
  it("chat: parallel requests on a key capped at $0.03 never spend past it", async () => {
    await spendWithinCap({
      route: "/chat/completions",
      answer: chatCompletionBody(CJK_TOKENS),
      // Room for two ceilings ($0.012 each at $0.40 per million); the old estimate reserved $0.0014.
      limitUsd: 0.03,
      count: 20,
      body: { model: "openai/gpt-4.1-mini", max_tokens: 1, messages: [{ role: "user", content: CJK }] },
    });
  });

  it("embeddings: the same, with a token per byte where it was a token per character", async () => {
    await spendWithinCap({
      route: "/embeddings",
      answer: {
        object: "list",
        model: "text-embedding-3-small",
        data: [{ object: "embedding", index: 0, embedding: [0.1, 0.2] }],
        usage: { prompt_tokens: CJK_TOKENS, total_tokens: CJK_TOKENS },
      },
      limitUsd: 0.0008,
      count: 10,
      body: { model: "openai/text-embedding-3-small", input: CJK },
    });
  });
});

describe("media given by URL, whose tokens the gateway cannot see before the call", () => {
  const pdfByUrl = {
    type: "file" as const,
    file: { filename: "r.pdf", file_data: "https://example.com/r.pdf" },
  };

  it("is told apart from media it can measure", () => {
    const user = (content: ChatMessage["content"]): ChatMessage[] => [{ role: "user", content }];
    expect(hasFileByUrl(user([pdfByUrl]))).toBe(true);
    expect(
      hasFileByUrl(user([{ type: "file", file: { file_data: "data:application/pdf;base64,JVBERi0=" } }])),
    ).toBe(false);
    expect(hasFileByUrl(user("https://example.com/r.pdf"))).toBe(false);
    // Gemini fetches any URL and reads inline data of any type: only typed images are bounded.
    const image = (url: string) => user([{ type: "image_url", image_url: { url } }]);
    expect(geminiUnboundedMedia(image("https://www.youtube.com/watch?v=aaaaaaaaaaa"))).toBe(true);
    expect(geminiUnboundedMedia(image("data:video/mp4;base64,AAAA"))).toBe(true);
    expect(geminiUnboundedMedia(image("https://example.com/cat.png?w=800"))).toBe(false);
    expect(geminiUnboundedMedia(image("data:image/png;base64,iVBORw0KGgo="))).toBe(false);
    // A file of inline video is billed by its length there too; a PDF by its pages (fewer than its bytes).
    const file = (data: string) => user([{ type: "file", file: { file_data: data } }]);
    expect(geminiUnboundedMedia(file("data:video/mp4;base64,AAAA"))).toBe(true);
    expect(geminiUnboundedMedia(file("data:audio/mp3;base64,AAAA"))).toBe(true);
    expect(geminiUnboundedMedia(file("data:application/pdf;base64,JVBERi0="))).toBe(false);
  });

  it("reserves audio at low bitrates' tokens: an hour of 8 kbps MP3 is 115,200 tokens on Gemini", () => {
    const hour = "A".repeat(4_800_000);
    const messages: ChatMessage[] = [
      { role: "user", content: [{ type: "input_audio", input_audio: { data: hour, format: "mp3" } }] },
    ];
    expect(promptTokenCeiling(messages)).toBeGreaterThanOrEqual(115_200);
    // What is billed when no usage comes stays the estimate of 128 kbps audio.
    expect(estimatePromptTokens(messages)).toBeLessThan(10_000);
  });

  it("chat: a file by URL reserves the model's window, so parallel requests stay within a $1 cap", async () => {
    // The upstream bills 900,000 prompt tokens ($0.36) for the file: a 60-token reservation let every
    // request in; the window ($0.42) lets two.
    await spendWithinCap({
      route: "/chat/completions",
      answer: chatCompletionBody(900_000),
      limitUsd: 1,
      count: 5,
      body: {
        model: "openai/gpt-4.1-mini",
        max_tokens: 1,
        messages: [{ role: "user", content: [{ type: "text", text: "Summarize" }, pdfByUrl] }],
      },
    });
  });
});
