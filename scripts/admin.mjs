// Operator commands with no HTTP operation: accounts, credits, management keys, the catalog, and a doctor.
// `npm run admin -- --help` lists them; every command validates its input before it writes anything.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { userInfo } from "node:os";
import { parseArgs } from "node:util";
import { Failure, output, progress, table, UsageError } from "./lib/cli.mjs";
import {
  accountSql,
  applyMigrationsAsync,
  creditsSql,
  executeSqlAsync,
  hashKey,
  keySql,
  maskKey,
  newKey,
  q,
  queryAsync,
  WranglerError,
  wranglerAsync,
} from "./lib/d1.mjs";

const GLOBAL_OPTIONS = {
  json: { type: "boolean", description: "print JSON instead of a table (for scripts)" },
  remote: { type: "boolean", description: "the deployed D1 database instead of the local one" },
  help: { type: "boolean", short: "h", description: "show this command's help" },
};

/** The largest grant one command may add: a typo guard, not a business rule. */
const MAX_GRANT_USD = 1_000_000;

// ---- input ----

function required(opts, name) {
  const value = opts[name];
  if (value === undefined || value === "") throw new UsageError(`--${name} is required`);
  return value;
}

/** A positive USD amount with at most 6 decimals (micro-dollars), as text so "1e3" or "0x10" are refused. */
function amount(name, raw) {
  if (!/^\d+(\.\d+)?$/.test(raw)) {
    throw new UsageError(`--${name} must be a positive amount in USD, like 25 or 12.50 (got '${raw}')`);
  }
  const usd = Number(raw);
  if (usd <= 0) throw new UsageError(`--${name} must be more than 0 (got '${raw}')`);
  if (usd > MAX_GRANT_USD) throw new UsageError(`--${name} must be at most ${MAX_GRANT_USD} (got '${raw}')`);
  if ((raw.split(".")[1] ?? "").length > 6)
    throw new UsageError(`--${name} has more than 6 decimals (micro-dollars)`);
  return usd;
}

function text(name, raw, max) {
  const value = raw.trim();
  if (value.length === 0 || value.length > max)
    throw new UsageError(`--${name} must be 1 to ${max} characters`);
  return value;
}

function identifier(name, raw) {
  if (!/^[A-Za-z0-9_.:-]{1,128}$/.test(raw)) throw new UsageError(`--${name} '${raw}' is not an id`);
  return raw;
}

const actor = () => process.env.USER || userInfo().username || "unknown";
const usd = (micros) => Number(micros ?? 0) / 1_000_000;

function auditSql({ action, accountId, reason = null, detail = null }) {
  const id = crypto.randomUUID();
  const json = detail ? JSON.stringify(detail) : null;
  return `INSERT INTO admin_audit (id, action, account_id, actor, reason, detail) VALUES (${q(id)}, ${q(action)}, ${q(accountId)}, ${q(actor())}, ${q(reason)}, ${q(json)})`;
}

// ---- database ----

/** Runs read statements; a database without the schema gets the command that makes it. */
async function read(sql, ctx, label = "Reading the database") {
  try {
    return await progress(label, () => queryAsync(sql, { remote: ctx.remote }));
  } catch (err) {
    if (err instanceof WranglerError && /no such table/.test(err.message)) {
      throw new Failure(
        `The ${ctx.remote ? "remote" : "local"} database has no schema yet: run \`npm run admin -- migrate${ctx.remote ? " --remote" : ""}\``,
      );
    }
    throw err;
  }
}

async function write(statements, ctx, label = "Writing") {
  await progress(label, () => executeSqlAsync(statements, { remote: ctx.remote }));
}

/**
 * The account and the rows of `more` statements, in one wrangler call (each call costs seconds); an
 * unknown account is a usage error.
 */
async function withAccount(id, ctx, more = [], label = "Looking up the account") {
  const [[account], ...rest] = await read(
    [`SELECT id, name, default_workspace_id AS workspace_id FROM accounts WHERE id = ${q(id)}`, ...more].join(
      ";\n",
    ),
    ctx,
    label,
  );
  if (!account) throw new UsageError(`No account '${id}' (\`npm run admin -- accounts list\` shows them)`);
  return [account, ...rest];
}

// ---- commands ----

