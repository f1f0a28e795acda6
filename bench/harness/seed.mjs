// Prepares the bench's own D1 (never the dev checkout's .wrangler/state): migrations, a catalog whose bench
// endpoints point at the mock upstream, an account with credits and its API keys.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { tsImport } from "tsx/esm/api";
import { accountSql, creditsSql, keySql, newKey } from "../../scripts/lib/d1.mjs";

const root = new URL("../..", import.meta.url).pathname;

export const BENCH_ACCOUNT = {
  accountId: "acct_bench",
  workspaceId: "00000000-0000-4000-8000-0000000000be",
  userId: "user_bench",
  name: "bench",
  email: "bench@localhost",
};

/** schema/migrations/*.sql in order, each split into statements as wrangler splits them. */
export async function applyMigrations(db) {
  const { unstable_splitSqlQuery } = await import("wrangler");
  const dir = join(root, "schema/migrations");
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith(".sql"))
    .sort()) {
    const statements = unstable_splitSqlQuery(readFileSync(join(dir, file), "utf8"));
    await db.batch(statements.map((s) => db.prepare(s)));
  }
}

/**
 * catalog/catalog.json plus the scenarios' own models (their base URLs on the mock), validated with the
 * catalog's schema and loaded with the same statements `npm run catalog:load` runs.
 */
export async function loadCatalog(db, benchModels) {
  const { CatalogSchema } = await tsImport("../../src/catalog/schema.ts", import.meta.url);
  const { catalogStatements } = await tsImport("../../src/catalog/sql.ts", import.meta.url);
  const shipped = JSON.parse(readFileSync(join(root, "catalog/catalog.json"), "utf8"));
  const catalog = CatalogSchema.parse({
    version: `bench-${shipped.version}`,
    models: [...shipped.models, ...benchModels],
  });
  await db.batch(catalogStatements(catalog).map((s) => db.prepare(s.sql).bind(...s.params)));
}

/** The bench account with plenty of credits and `count` regular API keys; returns the keys. */
export async function seedAccount(db, count = 1) {
  const keys = Array.from({ length: count }, () => newKey());
  const statements = [
    ...accountSql(BENCH_ACCOUNT),
    creditsSql({ accountId: BENCH_ACCOUNT.accountId, usd: 100_000, note: "bench" }),
    ...keys.map((key, i) => keySql({ ...BENCH_ACCOUNT, key, name: `bench ${i}`, management: false })),
  ];
  await db.batch(statements.map((s) => db.prepare(s)));
  return keys;
}
