// drizzle-kit reads the tables in schema/tables.ts and writes SQL migrations where wrangler applies them.
import { defineConfig } from "drizzle-kit";

export default defineConfig({
  dialect: "sqlite",
  schema: "./schema/tables.ts",
  out: "./schema/migrations",
});
