// Runs SQL against the gateway's D1 database through wrangler: local state by default, remote with --remote.
import { execFile, execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** The checkout this script belongs to. */
export const ROOT = fileURLToPath(new URL("../..", import.meta.url));

// No telemetry, no prompts, and no fetch of the `Request.cf` placeholder from the internet. The dev
// registry (how local workers find each other's Durable Objects) lives inside this checkout, so two
// checkouts on one machine never bind each other's workers; an explicit WRANGLER_REGISTRY_PATH wins.
export const quiet = {
  ...process.env,
  WRANGLER_REGISTRY_PATH: process.env.WRANGLER_REGISTRY_PATH || join(ROOT, ".wrangler", "registry"),
  WRANGLER_SEND_METRICS: "false",
  CLOUDFLARE_CF_FETCH_ENABLED: "false",
  CI: "true",
};

export function wrangler(args, { capture = false } = {}) {
  return execFileSync("npx", ["wrangler", ...args], {
    env: quiet,
    stdio: capture ? ["ignore", "pipe", "pipe"] : "inherit",
    encoding: "utf8",
  });
}

/**
 * `--remote`, or `--local` with wrangler's default state (.wrangler/state) unless GATEWAY_PERSIST_TO names
 * another directory (the CLI tests use a fresh one, so they never touch a developer's local database).
 */
const target = (remote) => {
  if (remote) return "--remote";
  const dir = process.env.GATEWAY_PERSIST_TO;
  return dir ? ["--local", "--persist-to", dir] : "--local";
};

/** Runs wrangler without blocking the event loop (so progress can be shown); rejects with its own words. */
export function wranglerAsync(args) {
  // wrangler's own entry point under this Node: npx would add seconds of package resolution per call.
  const bin = join(ROOT, "node_modules", "wrangler", "bin", "wrangler.js");
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [bin, ...args.flat()],
      { env: quiet, maxBuffer: 64 << 20 },
      (error, stdout, stderr) => {
        if (!error) return resolve(stdout);
        reject(new WranglerError(wranglerMessage(`${stdout}\n${stderr}`) || error.message));
      },
    );
  });
}

export class WranglerError extends Error {}

