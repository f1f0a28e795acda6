// Request bodies sent compressed (Content-Encoding gzip or deflate) are decoded, within the route's size
// limit once decoded; other encodings, a body that is not what its encoding says, and a charset other than
// UTF-8 are a 400 naming the header, never a misleading "malformed JSON" nor text decoded as the wrong
// charset and billed (found by a hostile probe: a Latin-1 body reached the model as U+FFFD and was charged).
import { env } from "cloudflare:test";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { getDb, tables } from "../src/db/client";
import { BODY_LIMITS } from "../src/middleware/body";
import { createAccount } from "./helpers/accounts";
import { BASE, errorOf, send } from "./helpers/http";

const chat = (content: string) =>
  JSON.stringify({ model: "sandbox/chat-echo", messages: [{ role: "user", content }] });

async function compressed(data: string | Uint8Array, format: "gzip" | "deflate"): Promise<Uint8Array> {
  const stream = new Blob([data]).stream().pipeThrough(new CompressionStream(format));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

function post(key: string, body: BodyInit, headers: Record<string, string>) {
  return send(
    new Request(`${BASE}/chat/completions`, {
      method: "POST",
      headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json", ...headers },
      body,
    }),
  );
}

async function generationsOf(accountId: string) {
  return getDb(env.DB).select().from(tables.generations).where(eq(tables.generations.accountId, accountId));
}

describe("Content-Encoding", () => {
  it.each(["gzip", "deflate"] as const)("a %s body is decoded and answered", async (format) => {
    const acct = await createAccount({ creditsUsd: 1 });
    const res = await post(acct.apiKey, await compressed(chat("squeezed hello"), format), {
      "Content-Encoding": format,
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { choices: Array<{ message: { content: string } }> };
    expect(body.choices[0]!.message.content).toContain("squeezed hello");
  });

  it("an encoding the gateway does not decode is a 400 naming it, and nothing is generated", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    const res = await post(acct.apiKey, chat("hi"), { "Content-Encoding": "br" });
    expect(res.status).toBe(400);
    expect((await errorOf(res)).message).toBe(
      "Content-Encoding 'br' is not supported: send the body as it is, or compressed with gzip or deflate",
    );
    expect(await generationsOf(acct.accountId)).toEqual([]);
  });

  it("a plain body labelled gzip is a 400 saying so, not 'malformed JSON'", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    const res = await post(acct.apiKey, chat("hi"), { "Content-Encoding": "gzip" });
    expect(res.status).toBe(400);
    expect((await errorOf(res)).message).toBe("Request body is not valid gzip data (its Content-Encoding)");
    expect(await generationsOf(acct.accountId)).toEqual([]);
  });

  it("compressed bytes past the route's limit are a 413 however little they decode to", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    // Random bytes do not compress: the gzip stream is larger than the 1 MiB a management route takes.
    const noise = new Uint8Array(1_200_000);
    for (let i = 0; i < noise.length; i += 65_536) crypto.getRandomValues(noise.subarray(i, i + 65_536));
    const res = await send(
      new Request(`${BASE}/keys`, {
        method: "POST",
        headers: {
          Authorization: `Bearer ${acct.managementKey}`,
          "Content-Type": "application/json",
          "Content-Encoding": "gzip",
        },
        body: await compressed(noise, "gzip"),
      }),
    );
    expect(res.status).toBe(413);
    expect((await errorOf(res)).message).toBe("Request body is larger than the 1 MiB this operation accepts");
  });

  it("a body that inflates past the route's limit is a 413, read no further than the limit", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    const bomb = await compressed(new Uint8Array(BODY_LIMITS.chat + 1024).fill(32), "gzip");
    expect(bomb.byteLength).toBeLessThan(100_000);
    const res = await post(acct.apiKey, bomb, { "Content-Encoding": "gzip" });
    expect(res.status).toBe(413);
    expect((await errorOf(res)).message).toBe(
      "Request body is larger than the 16 MiB this operation accepts",
    );
  });
});

describe("charset", () => {
  it("a charset other than UTF-8 is a 400, and nothing is generated", async () => {
    const acct = await createAccount({ creditsUsd: 1 });
    const latin1 = new Uint8Array([
      ...new TextEncoder().encode(chat("caf_")).map((b) => (b === 95 ? 0xe9 : b)),
    ]);
    const res = await post(acct.apiKey, latin1, { "Content-Type": "application/json; charset=iso-8859-1" });
    expect(res.status).toBe(400);
    expect((await errorOf(res)).message).toBe(
      "Request bodies are JSON in UTF-8 (RFC 8259): charset 'iso-8859-1' is not accepted",
    );
    expect(await generationsOf(acct.accountId)).toEqual([]);
  });

  it.each(["utf-8", "UTF8", '"utf-8"', "us-ascii"])("charset=%s is read as it is", async (charset) => {
    const acct = await createAccount({ creditsUsd: 1 });
    const res = await post(acct.apiKey, chat("café"), {
      "Content-Type": `application/json; charset=${charset}`,
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { choices: Array<{ message: { content: string } }> };
    expect(body.choices[0]!.message.content).toContain("café");
  });
});
