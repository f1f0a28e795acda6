// The modules of a bundle `wrangler deploy --dry-run --outdir DIR` wrote, as Miniflare takes them: the
// entry (named after the Worker's main: index.js, counting-entry.js) as an ES module, and every other
// file as the Text module wrangler.toml's [[rules]] made of it (the console's script and page).
import { readdirSync } from "node:fs";
import { basename, join } from "node:path";

/** The entry module's file name, given the entry source (wrangler.toml's main when undefined). */
export const entryFileOf = (entry) => `${entry ? basename(entry).replace(/\.[tj]s$/, "") : "index"}.js`;

export function bundleModules(outdir, entryFile = "index.js") {
  const files = readdirSync(outdir).filter((f) => !f.endsWith(".map") && f !== "README.md");
  if (!files.includes(entryFile))
    throw new Error(`no ${entryFile} in the bundle at ${outdir}: ${files.join(", ")}`);
  return [
    { type: "ESModule", path: join(outdir, entryFile) },
    ...files.filter((f) => f !== entryFile).map((f) => ({ type: "Text", path: join(outdir, f) })),
  ];
}
