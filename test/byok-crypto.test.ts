// BYOK key sealing: round trip, fresh IVs, binding to the row, master-key rotation and masking.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import {
  decryptByokKey,
  encryptByokKey,
  maskKey,
  needsReseal,
  resealedColumns,
} from "../src/lib/byok-crypto";

const binding = () => ({
  workspaceId: crypto.randomUUID(),
  provider: "openai",
  credentialId: crypto.randomUUID(),
});
const rowOf = (b: ReturnType<typeof binding>, sealed: Awaited<ReturnType<typeof encryptByokKey>>) => ({
  id: b.credentialId,
  workspaceId: b.workspaceId,
  provider: b.provider,
  ...sealed,
});

const KEY_2 = btoa(String.fromCharCode(...new Uint8Array(32).fill(7)));

describe("encryptByokKey / decryptByokKey", () => {
  it("round-trips and never stores the plaintext", async () => {
    const b = binding();
    const sealed = await encryptByokKey(env, b, "sk-live-secret-value-1234");
    expect(sealed.ciphertext).not.toContain("secret");
    expect(atob(sealed.iv)).toHaveLength(12);
    expect(await decryptByokKey(env, rowOf(b, sealed))).toBe("sk-live-secret-value-1234");
  });

  it("uses a fresh IV each time", async () => {
    const b = binding();
    const a = await encryptByokKey(env, b, "same");
    const c = await encryptByokKey(env, b, "same");
    expect(a.iv).not.toBe(c.iv);
    expect(a.ciphertext).not.toBe(c.ciphertext);
  });

  it("refuses a ciphertext moved to another row, workspace or provider", async () => {
    const b = binding();
    const row = rowOf(b, await encryptByokKey(env, b, "sk-moved"));
    expect(await decryptByokKey(env, { ...row, id: crypto.randomUUID() })).toBeNull();
    expect(await decryptByokKey(env, { ...row, workspaceId: crypto.randomUUID() })).toBeNull();
    expect(await decryptByokKey(env, { ...row, provider: "anthropic" })).toBeNull();
  });

  it("refuses a tampered ciphertext", async () => {
    const b = binding();
    const row = rowOf(b, await encryptByokKey(env, b, "sk-tamper"));
    const bytes = Uint8Array.from(atob(row.ciphertext), (c) => c.charCodeAt(0));
    bytes[0]! ^= 1;
    expect(await decryptByokKey(env, { ...row, ciphertext: btoa(String.fromCharCode(...bytes)) })).toBeNull();
  });

  it("encrypts with the newest master key and still decrypts older versions", async () => {
    const b = binding();
    const old = rowOf(b, await encryptByokKey(env, b, "sk-old"));
    expect(old.keyVersion).toBe("1");
    const rotated = {
      BYOK_MASTER_KEYS: JSON.stringify({ ...JSON.parse(env.BYOK_MASTER_KEYS!), "10": KEY_2, "9": KEY_2 }),
    };
    expect(await needsReseal(rotated, old)).toBe(true);
    const fresh = await encryptByokKey(rotated, b, "sk-new");
    expect(fresh.keyVersion).toBe("10");
    expect(await decryptByokKey(rotated, old)).toBe("sk-old");
    expect(await decryptByokKey(rotated, rowOf(b, fresh))).toBe("sk-new");
    // Retiring version 1 makes its rows unreadable rather than readable under another key.
    expect(await decryptByokKey({ BYOK_MASTER_KEYS: JSON.stringify({ "10": KEY_2 }) }, old)).toBeNull();
  });

  it("fails loudly when the master key secret is missing or malformed", async () => {
    await expect(encryptByokKey({}, binding(), "x")).rejects.toThrow(/not configured/);
    await expect(encryptByokKey({ BYOK_MASTER_KEYS: '{"1":"c2hvcnQ="}' }, binding(), "x")).rejects.toThrow(
      /32-byte/,
    );
  });
});

describe("resealedColumns", () => {
  it("moves a row sealed under an older master key to the newest, and leaves current rows alone", async () => {
    const b = binding();
    const old = rowOf(b, await encryptByokKey(env, b, "sk-rotate-me"));
    expect(await resealedColumns(env, old)).toEqual({});
    const rotated = {
      BYOK_MASTER_KEYS: JSON.stringify({ ...JSON.parse(env.BYOK_MASTER_KEYS!), "2": KEY_2 }),
    };
    const moved = await resealedColumns(rotated, old);
    expect(moved.keyVersion).toBe("2");
    expect(await decryptByokKey(rotated, { ...old, ...moved })).toBe("sk-rotate-me");
    // A ciphertext that does not open is left as it is (and stays unusable).
    expect(await resealedColumns(rotated, { ...old, id: crypto.randomUUID() })).toEqual({});
  });

  it("seals a replacement key with its new label", async () => {
    const b = binding();
    const row = rowOf(b, await encryptByokKey(env, b, "sk-first-key-000000"));
    const next = await resealedColumns(env, row, "sk-second-key-00009999");
    expect(next.label).toBe("sk-...9999");
    expect(await decryptByokKey(env, { ...row, ...next })).toBe("sk-second-key-00009999");
  });
});

describe("maskKey", () => {
  it("shows the prefix and the last four characters only", () => {
    expect(maskKey("sk-abcdefghijklmnopqrstuvwxyzAbCd")).toBe("sk-...AbCd");
    expect(maskKey("sk-ant-api03-xxxxxxxxxxxxxxxxxxxxWXYZ")).toBe("sk-...WXYZ");
    expect(maskKey("AIzaSyA-very-long-google-key-1234")).toBe("...1234");
    expect(maskKey("shortkey12")).toBe("...12");
  });
});
