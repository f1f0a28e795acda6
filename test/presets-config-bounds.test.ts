// A preset's stored config is bounded in depth and a version in size: hostile nesting in a passthrough
// field is a 400, not a stack overflow (500) when the config is serialised (found by test/fuzz), and a system
// prompt too large for a D1 row is a 400, not D1's SQLITE_TOOBIG (a 500); either way nothing is written.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createAccount } from "./helpers/accounts";
import { call, errorOf } from "./helpers/http";

/**
 * `{"0":{"0":...1...}}` with `depth` objects, as text. Index-like keys take JSON.stringify off its
 * iterative fast path, so 20,000 levels overflow the stack there (other shapes go far deeper).
 */
const nestedIndexKeys = (depth: number) => `${'{"0":'.repeat(depth)}1${"}".repeat(depth)}`;

async function presetRows(accountId: string) {
  const presets = await env.DB.prepare("SELECT id FROM presets WHERE account_id = ?").bind(accountId).all();
  const versions = await env.DB.prepare(
    "SELECT v.id FROM preset_versions v JOIN presets p ON p.id = v.preset_id WHERE p.account_id = ?",
  )
    .bind(accountId)
    .all();
  return presets.results.length + versions.results.length;
}

const cases = [
  ["responses", "reasoning", `{"model":"sandbox/chat-echo","reasoning":{"x":${nestedIndexKeys(20_000)}}}`],
  [
    "chat/completions",
    "plugins",
    `{"model":"sandbox/chat-echo","messages":[{"role":"user","content":"hi"}],"plugins":[{"id":"web","x":${nestedIndexKeys(20_000)}}]}`,
  ],
] as const;

describe("POST /presets/{slug}/... with deeply nested passthrough JSON", () => {
  it.each(cases)(
    "%s: %s nested 20,000 deep is a 400 envelope and writes nothing",
    async (kind, _field, text) => {
      const acct = await createAccount();
      const res = await call(`/presets/deep-${kind.replace("/", "-")}/${kind}`, {
        method: "POST",
        key: acct.managementKey,
        body: text,
      });
      expect(res.status).toBe(400);
      expect((await errorOf(res)).message).toMatch(/nested deeper than 64 levels/);
      expect(await presetRows(acct.accountId)).toBe(0);
    },
  );

  it("still stores a config whose bounded fields are as deep as they may be", async () => {
    const acct = await createAccount();
    const parameters = JSON.parse(`${'{"a":'.repeat(31)}{}${"}".repeat(31)}`);
    const res = await call("/presets/deep-ok/chat/completions", {
      method: "POST",
      key: acct.managementKey,
      body: {
        model: "sandbox/chat-echo",
        messages: [{ role: "user", content: "hi" }],
        tools: [{ type: "function", function: { name: "f", parameters } }],
      },
    });
    expect(res.status).toBe(200);
  });
});

describe("POST /presets/{slug}/... with a system prompt too large to store", () => {
  const big = "é".repeat(800_000); // 1.6 MB of UTF-8 in 800,000 characters
  const bodies = [
    ["responses", { model: "sandbox/chat-echo", instructions: big }],
    [
      "chat/completions",
      {
        model: "sandbox/chat-echo",
        messages: [
          { role: "system", content: big.slice(0, 400_000) },
          { role: "system", content: big.slice(0, 400_000) },
        ],
      },
    ],
    ["messages", { model: "sandbox/chat-echo", max_tokens: 10, system: big, messages: [] }],
  ] as const;

  it.each(bodies)("%s: a 400 naming the limit, and no preset or version", async (kind, body) => {
    const acct = await createAccount();
    const res = await call(`/presets/big-${kind.replace("/", "-")}/${kind}`, {
      method: "POST",
      key: acct.managementKey,
      body,
    });
    expect(res.status).toBe(400);
    expect((await errorOf(res)).message).toMatch(
      /at most 1,500,000 bytes of UTF-8 together \(this one 1,6\d\d,\d{3}\)/,
    );
    expect(await presetRows(acct.accountId)).toBe(0);
  });

  it("stores a large prompt within the limit, and serves it", async () => {
    const acct = await createAccount();
    const prompt = "a".repeat(1_400_000);
    const res = await call("/presets/big-ok/responses", {
      method: "POST",
      key: acct.managementKey,
      body: { model: "sandbox/chat-echo", instructions: prompt },
    });
    expect(res.status).toBe(200);
    const { data } = (await res.json()) as { data: { designated_version: { system_prompt: string } } };
    expect(data.designated_version.system_prompt).toHaveLength(1_400_000);
  });
});
