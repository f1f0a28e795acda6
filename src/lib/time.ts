// Timestamps on the wire are ISO 8601 UTC strings.

export const nowIso = () => new Date().toISOString();

/** Normalises any parseable date-time to ISO 8601 UTC; null stays null. */
export function toIso(value: string | null | undefined): string | null {
  if (value == null) return null;
  return new Date(value).toISOString();
}