const COMMANDS = {
  migrate: {
    summary: "Apply the D1 migrations (schema/migrations) that are not applied yet",
    options: {},
    async run(_, ctx) {
      await progress("Applying migrations", () => applyMigrationsAsync({ remote: ctx.remote }));
      const [applied] = await read("SELECT name, applied_at FROM d1_migrations ORDER BY id", ctx);
      return {
        result: applied,
        columns: [
          ["name", "migration"],
          ["applied_at", "applied at"],
        ],
      };
    },
  },

  "accounts create": {
    summary: "Create an account with its default workspace and an admin user",
    options: {
      name: { type: "string", description: "the account's name (required)" },
      email: { type: "string", description: "the admin user's email (default: <user id>@accounts.local)" },
      credits: { type: "string", description: "initial credits in USD" },
      reason: { type: "string", description: "why the initial credits are given (default: initial credits)" },
    },
    async run(o, ctx) {
      const name = text("name", required(o, "name"), 200);
      if (o.email !== undefined && !/^[^\s@]+@[^\s@]+$/.test(o.email))
        throw new UsageError(`--email '${o.email}' is not an email address`);
      const credits = o.credits === undefined ? null : amount("credits", o.credits);
      const reason = o.reason === undefined ? "initial credits" : text("reason", o.reason, 500);
      const ids = {
        accountId: `acct_${crypto.randomUUID()}`,
        workspaceId: crypto.randomUUID(),
        userId: `user_${crypto.randomUUID()}`,
      };
      const statements = accountSql({ ...ids, name, email: o.email ?? `${ids.userId}@accounts.local` });
      statements.push(auditSql({ action: "account.create", accountId: ids.accountId, detail: { name } }));
      if (credits !== null) {
        statements.push(creditsSql({ accountId: ids.accountId, usd: credits, note: reason }));
        statements.push(
          auditSql({ action: "credits.add", accountId: ids.accountId, reason, detail: { usd: credits } }),
        );
      }
      await write(statements, ctx, "Creating the account");
      return {
        result: {
          account_id: ids.accountId,
          workspace_id: ids.workspaceId,
          user_id: ids.userId,
          name,
          credits_usd: credits ?? 0,
        },
      };
    },
  },

  "accounts list": {
    summary: "List accounts with their credits granted and key counts",
    options: {},
    async run(_, ctx) {
      const [rows] = await read(
        `SELECT a.id, a.name, a.created_at,
           (SELECT count(*) FROM api_keys k WHERE k.account_id = a.id) AS keys,
           (SELECT coalesce(sum(amount_micros), 0) FROM credit_grants g WHERE g.account_id = a.id) AS granted
         FROM accounts a ORDER BY a.created_at, a.id`,
        ctx,
      );
      const result = rows.map((r) => ({
        id: r.id,
        name: r.name,
        credits_granted_usd: usd(r.granted),
        keys: r.keys,
        created_at: r.created_at,
      }));
      return {
        result,
        columns: [
          ["id", "account"],
          ["name", "name"],
          ["credits_granted_usd", "granted $"],
          ["keys", "keys"],
          ["created_at", "created"],
        ],
      };
    },
  },

  "accounts show": {
    summary: "Show an account's balance (from D1 records) and its recent admin actions",
    options: { account: { type: "string", description: "account id (required)" } },
    async run(o, ctx) {
      const id = identifier("account", required(o, "account"));
      const [account, [money], audit] = await withAccount(id, ctx, [
        `SELECT
           (SELECT coalesce(sum(amount_micros), 0) FROM credit_grants WHERE account_id = ${q(id)}) AS granted,
           (SELECT coalesce(sum(cost_micros), 0) FROM generations WHERE account_id = ${q(id)} AND is_byok = 0) AS spent,
           (SELECT coalesce(sum(cost_micros), 0) FROM generations WHERE account_id = ${q(id)} AND is_byok = 1) AS byok`,
        `SELECT created_at, action, actor, reason, detail FROM admin_audit WHERE account_id = ${q(id)} ORDER BY created_at DESC, rowid DESC LIMIT 10`,
      ]);
      const result = {
        account_id: account.id,
        name: account.name,
        default_workspace_id: account.workspace_id,
        credits_granted_usd: usd(money.granted),
        spent_usd: usd(money.spent),
        balance_usd: usd(money.granted - money.spent),
        byok_spent_usd: usd(money.byok),
        recent_actions: audit.map((a) => ({ ...a, detail: a.detail ? JSON.parse(a.detail) : null })),
      };
      if (ctx.json) return { result };
      const { recent_actions, ...summary } = result;
      const fields = Object.entries(summary).map(([field, value]) => ({ field, value }));
      return {
        text: `${table(fields, [
          ["field", "field"],
          ["value", "value"],
        ])}\n\nThe ledger (GET /credits) is the live balance; this sums D1's records.\n\nRecent admin actions:\n${table(
          recent_actions.map((a) => ({ ...a, detail: a.detail ? JSON.stringify(a.detail) : null })),
          [
            ["created_at", "when"],
            ["action", "action"],
            ["actor", "by"],
            ["reason", "reason"],
            ["detail", "detail"],
          ],
        )}`,
      };
    },
  },

  "credits add": {
    summary: "Add credits to an account; the reason is kept in the audit log",
    options: {
      account: { type: "string", description: "account id (required)" },
      usd: { type: "string", description: "amount in USD, more than 0 (required)" },
      reason: { type: "string", description: "why, kept with the grant and in admin_audit (required)" },
    },
    async run(o, ctx) {
      const id = identifier("account", required(o, "account"));
      const added = amount("usd", required(o, "usd"));
      const reason = text("reason", required(o, "reason"), 500);
      await withAccount(id, ctx);
      const grantId = crypto.randomUUID();
      await write(
        [
          creditsSql({ grantId, accountId: id, usd: added, note: reason }),
          auditSql({
            action: "credits.add",
            accountId: id,
            reason,
            detail: { usd: added, grant_id: grantId },
          }),
        ],
        ctx,
        "Adding credits",
      );
      return { result: { account_id: id, added_usd: added, reason, grant_id: grantId } };
    },
  },

  "keys create": {
    summary: "Create a management key (printed once; only its hash is stored)",
    options: {
      account: { type: "string", description: "account id (required)" },
      workspace: { type: "string", description: "workspace id (default: the account's default workspace)" },
      name: { type: "string", description: "the key's name (default: management)" },
    },
    async run(o, ctx) {
      const id = identifier("account", required(o, "account"));
      const workspaceArg = o.workspace === undefined ? undefined : identifier("workspace", o.workspace);
      const name = o.name === undefined ? "management" : text("name", o.name, 200);
      // The named workspace, else the account's default, read with the account in one call.
      const wanted = workspaceArg
        ? q(workspaceArg)
        : `(SELECT default_workspace_id FROM accounts WHERE id = ${q(id)})`;
      const [account, [workspace], [user]] = await withAccount(id, ctx, [
        `SELECT id FROM workspaces WHERE id = ${wanted} AND account_id = ${q(id)} AND deleted_at IS NULL`,
        `SELECT id FROM users WHERE account_id = ${q(id)} ORDER BY created_at LIMIT 1`,
      ]);
      if (!workspaceArg && !account.workspace_id)
        throw new UsageError(`Account '${id}' has no default workspace; pass --workspace`);
      if (!workspace)
        throw new UsageError(`No workspace '${workspaceArg ?? account.workspace_id}' in account '${id}'`);
      const workspaceId = workspace.id;
      const key = newKey();
      const hash = hashKey(key);
      await write(
        [
          keySql({ key, accountId: id, workspaceId, userId: user?.id ?? null, name, management: true }),
          auditSql({
            action: "management_key.create",
            accountId: id,
            detail: { hash, name, workspace_id: workspaceId },
          }),
        ],
        ctx,
        "Creating the key",
      );
      return {
        result: { key, hash, label: maskKey(key), account_id: id, workspace_id: workspaceId, name },
        note: "The key is shown only now; store it somewhere safe.",
      };
    },
  },

  "keys list": {
    summary: "List an account's management keys",
    options: { account: { type: "string", description: "account id (required)" } },
    async run(o, ctx) {
      const id = identifier("account", required(o, "account"));
      const [, rows] = await withAccount(id, ctx, [
        `SELECT hash, name, label, workspace_id, disabled, created_at FROM api_keys
         WHERE account_id = ${q(id)} AND is_management = 1 ORDER BY created_at, hash`,
      ]);
      const result = rows.map((r) => ({ ...r, disabled: r.disabled === 1 }));
      return {
        result,
        columns: [
          ["hash", "hash"],
          ["name", "name"],
          ["label", "label"],
          ["workspace_id", "workspace"],
          ["disabled", "revoked"],
          ["created_at", "created"],
        ],
      };
    },
  },

  "keys revoke": {
    summary: "Revoke (disable) a management key by its hash",
    options: {
      hash: { type: "string", description: "the key's SHA-256 hash, as `keys list` shows it (required)" },
      reason: { type: "string", description: "why, kept in admin_audit" },
    },
    async run(o, ctx) {
      const hash = required(o, "hash");
      if (!/^[0-9a-f]{64}$/.test(hash))
        throw new UsageError(`--hash must be 64 lowercase hex characters (got '${hash}')`);
      const reason = o.reason === undefined ? null : text("reason", o.reason, 500);
      const [[key]] = await read(
        `SELECT hash, account_id, is_management, disabled FROM api_keys WHERE hash = ${q(hash)}`,
        ctx,
        "Looking up the key",
      );
      if (!key) throw new UsageError(`No key with hash '${hash}'`);
      if (key.is_management !== 1)
        throw new UsageError("That is not a management key; regular keys are managed through the keys API");
      if (key.disabled === 1) throw new UsageError("That key is already revoked");
      await write(
        [
          `UPDATE api_keys SET disabled = 1, updated_at = strftime('%Y-%m-%dT%H:%M:%fZ','now') WHERE hash = ${q(hash)}`,
          // Cached copies of the key record stop being honoured at admission (docs/billing.md, "Authority").
          `UPDATE accounts SET authority_version = authority_version + 1 WHERE id = ${q(key.account_id)}`,
          auditSql({ action: "management_key.revoke", accountId: key.account_id, reason, detail: { hash } }),
        ],
        ctx,
        "Revoking the key",
      );
      return { result: { hash, account_id: key.account_id, revoked: true } };
    },
  },

  "catalog load": {
    summary: "Validate catalog/catalog.json and load it into D1 (replacing the catalog there)",
    options: {},
    async run(_, ctx) {
      const { statements, catalog } = await progress("Validating the catalog", catalogStatements);
      await write(statements, ctx, "Loading the catalog");
      const endpoints = catalog.models.reduce((n, m) => n + m.endpoints.length, 0);
      return {
        result: {
          version: catalog.version,
          models: catalog.models.length,
          endpoints,
          database: ctx.remote ? "remote" : "local",
        },
      };
    },
  },

  "catalog version": {
    summary: "Show the catalog version loaded in D1 and the one in catalog/catalog.json",
    options: {},
    async run(_, ctx) {
      const [rows] = await read(
        "SELECT catalog_version AS version, count(*) AS models FROM models GROUP BY catalog_version",
        ctx,
      );
      const file = catalogFileVersion();
      const loaded = rows.map((r) => r.version).join(", ") || null;
      return {
        result: {
          loaded_version: loaded,
          models: rows.reduce((n, r) => n + r.models, 0),
          file_version: file,
          up_to_date: loaded === file,
        },
      };
    },
  },

  "catalog models": {
    summary: "List the models loaded in D1",
    options: { modality: { type: "string", description: "only chat, embeddings, speech or video" } },
    async run(o, ctx) {
      const modalities = ["chat", "embeddings", "speech", "video"];
      if (o.modality !== undefined && !modalities.includes(o.modality)) {
        throw new UsageError(`--modality must be one of ${modalities.join(", ")} (got '${o.modality}')`);
      }
      const where = o.modality ? `WHERE m.modality = ${q(o.modality)}` : "";
      const [rows] = await read(
        `SELECT m.slug, m.modality, m.is_free, m.catalog_version,
           (SELECT group_concat(e.provider, ', ') FROM endpoints e WHERE e.model_slug = m.slug) AS providers
         FROM models m ${where} ORDER BY m.slug`,
        ctx,
      );
      const result = rows.map((r) => ({ ...r, is_free: r.is_free === 1 }));
      return {
        result,
        columns: [
          ["slug", "model"],
          ["modality", "modality"],
          ["is_free", "free"],
          ["providers", "providers"],
        ],
      };
    },
  },

  doctor: {
    summary: "Check bindings, applied migrations, secrets and the loaded catalog (exit 1 if one fails)",
    options: { vars: { type: "string", description: "local secrets file (default: .dev.vars)" } },
    async run(o, ctx) {
      const checks = [
        ...(await progress("Reading wrangler.toml", checkBindings)),
        ...(await checkDatabase(ctx)),
        ...(await progress("Checking secrets", () => checkSecrets(o.vars ?? ".dev.vars", ctx))),
      ];
      const failed = checks.filter((c) => c.status === "fail").length;
      return {
        result: checks,
        columns: [
          ["check", "check"],
          ["status", "status"],
          ["detail", "detail"],
        ],
        exitCode: failed ? 1 : 0,
        note: failed ? `${failed} check(s) failed` : "All checks passed",
      };
    },
  },
};

