// lib/sealing.ts, the one AES-GCM module: values sealed by the code it replaced (BYOK credentials and
// webhook secrets each had their own) still open, and each stays bound to its owner.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { fromBase64, toBase64 } from "../src/lib/base64";
import { decryptByokKey, encryptByokKey } from "../src/lib/byok-crypto";
import { MasterKeyError, open, seal } from "../src/lib/sealing";
import { openSecret, sealSecret } from "../src/webhooks/secrets";

const KEY_1 = env.BYOK_MASTER_KEYS ? (JSON.parse(env.BYOK_MASTER_KEYS) as Record<string, string>)["1"]! : "";

/** What the replaced code did: AES-GCM with a random IV under master key version 1, base64 out. */
async function sealedTheOldWay(aad: string, plaintext: string) {
  const key = await crypto.subtle.importKey("raw", fromBase64(KEY_1), "AES-GCM", false, ["encrypt"]);
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const ct = await crypto.subtle.encrypt(
    { name: "AES-GCM", iv, additionalData: new TextEncoder().encode(aad) },
    key,
    new TextEncoder().encode(plaintext),
  );
  return { iv: toBase64(iv), ciphertext: toBase64(new Uint8Array(ct)), keyVersion: "1" };
}

describe("lib/sealing.ts", () => {
  it("opens BYOK credentials sealed by the previous byok-crypto code, and only for their row", async () => {
    const binding = {
      workspaceId: crypto.randomUUID(),
      provider: "openai",
      credentialId: crypto.randomUUID(),
    };
    const old = await sealedTheOldWay(
      JSON.stringify(["byok-v1", binding.workspaceId, binding.provider, binding.credentialId]),
      "sk-old-secret",
    );
    const row = { id: binding.credentialId, workspaceId: binding.workspaceId, provider: "openai", ...old };
    expect(await decryptByokKey(env, row)).toBe("sk-old-secret");
    expect(await decryptByokKey(env, { ...row, provider: "anthropic" })).toBeNull();
    const resealed = await encryptByokKey(env, binding, "sk-new-secret");
    expect(await decryptByokKey(env, { ...row, ...resealed })).toBe("sk-new-secret");
  });

  it("opens webhook secrets sealed by the previous secrets code (version:iv:ciphertext), only for their workspace", async () => {
    const workspaceId = crypto.randomUUID();
    const old = await sealedTheOldWay(`webhook-secret:${workspaceId}`, "whsec_old");
    const stored = `${old.keyVersion}:${old.iv}:${old.ciphertext}`;
    expect(await openSecret(env, workspaceId, stored)).toBe("whsec_old");
    await expect(openSecret(env, crypto.randomUUID(), stored)).rejects.toThrow(/cannot be opened/);
    const fresh = await sealSecret(env, workspaceId, "whsec_new");
    expect(fresh).toMatch(/^1:[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+$/);
    expect(await openSecret(env, workspaceId, fresh)).toBe("whsec_new");
  });

  it("refuses tampering, unknown versions and a missing or malformed master key", async () => {
    const aad = new TextEncoder().encode("owner");
    const sealed = await seal(env, aad, "value");
    const flipped = fromBase64(sealed.ciphertext);
    flipped[0] = flipped[0]! ^ 1;
    expect(await open(env, { ...sealed, ciphertext: toBase64(flipped) }, aad)).toBeNull();
    expect(await open(env, { ...sealed, keyVersion: "9" }, aad)).toBeNull();
    await expect(seal({}, aad, "x")).rejects.toBeInstanceOf(MasterKeyError);
    await expect(seal({ BYOK_MASTER_KEYS: '{"1":"c2hvcnQ="}' }, aad, "x")).rejects.toThrow(
      /not a base64 32-byte key/,
    );
  });
});
