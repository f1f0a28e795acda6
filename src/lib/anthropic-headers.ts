// The Anthropic API headers a Messages client sends (`anthropic-version`, `anthropic-beta` or
// `x-anthropic-beta`), read for Anthropic upstreams: a dated version only, beta flags deduplicated.
import type { ChatRequest } from "../providers/types";

/** A dated API version, as Anthropic names them; anything else is not passed on. */
const VERSION = /^\d{4}-\d{2}-\d{2}$/;
const MAX_BETA_CHARS = 2_048;

export function anthropicHeadersOf(
  header: (name: string) => string | undefined,
): NonNullable<ChatRequest["anthropic"]> {
  const version = header("anthropic-version")?.trim();
  return {
    ...(version && VERSION.test(version) ? { version } : {}),
    ...betaFlags([header("anthropic-beta"), header("x-anthropic-beta")]),
  };
}

/**
 * The distinct flags of both headers, in order, joined while they fit in MAX_BETA_CHARS (a flag that
 * would not fit is left out whole). Linear in the headers' length: a header of 400 KB of flags once took
 * seconds of the isolate's CPU, deduplicated pairwise before it was cut.
 */
function betaFlags(headers: Array<string | undefined>): { beta?: string } {
  const seen = new Set<string>();
  let length = 0;
  for (const h of headers) {
    if (!h) continue;
    for (const raw of h.split(",")) {
      const flag = raw.trim();
      if (!flag || seen.has(flag)) continue;
      const added = flag.length + (seen.size > 0 ? 1 : 0);
      if (length + added > MAX_BETA_CHARS) return seen.size ? { beta: [...seen].join(",") } : {};
      seen.add(flag);
      length += added;
    }
  }
  return seen.size ? { beta: [...seen].join(",") } : {};
}