// ---- catalog and doctor helpers ----

/** catalog/catalog.json parsed, or a Failure naming the file. */
function catalogFile() {
  try {
    return JSON.parse(readFileSync(new URL("../catalog/catalog.json", import.meta.url), "utf8"));
  } catch (error) {
    throw new Failure(`catalog/catalog.json cannot be read as JSON: ${error.message}`);
  }
}

function catalogFileVersion() {
  return catalogFile().version;
}

async function catalogStatements() {
  const { tsImport } = await import("tsx/esm/api");
  const { CatalogSchema } = await tsImport("../src/catalog/schema.ts", import.meta.url);
  const sql = await tsImport("../src/catalog/sql.ts", import.meta.url);
  const parsed = CatalogSchema.safeParse(catalogFile());
  if (!parsed.success) {
    const issues = parsed.error.issues.slice(0, 10).map((i) => `  ${i.path.join(".")}: ${i.message}`);
    throw new Failure(`catalog/catalog.json is invalid:\n${issues.join("\n")}`);
  }
  return { catalog: parsed.data, statements: sql.catalogStatements(parsed.data).map(sql.renderStatement) };
}

const REGION_ENVS = [
  ["global", undefined],
  ["europe", "europe"],
  ["us", "us"],
];

/** Each regional deployment's bindings as wrangler reads them: D1 with migrations, both Durable Objects, REGION. */
async function checkBindings() {
  const { unstable_readConfig } = await import("wrangler");
  return REGION_ENVS.map(([region, env]) => {
    const config = unstable_readConfig({ config: "wrangler.toml", env });
    const problems = [];
    const db = config.d1_databases.find((d) => d.binding === "DB");
    if (!db) problems.push("no D1 binding DB");
    else if (db.migrations_dir !== "schema/migrations")
      problems.push("DB's migrations_dir is not schema/migrations");
    for (const name of ["LEDGER", "VIDEO_JOBS"]) {
      if (!config.durable_objects.bindings.some((b) => b.name === name))
        problems.push(`no Durable Object binding ${name}`);
    }
    if (config.vars.REGION !== region) problems.push(`REGION is '${config.vars.REGION}', not '${region}'`);
    // The global worker consumes the generation records every deployment produces (docs/storage.md).
    const consumer = config.queues?.consumers?.find((c) => c.queue === "gateway-generations");
    if (region === "global" && !consumer?.dead_letter_queue)
      problems.push("no consumer of gateway-generations with a dead-letter queue");
    const limiter = config.ratelimits?.some((r) => r.name === "ABUSE_LIMITER");
    const producer = config.queues?.producers?.some((q) => q.binding === "GENERATIONS");
    const missing = [
      ...(limiter ? [] : ["no ABUSE_LIMITER rate limit"]),
      ...(producer ? [] : ["no GENERATIONS queue (records are written to D1 on the request's background)"]),
    ];
    return {
      check: `bindings (${region})`,
      status: problems.length ? "fail" : missing.length ? "warn" : "ok",
      detail:
        problems.join("; ") || missing.join("; ") || "DB, LEDGER, VIDEO_JOBS, ABUSE_LIMITER, GENERATIONS",
    };
  });
}

