// Runs SQL against the gateway's D1 database through wrangler: local state by default, remote with --remote.
import { execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

// No telemetry, no prompts, and no fetch of the `Request.cf` placeholder from the internet.
export const quiet = {
  ...process.env,
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

const target = (remote) => (remote ? "--remote" : "--local");

export function applyMigrations({ remote = false } = {}) {
  wrangler(["d1", "migrations", "apply", "DB", target(remote)]);
}

/** Executes SQL statements (a file is used so quoting never matters). */
export function executeSql(statements, { remote = false } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "gateway-sql-"));
  const file = join(dir, "statements.sql");
  writeFileSync(file, `${statements.join(";\n")};\n`);
  try {
    wrangler(["d1", "execute", "DB", target(remote), "--file", file], { capture: true });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs one query and returns its rows. */
export function query(sql, { remote = false } = {}) {
  const out = wrangler(["d1", "execute", "DB", target(remote), "--json", "--command", sql], {
    capture: true,
  });
  return JSON.parse(out)[0]?.results ?? [];
}

export const q = (value) => (value == null ? "NULL" : `'${String(value).replaceAll("'", "''")}'`);

// Same format as src/lib/api-keys.ts: prefix + 64 hex characters, stored only as its SHA-256.
export const API_KEY_PREFIX = "sk-gw-v1-";
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

export function keySql({ key, accountId, workspaceId, userId, name, management }) {
  return `INSERT OR IGNORE INTO api_keys (hash, account_id, workspace_id, name, label, is_management, allowed_data_regions, creator_user_id) VALUES (${q(hashKey(key))}, ${q(accountId)}, ${q(workspaceId)}, ${q(name)}, ${q(maskKey(key))}, ${management ? 1 : 0}, '["global","europe","us"]', ${q(userId)})`;
}
