// `npm start[:region]`: migrate and seed the local D1 state, then serve one regional deployment locally.
// Every region shares the same local state (.wrangler/state), so a key works on any ingress.
import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import {
  accountSql,
  applyMigrations,
  creditsSql,
  executeSql,
  isUsableToken,
  keySql,
  newKey,
  quiet,
} from "./lib/d1.mjs";

const region = process.argv[2] ?? "global";
const record = JSON.parse(readFileSync(new URL(`../regions/${region}.json`, import.meta.url), "utf8"));
const port = Number(process.env.PORT ?? record.localPort);

// Fixed ids make seeding idempotent: running npm start again changes nothing.
const DEV = {
  accountId: "acct_dev",
  workspaceId: "00000000-0000-4000-8000-000000000001",
  userId: "user_dev",
  name: "Local developer",
  email: "dev@localhost",
};

/**
 * The dev keys: DEV_MANAGEMENT_KEY / DEV_API_KEY when set, else the saved ones, else new ones. A key given
 * here is checked as the gateway checks any bearer key (16 to 256 of [A-Za-z0-9._~+/=-]; the two must
 * differ) before anything is seeded: a bad one stops `npm start` with exit code 2 instead of seeding a
 * key no request could ever present.
 */
function devKeys() {
  const file = ".dev/keys.json";
  const saved = existsSync(file) ? JSON.parse(readFileSync(file, "utf8")) : {};
  const keys = {
    managementKey: process.env.DEV_MANAGEMENT_KEY || saved.managementKey || newKey(),
    apiKey: process.env.DEV_API_KEY || saved.apiKey || newKey(),
  };
  const problems = [
    ["DEV_MANAGEMENT_KEY", keys.managementKey],
    ["DEV_API_KEY", keys.apiKey],
  ]
    .filter(([, key]) => !isUsableToken(key))
    .map(
      ([name]) =>
        `${name} must be 16 to 256 characters of A-Z a-z 0-9 . _ ~ + / = - (the gateway refuses any other key)`,
    );
  if (keys.managementKey === keys.apiKey) problems.push("DEV_MANAGEMENT_KEY and DEV_API_KEY must differ");
  if (problems.length) {
    console.error(
      `Cannot seed the dev keys:\n  ${problems.join("\n  ")}\n(${file} holds the last ones used)`,
    );
    process.exit(2);
  }
  mkdirSync(".dev", { recursive: true });
  writeFileSync(file, `${JSON.stringify(keys, null, 2)}\n`);
  return keys;
}

/** Local secrets: a random BYOK master key, generated once and kept out of git. */
function devVars() {
  if (existsSync(".dev.vars")) return;
  const key = randomBytes(32).toString("base64");
  writeFileSync(".dev.vars", `BYOK_MASTER_KEYS={"1":"${key}"}\nPROVIDER_KEYS={}\n`);
}

/**
 * Until the first production deploy the schema is a single initial migration that is rebuilt on change
 * (scripts/db-generate.mjs), so local D1 state made from an older version is reset rather than patched.
 */
function resetStaleLocalD1() {
  const dir = "schema/migrations";
  const digest = createHash("sha256");
  for (const f of readdirSync(dir)
    .filter((f) => f.endsWith(".sql"))
    .sort())
    digest.update(readFileSync(`${dir}/${f}`));
  const stamp = ".wrangler/state/migrations.sha256";
  const current = digest.digest("hex");
  if (existsSync(stamp) && readFileSync(stamp, "utf8") !== current) {
    console.log("Schema changed since the local database was made: resetting local D1 state.");
    rmSync(".wrangler/state/v3/d1", { recursive: true, force: true });
  }
  mkdirSync(".wrangler/state", { recursive: true });
  writeFileSync(stamp, current);
}

const keys = devKeys();
resetStaleLocalD1();
applyMigrations();
executeSql([
  ...accountSql(DEV),
  creditsSql({ grantId: "grant_dev_initial", accountId: DEV.accountId, usd: 100, note: "dev seed" }),
  keySql({ ...DEV, key: keys.managementKey, name: "dev management", management: true }),
  keySql({ ...DEV, key: keys.apiKey, name: "dev api", management: false }),
]);
if (existsSync("scripts/catalog.mjs")) {
  const { status } = await import("node:child_process").then(({ spawnSync }) =>
    spawnSync(process.execPath, ["scripts/catalog.mjs", "--local"], { stdio: "inherit", env: quiet }),
  );
  if (status !== 0) process.exit(status ?? 1);
}
devVars();

const base = `http://127.0.0.1:${port}/api/v1`;
console.log(`
Gateway (${region}) on ${base}
  management key: ${keys.managementKey}
  api key:        ${keys.apiKey}
  (saved in .dev/keys.json)

  curl ${base}/key -H "Authorization: Bearer ${keys.apiKey}"
`);

const args = [
  "wrangler",
  "dev",
  "--ip",
  "127.0.0.1",
  "--port",
  String(port),
  "--inspector-port",
  String(port + 1000),
  // request.url as the client sent it (127.0.0.1:<port>), not the route's production host: the index's
  // links and the API reference's "this deployment" server must point at this local gateway.
  "--infer-origin-from-routes=false",
];
if (record.wranglerEnv) args.push("--env", record.wranglerEnv);
const child = spawn("npx", args, { stdio: "inherit", env: quiet });
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal));
child.on("exit", (code) => process.exit(code ?? 0));