async function checkDatabase(ctx) {
  const files = readdirSync(new URL("../schema/migrations/", import.meta.url)).filter((f) =>
    f.endsWith(".sql"),
  );
  let applied;
  try {
    [applied] = await read("SELECT name FROM d1_migrations", ctx, "Reading applied migrations");
  } catch (err) {
    const detail =
      err instanceof Failure || /no such table/.test(err.message)
        ? "none applied: run `npm run admin -- migrate`"
        : err.message;
    return [
      { check: "migrations", status: "fail", detail },
      { check: "catalog", status: "fail", detail: "no database to read" },
    ];
  }
  const names = new Set(applied.map((r) => r.name));
  const missing = files.filter((f) => !names.has(f));
  const migrations = {
    check: "migrations",
    status: missing.length ? "fail" : "ok",
    detail: missing.length
      ? `not applied: ${missing.join(", ")} (npm run admin -- migrate)`
      : `${files.length} applied`,
  };
  const [rows] = await read(
    "SELECT catalog_version AS version, count(*) AS models FROM models GROUP BY catalog_version",
    ctx,
    "Reading the catalog",
  );
  const file = catalogFileVersion();
  const loaded = rows.map((r) => r.version);
  const catalog = {
    check: "catalog",
    status: rows.length === 0 ? "fail" : loaded.length === 1 && loaded[0] === file ? "ok" : "warn",
    detail:
      rows.length === 0
        ? "no models loaded (npm run admin -- catalog load)"
        : `version ${loaded.join(", ")}, ${rows.reduce((n, r) => n + r.models, 0)} models${loaded[0] === file ? "" : `; catalog.json is ${file}`}`,
  };
  return [migrations, catalog];
}

