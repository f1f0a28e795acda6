// Applies the D1 migrations and loads the catalog before each test file.
import { applyD1Migrations, env } from "cloudflare:test";
import catalogJson from "../catalog/catalog.json";
import { CatalogSchema } from "../src/catalog/schema";
import { catalogStatements } from "../src/catalog/sql";

await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
await env.DB.batch(
  catalogStatements(CatalogSchema.parse(catalogJson)).map((s) => env.DB.prepare(s.sql).bind(...s.params)),
);
