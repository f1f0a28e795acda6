// The SQL that (re)loads a validated catalog into D1: used by scripts/catalog.mjs and the test setup.
// Imports nothing at runtime, so the script can load it outside the Worker.
import type { Catalog } from "./schema";

export interface Statement {
  sql: string;
  params: Array<string | number | null>;
}

const json = (v: unknown) => JSON.stringify(v);

/** Replaces the whole catalog: delete, then insert every model and endpoint (one transaction in D1 batch). */
export function catalogStatements(catalog: Catalog): Statement[] {
  const out: Statement[] = [
    { sql: "DELETE FROM endpoints", params: [] },
    { sql: "DELETE FROM models", params: [] },
  ];
  for (const m of catalog.models) {
    out.push({
      sql:
        "INSERT INTO models (slug, canonical_slug, name, maker, modality, is_free, description, details, catalog_version) " +
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
      params: [
        m.slug,
        m.canonical_slug,
        m.name,
        m.maker,
        m.modality,
        m.slug.endsWith(":free") ? 1 : 0,
        m.description,
        json({ created: m.created, context_length: m.context_length, input_modalities: m.input_modalities }),
        catalog.version,
      ],
    });
    m.endpoints.forEach((e, position) => {
      out.push({
        sql:
          "INSERT INTO endpoints (id, model_slug, provider, adapter, upstream_model, base_urls, pricing, capabilities, " +
          "policies, regions, exempt_free_limits, catalog_version, timeouts, position) " +
          "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        params: [
          e.id,
          m.slug,
          e.provider,
          e.adapter,
          e.upstream_model,
          json(e.base_urls),
          json(e.pricing),
          json(e.capabilities),
          json(e.policies),
          json(e.regions),
          e.exempt_free_limits ? 1 : 0,
          catalog.version,
          json(e.timeouts ?? {}),
          position,
        ],
      });
    });
  }
  return out;
}

const literal = (v: string | number | null) =>
  v === null ? "NULL" : typeof v === "number" ? String(v) : `'${v.replaceAll("'", "''")}'`;

/** A statement with its parameters inlined, for `wrangler d1 execute --file`. */
export function renderStatement(s: Statement): string {
  let i = 0;
  return s.sql.replace(/\?/g, () => literal(s.params[i++] ?? null));
}