/** BYOK_MASTER_KEYS must hold 32-byte keys; PROVIDER_KEYS is optional (the sandbox needs none). */
function masterKeysProblem(value) {
  let keys;
  try {
    keys = JSON.parse(value);
  } catch {
    return "is not JSON";
  }
  if (!keys || typeof keys !== "object" || Object.keys(keys).length === 0) return "names no key";
  for (const [version, key] of Object.entries(keys)) {
    if (!/^\d+$/.test(version)) return `version '${version}' is not a number`;
    if (typeof key !== "string" || Buffer.from(key, "base64").length !== 32)
      return `version ${version} is not 32 bytes of base64`;
  }
  return null;
}

async function checkSecrets(varsFile, ctx) {
  if (!ctx.remote) {
    if (!existsSync(varsFile))
      return [
        { check: "secrets (local)", status: "fail", detail: `${varsFile} is missing (npm start writes one)` },
      ];
    const vars = Object.fromEntries(
      readFileSync(varsFile, "utf8")
        .split("\n")
        .filter((l) => /^[A-Z_]+=/.test(l))
        .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1).replace(/^"(.*)"$/, "$1")]),
    );
    const problem =
      vars.BYOK_MASTER_KEYS === undefined
        ? "BYOK_MASTER_KEYS is missing"
        : masterKeysProblem(vars.BYOK_MASTER_KEYS);
    return [
      {
        check: "secrets (local)",
        status: problem ? "fail" : vars.PROVIDER_KEYS === undefined ? "warn" : "ok",
        detail: problem
          ? `${varsFile}: ${problem.startsWith("BYOK") ? problem : `BYOK_MASTER_KEYS ${problem}`}`
          : vars.PROVIDER_KEYS === undefined
            ? "no PROVIDER_KEYS: only the sandbox and BYOK can serve"
            : "BYOK_MASTER_KEYS, PROVIDER_KEYS",
      },
    ];
  }
  // Remote: names only (wrangler never shows values).
  return Promise.all(
    REGION_ENVS.map(async ([region, env]) => {
      try {
        const out = await wranglerAsync([
          "secret",
          "list",
          "--format",
          "json",
          ...(env ? ["--env", env] : []),
        ]);
        const names = JSON.parse(out).map((s) => s.name);
        const missing = ["BYOK_MASTER_KEYS", "PROVIDER_KEYS"].filter((n) => !names.includes(n));
        return {
          check: `secrets (${region})`,
          status: missing.length ? "fail" : "ok",
          detail: missing.length ? `missing: ${missing.join(", ")}` : "BYOK_MASTER_KEYS, PROVIDER_KEYS",
        };
      } catch (err) {
        return { check: `secrets (${region})`, status: "fail", detail: err.message };
      }
    }),
  );
}

