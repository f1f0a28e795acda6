// Applies the D1 migrations and loads the catalog before each test file; every test starts with no
// endpoint health remembered (tests read attempt logs, which an earlier test's outages would reorder).
import { applyD1Migrations, env } from "cloudflare:test";
import { beforeEach } from "vitest";
import catalogJson from "../catalog/catalog.json";
import { CatalogSchema } from "../src/catalog/schema";
import { catalogStatements } from "../src/catalog/sql";
import { forgetHealth } from "../src/inference/health";

await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
await env.DB.batch(
  catalogStatements(CatalogSchema.parse(catalogJson)).map((s) => env.DB.prepare(s.sql).bind(...s.params)),
);

beforeEach(() => forgetHealth());
