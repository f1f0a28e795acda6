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
  const beta = [header("anthropic-beta"), header("x-anthropic-beta")]
    .flatMap((h) => (h ?? "").split(","))
    .map((flag) => flag.trim())
    .filter((flag, i, all) => flag && all.indexOf(flag) === i)
    .join(",")
    .slice(0, MAX_BETA_CHARS);
  return {
    ...(version && VERSION.test(version) ? { version } : {}),
    ...(beta ? { beta } : {}),
  };
}