// ---- the command line ----

function optionLines(options) {
  return Object.entries({ ...options, ...GLOBAL_OPTIONS }).map(
    ([name, o]) => `  --${name}${o.type === "string" ? " VALUE" : ""}`.padEnd(24) + o.description,
  );
}

function toolHelp() {
  const names = Object.keys(COMMANDS);
  const width = Math.max(...names.map((n) => n.length)) + 2;
  return `Usage: npm run admin -- <command> [options]

Commands:
${names.map((n) => `  ${n.padEnd(width)}${COMMANDS[n].summary}`).join("\n")}

Every command takes --json (print JSON for scripts), --remote (the deployed database) and --help.
Bad input exits with code 2 and writes nothing; a failed check or operation exits with 1.`;
}

function commandHelp(name) {
  return `Usage: npm run admin -- ${name} [options]

${COMMANDS[name].summary}.

Options:
${optionLines(COMMANDS[name].options).join("\n")}`;
}

/** The command named by the first one or two words, and the arguments after it. */
function resolve(argv) {
  const words = argv.filter((a) => !a.startsWith("-")).slice(0, 2);
  for (const n of [2, 1]) {
    const name = words.slice(0, n).join(" ");
    if (COMMANDS[name] && argv.slice(0, n).join(" ") === name) return { name, args: argv.slice(n) };
  }
  return null;
}

