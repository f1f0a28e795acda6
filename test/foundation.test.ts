// Smoke test of the pipeline: GET /key works with a seeded key.
import { describe, expect, it } from "vitest";
import { createAccount } from "./helpers/accounts";
import { call } from "./helpers/http";

describe("GET /key", () => {
  it("answers with the key's information", async () => {
    const acct = await createAccount({ creditsUsd: 5 });
    const res = await call("/key", { key: acct.apiKey });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { data: { label: string } };
    expect(body.data.label).toMatch(/^sk-gw-v1-[0-9a-f]{3}\.\.\.[0-9a-f]{3}$/);
  });
});
