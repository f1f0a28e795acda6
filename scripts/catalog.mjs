// Validates catalog/catalog.json and (re)loads it into D1: `--local` (wrangler's local state), `--remote`
// (the deployed database), or `--print` to write the SQL to stdout. Exits non-zero on an invalid catalog.
import { readFileSync } from "node:fs";
import { tsImport } from "tsx/esm/api";
import { executeSql } from "./lib/d1.mjs";

const mode = ["--local", "--remote", "--print"].find((m) => process.argv.includes(m));
if (!mode) {
  console.error("usage: node scripts/catalog.mjs --local | --remote | --print");
  process.exit(2);
}

const { CatalogSchema } = await tsImport("../src/catalog/schema.ts", import.meta.url);
const { catalogStatements, renderStatement } = await tsImport("../src/catalog/sql.ts", import.meta.url);

let raw;
try {
  raw = JSON.parse(readFileSync(new URL("../catalog/catalog.json", import.meta.url), "utf8"));
} catch (error) {
  console.error(`catalog/catalog.json cannot be read as JSON: ${error.message}`);
  process.exit(1);
}
const parsed = CatalogSchema.safeParse(raw);
if (!parsed.success) {
  console.error("catalog/catalog.json is invalid:");
  for (const issue of parsed.error.issues) console.error(`  ${issue.path.join(".")}: ${issue.message}`);
  process.exit(1);
}

const statements = catalogStatements(parsed.data).map(renderStatement);
if (mode === "--print") {
  process.stdout.write(`${statements.join(";\n")};\n`);
} else {
  executeSql(statements, { remote: mode === "--remote" });
  const endpoints = parsed.data.models.reduce((n, m) => n + m.endpoints.length, 0);
  console.log(
    `catalog ${parsed.data.version}: ${parsed.data.models.length} models, ${endpoints} endpoints loaded (${mode.slice(2)})`,
  );
}