export async function main(argv) {
  if (argv.length === 0 || argv[0] === "--help" || argv[0] === "-h" || argv[0] === "help") {
    process.stdout.write(`${toolHelp()}\n`);
    return argv.length === 0 ? 2 : 0;
  }
  const found = resolve(argv);
  const group = argv[0];
  const inGroup = Object.keys(COMMANDS).filter((n) => n.split(" ")[0] === group);
  if (!found && inGroup.length > 0 && argv.slice(1).every((a) => a === "--help" || a === "-h")) {
    // A group named alone (`accounts`) or with --help: its commands, as the tool's help lists them.
    const width = Math.max(...inGroup.map((n) => n.length)) + 2;
    process.stdout.write(
      `Usage: npm run admin -- ${group} <command> [options]\n\nCommands:\n${inGroup
        .map((n) => `  ${n.padEnd(width)}${COMMANDS[n].summary}`)
        .join("\n")}\n\nEach takes --help for its options.\n`,
    );
    return argv.length > 1 ? 0 : 2;
  }
  if (!found)
    throw new UsageError(
      `Unknown command '${argv
        .filter((a) => !a.startsWith("-"))
        .slice(0, 2)
        .join(" ")}'\n\n${toolHelp()}`,
    );
  const spec = COMMANDS[found.name];
  let values;
  try {
    let tokens;
    ({ values, tokens } = parseArgs({
      args: found.args,
      options: { ...spec.options, ...GLOBAL_OPTIONS },
      strict: true,
      allowPositionals: false,
      tokens: true,
    }));
    // An option given twice (two --account on a credits add) is a mistake to stop at, not to guess.
    const seen = new Set();
    for (const t of tokens) {
      if (t.kind !== "option") continue;
      if (seen.has(t.name)) throw new Error(`Option '--${t.name}' is given more than once`);
      seen.add(t.name);
    }
  } catch (err) {
    // `--usd -5` reads as a missing value followed by an option: say what it is.
    const dashed = /Option '(--\w+)' argument is ambiguous/.exec(err.message);
    const message = dashed
      ? `${dashed[1]} got a value starting with '-'; amounts must be positive`
      : err.message.split("\n")[0];
    throw new UsageError(`${message}\n\n${commandHelp(found.name)}`);
  }
  if (values.help) {
    process.stdout.write(`${commandHelp(found.name)}\n`);
    return 0;
  }
  const ctx = { json: Boolean(values.json), remote: Boolean(values.remote) };
  const outcome = await spec.run(values, ctx);
  if (outcome.text !== undefined) process.stdout.write(`${outcome.text}\n`);
  else output(outcome.result, { json: ctx.json, columns: outcome.columns });
  if (outcome.note && !ctx.json) process.stderr.write(`${outcome.note}\n`);
  return outcome.exitCode ?? 0;
}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (err) {
  if (err instanceof UsageError || err instanceof Failure) {
    process.stderr.write(`error: ${err.message}\n`);
    process.exitCode = err.exitCode;
  } else if (err instanceof WranglerError) {
    process.stderr.write(`error: wrangler failed: ${err.message}\n`);
    process.exitCode = 1;
  } else {
    process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  }
}
