// Removes credentials from text an upstream wrote (error messages) before it is returned, logged or stored.

export const REDACTED = "[redacted]";

/**
 * Things shaped like credentials, whoever they belong to. Upstreams echo the key they were sent
 * ("Incorrect API key provided: sk-..."), sometimes with its `Bearer` prefix or as a `key=` query
 * parameter; a long run of letters and digits with no spaces is treated as a secret too, since an
 * error message has no other reason to carry one.
 */
const KEY_SHAPES: RegExp[] = [
  /\b(Bearer|Basic|Token)\s+[A-Za-z0-9._~+/=-]{4,}/gi,
  /([?&](?:key|api[_-]?key|apikey|token|access[_-]?token|auth|signature|sig)=)[^&\s"'<>]+/gi,
  /\b(?:sk|pk|rk|ak|xai|gsk|csk|fw|r8|hf|co|key|api|tok|tgp|pplx|nvapi|sess)[-_][A-Za-z0-9_-]{8,}/gi,
  /\bAIza[0-9A-Za-z_-]{16,}/g,
  /\b(?=[A-Za-z0-9_-]*\d)(?=[A-Za-z0-9_-]*[A-Za-z])[A-Za-z0-9_-]{32,}/g,
];

/** Replaces every key-shaped token in `text`. */
export function redactKeyShapes(text: string): string {
  let out = text;
  for (const shape of KEY_SHAPES) {
    out = out.replace(shape, (match, prefix: unknown) =>
      typeof prefix === "string" && match.startsWith(prefix)
        ? `${prefix}${prefix.endsWith("=") ? "" : " "}${REDACTED}`
        : REDACTED,
    );
  }
  return out;
}

/**
 * Replaces each of `secrets` wherever it appears in `text` (also URL-encoded), then every
 * key-shaped token. Secrets shorter than 4 characters are too short to search for safely; no real
 * credential is that short.
 */
export function redactSecrets(text: string, secrets: Iterable<string>): string {
  let out = text;
  for (const secret of secrets) {
    if (secret.length < 4) continue;
    for (const form of new Set([secret, encodeURIComponent(secret)])) out = out.split(form).join(REDACTED);
  }
  return redactKeyShapes(out);
}
