// The admin CLI end to end (npm run test:cli): real wrangler against a fresh local D1 directory, so a
// developer's own local database is never touched. Each wrangler call costs seconds: the cases share state.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";

const ADMIN = fileURLToPath(new URL("../../scripts/admin.mjs", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "gateway-cli-test-"));
const env = { ...process.env, GATEWAY_PERSIST_TO: join(dir, "state"), WRANGLER_SEND_METRICS: "false" };

/** Runs `npm run admin -- ...args`; resolves with the exit code and both streams (never rejects). */
function admin(...args) {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [ADMIN, ...args],
      { env, cwd: fileURLToPath(new URL("../..", import.meta.url)) },
      (error, stdout, stderr) => {
        resolve({ code: error ? error.code : 0, stdout, stderr });
      },
    );
  });
}

async function json(...args) {
  const r = await admin(...args, "--json");
  assert.equal(r.code, 0, `${args.join(" ")}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

/** A usage error: exit code 2, the message on stderr, nothing on stdout. */
async function refused(pattern, ...args) {
  const r = await admin(...args);
  assert.equal(r.code, 2, `${args.join(" ")} exited ${r.code}: ${r.stderr}`);
  assert.match(r.stderr, pattern);
  assert.doesNotMatch(r.stderr, /\n\s+at /, "no stack trace");
  assert.equal(r.stdout, "");
}

after(() => rmSync(dir, { recursive: true, force: true }));

describe("help and argument checks (no database)", () => {
  it("--help lists every command; each command has its own --help", async () => {
    const tool = await admin("--help");
    assert.equal(tool.code, 0);
    for (const c of [
      "accounts create",
      "accounts list",
      "accounts show",
      "credits add",
      "keys create",
      "keys list",
      "keys revoke",
      "catalog load",
      "catalog version",
      "catalog models",
      "doctor",
    ]) {
      assert.match(tool.stdout, new RegExp(`^  ${c} `, "m"), c);
    }
    const one = await admin("credits", "add", "--help");
    assert.equal(one.code, 0);
    assert.match(one.stdout, /--usd VALUE/);
    assert.match(one.stdout, /--reason VALUE/);
    // A group's help lists its commands: with --help (exit 0), or named alone (exit 2, as the bare tool).
    const group = await admin("accounts", "--help");
    assert.equal(group.code, 0);
    assert.match(group.stdout, /^Usage: npm run admin -- accounts <command>/);
    for (const c of ["accounts create", "accounts list", "accounts show"]) {
      assert.match(group.stdout, new RegExp(`^  ${c} `, "m"), c);
    }
    assert.doesNotMatch(group.stdout, /credits add/);
    const alone = await admin("keys");
    assert.equal(alone.code, 2);
    assert.match(alone.stdout, /^ {2}keys revoke /m);
  });

  it("unknown commands and options exit 2 with the usage", async () => {
    await refused(/Unknown command 'accounts frobnicate'/, "accounts", "frobnicate");
    await refused(/Unknown option '--bogus'/, "accounts", "list", "--bogus");
    // Twice the same option (which account gets the credits?) is refused, not guessed.
    await refused(
      /'--account' is given more than once/,
      ...["credits", "add", "--account", "acct_a", "--account", "acct_b", "--usd", "1", "--reason", "x"],
    );
    const bare = await admin();
    assert.equal(bare.code, 2);
  });

  it("refuses bad amounts, missing reasons and malformed ids before touching the database", async () => {
    await refused(
      /--usd got a value starting with '-'/,
      "credits",
      "add",
      "--account",
      "acct_x",
      "--usd",
      "-5",
      "--reason",
      "r",
    );
    await refused(
      /--usd must be a positive amount.*'-5'/,
      "credits",
      "add",
      "--account",
      "acct_x",
      "--usd=-5",
      "--reason",
      "r",
    );
    await refused(
      /--usd must be a positive amount.*'abc'/,
      "credits",
      "add",
      "--account",
      "acct_x",
      "--usd",
      "abc",
      "--reason",
      "r",
    );
    await refused(
      /--usd must be more than 0/,
      "credits",
      "add",
      "--account",
      "acct_x",
      "--usd",
      "0",
      "--reason",
      "r",
    );
    await refused(
      /--usd must be a positive amount.*'1e3'/,
      "credits",
      "add",
      "--account",
      "acct_x",
      "--usd",
      "1e3",
      "--reason",
      "r",
    );
    await refused(/--reason is required/, "credits", "add", "--account", "acct_x", "--usd", "5");
    await refused(
      /--credits must be a positive amount/,
      "accounts",
      "create",
      "--name",
      "n",
      "--credits",
      "lots",
    );
    await refused(/--hash must be 64 lowercase hex/, "keys", "revoke", "--hash", "abc");
    await refused(/--modality must be one of/, "catalog", "models", "--modality", "smell");
  });
});

describe("against a fresh local database", () => {
  let account;
  before(async () => {
    const migrated = await admin("migrate");
    assert.equal(migrated.code, 0, migrated.stderr);
    account = await json("accounts", "create", "--name", "Acme", "--credits", "5");
  });

  it("adds credits with a reason; refused additions write nothing", async () => {
    await refused(
      /No account 'acct_missing'/,
      "credits",
      "add",
      "--account",
      "acct_missing",
      "--usd",
      "5",
      "--reason",
      "r",
    );
    const added = await json(
      "credits",
      "add",
      "--account",
      account.account_id,
      "--usd",
      "10.5",
      "--reason",
      "Conference promo",
    );
    assert.equal(added.added_usd, 10.5);
    const shown = await json("accounts", "show", "--account", account.account_id);
    assert.equal(shown.credits_granted_usd, 15.5);
    assert.equal(shown.balance_usd, 15.5);
    assert.deepEqual(
      shown.recent_actions.map((a) => [a.action, a.reason]),
      [
        ["credits.add", "Conference promo"],
        ["credits.add", "initial credits"],
        ["account.create", null],
      ],
    );
  });

  it("creates, lists and revokes management keys; unknown accounts and workspaces are refused", async () => {
    await refused(/No account 'acct_missing'/, "keys", "create", "--account", "acct_missing");
    await refused(
      /No workspace 'ws_other'/,
      "keys",
      "create",
      "--account",
      account.account_id,
      "--workspace",
      "ws_other",
    );
    const key = await json("keys", "create", "--account", account.account_id, "--name", "ops");
    assert.match(key.key, /^sk-gw-v1-[0-9a-f]{64}$/);
    assert.equal(key.workspace_id, account.workspace_id);
    const listed = await json("keys", "list", "--account", account.account_id);
    assert.deepEqual(
      listed.map((k) => [k.hash, k.name, k.disabled]),
      [[key.hash, "ops", false]],
    );
    assert.ok(!JSON.stringify(listed).includes(key.key), "the list never shows the key itself");
    const revoked = await json("keys", "revoke", "--hash", key.hash, "--reason", "left the team");
    assert.equal(revoked.revoked, true);
    await refused(/already revoked/, "keys", "revoke", "--hash", key.hash);
    const table = await admin("keys", "list", "--account", account.account_id);
    assert.equal(table.code, 0);
    assert.match(table.stdout, /^hash\s+name\s+label\s+workspace\s+revoked\s+created$/m);
    assert.match(table.stdout, /ops\s+sk-gw-v1-[0-9a-f]{3}\.\.\.[0-9a-f]{3}\s+\S+\s+true/);
  });

  it("a seeded key seeded again takes the role it is given and is usable again (npm start's keys)", async () => {
    const { executeSql, hashKey, keySql, newKey, query } = await import("../../scripts/lib/d1.mjs");
    process.env.GATEWAY_PERSIST_TO = env.GATEWAY_PERSIST_TO;
    const key = newKey();
    const seed = (management) =>
      executeSql([
        keySql({
          key,
          accountId: account.account_id,
          workspaceId: account.workspace_id,
          userId: null,
          name: "dev",
          management,
        }),
      ]);
    const row = async () =>
      (
        await query(`SELECT is_management, disabled, expires_at FROM api_keys WHERE hash = '${hashKey(key)}'`)
      )[0];
    await seed(true);
    assert.deepEqual(await row(), { is_management: 1, disabled: 0, expires_at: null });
    await query(
      `UPDATE api_keys SET disabled = 1, expires_at = '2020-01-01T00:00:00.000Z' WHERE hash = '${hashKey(key)}'`,
    );
    await seed(false);
    assert.deepEqual(await row(), { is_management: 0, disabled: 0, expires_at: null });
  });

  it("loads the catalog, shows its version and lists its models; doctor passes", async () => {
    const loaded = await json("catalog", "load");
    const version = await json("catalog", "version");
    assert.deepEqual(version, {
      loaded_version: loaded.version,
      models: loaded.models,
      file_version: loaded.version,
      up_to_date: true,
    });
    const video = await json("catalog", "models", "--modality", "video");
    assert.ok(video.length > 0 && video.every((m) => m.modality === "video"));

    const vars = join(dir, "dev.vars");
    writeFileSync(
      vars,
      `BYOK_MASTER_KEYS={"1":"${Buffer.alloc(32, 7).toString("base64")}"}\nPROVIDER_KEYS={}\n`,
    );
    const checks = await json("doctor", "--vars", vars);
    assert.deepEqual(
      checks.filter((c) => c.status !== "ok"),
      [],
    );
    writeFileSync(vars, `BYOK_MASTER_KEYS={"1":"c2hvcnQ="}\n`);
    const bad = await admin("doctor", "--vars", vars, "--json");
    assert.equal(bad.code, 1);
    assert.match(JSON.parse(bad.stdout).find((c) => c.check === "secrets (local)").detail, /not 32 bytes/);
  });
});
