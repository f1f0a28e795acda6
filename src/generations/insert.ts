// The generation record's insert statements: prepared once per D1 binding from the table's columns,
// idempotent by generation id (a record written twice, by a queue redelivery or a fallback, lands once).

import { getTableColumns } from "drizzle-orm";
import { NOW_SQL } from "../../schema/tables";
import { tables } from "../db/client";
import { errorText, log } from "../lib/log";

export type GenerationRecord = typeof tables.generations.$inferInsert;

/**
 * One GENERATIONS queue message: the records one isolate sent together (record.ts packs them). A
 * message holding a single record object, as producers before the packing sent, is read as one.
 */
export type RecordsMessage = GenerationRecord[] | GenerationRecord;

/**
 * Records are inserted with prepared statements built once from the table's columns: Drizzle's query
 * builder cost more CPU per record than everything else on the request path (the bench's profile).
 * Values go through each column's own driver mapping (JSON, booleans), so the table stays the one
 * definition; a column left unset takes its SQL default (the creation time) or null.
 */
const COLUMNS = Object.entries(getTableColumns(tables.generations));
const NAMES = COLUMNS.map(([, c]) => `"${c.name}"`).join(", ");
/** The only SQL default in the table is the creation time (NOW_SQL); other defaults are plain values. */
const valueSql = (c: (typeof COLUMNS)[number][1], param: string) =>
  c.hasDefault && typeof c.default === "object" ? `coalesce(${param}, ${NOW_SQL})` : param;
const IDEMPOTENT = "ON CONFLICT(id) DO NOTHING";
const INSERT_ONE = `INSERT INTO generations (${NAMES}) VALUES (${COLUMNS.map(([, c]) => valueSql(c, "?")).join(", ")}) ${IDEMPOTENT}`;
/**
 * Many rows in one statement: one JSON array of rows bound as a single parameter (D1 allows 100
 * parameters per statement). `WHERE true` keeps SQLite from reading ON CONFLICT as a join's ON.
 */
const INSERT_MANY = `INSERT INTO generations (${NAMES}) SELECT ${COLUMNS.map(([, c], i) =>
  valueSql(c, `json_extract(value, '$[${i}]')`),
).join(", ")} FROM json_each(?) WHERE true ${IDEMPOTENT}`;
/** Bytes of rows per statement, well under D1's 2 MB per value. */
const MAX_STATEMENT_BYTES = 512 * 1024;

const prepared = new WeakMap<D1Database, { one: D1PreparedStatement; many: D1PreparedStatement }>();
const statementsOf = (d1: D1Database) => {
  let s = prepared.get(d1);
  if (!s) {
    s = { one: d1.prepare(INSERT_ONE), many: d1.prepare(INSERT_MANY) };
    prepared.set(d1, s);
  }
  return s;
};

/** The record's values in column order, as the driver stores them. */
function rowValues(record: GenerationRecord): unknown[] {
  const row = record as Record<string, unknown>;
  return COLUMNS.map(([key, c]) => {
    const value = row[key] ?? (c.default !== undefined && typeof c.default !== "object" ? c.default : null);
    return value === null ? null : c.mapToDriverValue(value);
  });
}

export function insertRecord(d1: D1Database, record: GenerationRecord): D1PreparedStatement {
  return statementsOf(d1).one.bind(...rowValues(record));
}

/** Statements inserting all the records, as few as the size bound allows (run them in one batch). */
export function insertRecords(d1: D1Database, records: GenerationRecord[]): D1PreparedStatement[] {
  const { many } = statementsOf(d1);
  const out: D1PreparedStatement[] = [];
  let rows: string[] = [];
  let bytes = 0;
  for (const record of records) {
    const json = JSON.stringify(rowValues(record));
    if (rows.length > 0 && bytes + json.length > MAX_STATEMENT_BYTES) {
      out.push(many.bind(`[${rows.join(",")}]`));
      rows = [];
      bytes = 0;
    }
    rows.push(json);
    bytes += json.length + 1;
  }
  if (rows.length > 0) out.push(many.bind(`[${rows.join(",")}]`));
  return out;
}

/** Writes one record on its own; a failure is logged with its generation id (never the body or a credential). */
export async function writeOne(d1: D1Database, record: GenerationRecord, message: string): Promise<boolean> {
  try {
    await insertRecord(d1, record).run();
    return true;
  } catch (err) {
    log("error", { message, generation_id: record.id, error: errorText(err) });
    return false;
  }
}
