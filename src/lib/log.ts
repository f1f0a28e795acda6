// The one logger: each line is one JSON object (Workers Logs indexes its fields). Callers pass ids,
// hashes' prefixes, counts and error text already free of secrets; never keys, prompts or outputs.

export type LogLevel = "info" | "warn" | "error";

export function log(level: LogLevel, fields: Record<string, unknown>): void {
  const line = JSON.stringify({ level, ...fields });
  if (level === "error") console.error(line);
  else if (level === "warn") console.warn(line);
  else console.log(line);
}

/** An error's text for a log line (its message, or the thrown value as text). */
export const errorText = (err: unknown): string => (err instanceof Error ? err.message : String(err));