/** The lines of wrangler's output that say what went wrong, without its banner and log noise. */
function wranglerMessage(output) {
  const lines = output
    .split("\n")
    .map((l) => l.trim())
    .filter(
      (l) => l && !/^(⛅️|─|npm warn|\[wrangler|🌀|Resource location|Executing on|To execute on)/.test(l),
    );
  const error = lines.findIndex((l) => /ERROR|error/.test(l));
  return (error >= 0 ? lines.slice(error, error + 3) : lines.slice(-3)).join(" ").replace(/^✘\s*/, "");
}

/** Runs statements in one wrangler call and returns each statement's rows. */
export async function queryAsync(sql, { remote = false } = {}) {
  const out = await wranglerAsync(["d1", "execute", "DB", target(remote), "--json", "--command", sql]);
  return JSON.parse(out).map((r) => r.results ?? []);
}

/** Executes statements from a file (so quoting never matters), in one wrangler call. */
export async function executeSqlAsync(statements, { remote = false } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "gateway-sql-"));
  const file = join(dir, "statements.sql");
  writeFileSync(file, `${statements.join(";\n")};\n`);
  try {
    await wranglerAsync(["d1", "execute", "DB", target(remote), "--file", file]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function applyMigrationsAsync({ remote = false } = {}) {
  return wranglerAsync(["d1", "migrations", "apply", "DB", target(remote)]);
}

export function applyMigrations({ remote = false } = {}) {
  wrangler(["d1", "migrations", "apply", "DB", target(remote)].flat());
}

/** Executes SQL statements (a file is used so quoting never matters). */
export function executeSql(statements, { remote = false } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "gateway-sql-"));
  const file = join(dir, "statements.sql");
  writeFileSync(file, `${statements.join(";\n")};\n`);
  try {
    wrangler(["d1", "execute", "DB", target(remote), "--file", file].flat(), { capture: true });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs one query and returns its rows. */
export function query(sql, { remote = false } = {}) {
  const out = wrangler(["d1", "execute", "DB", target(remote), "--json", "--command", sql].flat(), {
    capture: true,
  });
  return JSON.parse(out)[0]?.results ?? [];
}

export const q = (value) => (value == null ? "NULL" : `'${String(value).replaceAll("'", "''")}'`);

// Same format as src/lib/api-keys.ts: prefix + 64 hex characters, stored only as its SHA-256.
export const API_KEY_PREFIX = "sk-gw-v1-";
/** Whether the gateway would accept this as a bearer key at all (src/middleware/auth.ts TOKEN_PATTERN). */
export const isUsableToken = (key) => /^[A-Za-z0-9._~+/=-]{16,256}$/.test(key);
export const newKey = () => `${API_KEY_PREFIX}${randomBytes(32).toString("hex")}`;
export const hashKey = (key) => createHash("sha256").update(key).digest("hex");
export const maskKey = (key) => {
  const secret = key.slice(API_KEY_PREFIX.length);
  return `${API_KEY_PREFIX}${secret.slice(0, 3)}...${secret.slice(-3)}`;
};

export function accountSql({ accountId, workspaceId, userId, name, email }) {
  return [
    `INSERT OR IGNORE INTO accounts (id, name, default_workspace_id) VALUES (${q(accountId)}, ${q(name)}, ${q(workspaceId)})`,
    `INSERT OR IGNORE INTO workspaces (id, account_id, name, slug, default_guardrail_id) VALUES (${q(workspaceId)}, ${q(accountId)}, 'Default', 'default', ${q(crypto.randomUUID())})`,
    `INSERT OR IGNORE INTO users (id, account_id, email, name) VALUES (${q(userId)}, ${q(accountId)}, ${q(email)}, ${q(name)})`,
    `INSERT OR IGNORE INTO members (workspace_id, user_id, role) VALUES (${q(workspaceId)}, ${q(userId)}, 'admin')`,
  ];
}

export function creditsSql({ grantId = crypto.randomUUID(), accountId, usd, note }) {
  const micros = Math.round(Number(usd) * 1_000_000);
  return `INSERT OR IGNORE INTO credit_grants (id, account_id, amount_micros, note) VALUES (${q(grantId)}, ${q(accountId)}, ${micros}, ${q(note ?? null)})`;
}

/**
 * A key made what the script says it is: a row already there for the account (a restart of `npm start`
 * with DEV_MANAGEMENT_KEY and DEV_API_KEY swapped, or a seeded key disabled or given an expiry in the
 * console) takes the role and is usable again, since the script prints it as such; one the operator
 * revoked (`admin keys revoke`) stays revoked. The account's authority version is raised so no isolate
 * or ledger keeps the old record.
 */
export function keySql({ key, accountId, workspaceId, userId, name, management }) {
  return [
    `INSERT INTO api_keys (hash, account_id, workspace_id, name, label, is_management, allowed_data_regions, creator_user_id) VALUES (${q(hashKey(key))}, ${q(accountId)}, ${q(workspaceId)}, ${q(name)}, ${q(maskKey(key))}, ${management ? 1 : 0}, '["global","europe","us"]', ${q(userId)}) ON CONFLICT(hash) DO UPDATE SET is_management = excluded.is_management, disabled = 0, expires_at = NULL, updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE api_keys.account_id = excluded.account_id AND (api_keys.is_management <> excluded.is_management OR api_keys.disabled <> 0 OR api_keys.expires_at IS NOT NULL) AND NOT EXISTS (SELECT 1 FROM admin_audit WHERE admin_audit.action = 'management_key.revoke' AND json_extract(admin_audit.detail, '$.hash') = api_keys.hash)`,
    `UPDATE accounts SET authority_version = authority_version + 1 WHERE id = ${q(accountId)}`,
  ].join(";\n");
}

/**
 * A fresh local database in `state` (wrangler's --persist-to) for a load script: the migrations, the
 * catalog, and one account named `label` with $100 of credits and a management key, which it returns.
 * `dir` holds the seed file.
 */
export function seedLocalAccount({ state, dir, label }) {
  const slug = label.replaceAll(" ", "_");
  const ids = {
    accountId: `acct_${slug}_${crypto.randomUUID().slice(0, 8)}`,
    workspaceId: crypto.randomUUID(),
    userId: `user_${slug}`,
    name: label,
    email: `${slug}@localhost`,
  };
  const managementKey = newKey();
  const persist = ["--local", "--persist-to", state];
  wrangler(["d1", "migrations", "apply", "DB", ...persist], { capture: true });
  const catalog = execFileSync(process.execPath, [join(ROOT, "scripts/catalog.mjs"), "--print"], {
    encoding: "utf8",
    maxBuffer: 64 << 20,
  });
  const rows = [
    ...accountSql(ids),
    creditsSql({ accountId: ids.accountId, usd: 100, note: label }),
    keySql({ ...ids, key: managementKey, name: `${label} management`, management: true }),
  ];
  const file = join(dir, "seed.sql");
  writeFileSync(file, `${catalog}\n${rows.join(";\n")};\n`);
  wrangler(["d1", "execute", "DB", ...persist, "--file", file], { capture: true });
  return managementKey;
}
