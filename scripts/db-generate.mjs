// Regenerates the SQL migrations from schema/tables.ts with drizzle-kit.
// Until the first production deploy the whole schema is one initial migration, rebuilt from scratch
// on each change; after it, drop the `--reset` behaviour and let drizzle-kit add numbered migrations.
import { execFileSync } from "node:child_process";
import { rmSync } from "node:fs";

const reset = !process.argv.includes("--incremental");
if (reset) rmSync(new URL("../schema/migrations", import.meta.url), { recursive: true, force: true });
execFileSync("npx", ["drizzle-kit", "generate", "--name", reset ? "init" : "change"], { stdio: "inherit" });
