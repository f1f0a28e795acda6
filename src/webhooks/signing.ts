// Standard Webhooks signatures (the `standardwebhooks` reference library): `v1,<base64 HMAC-SHA256 of
// id.timestamp.body>` under a `whsec_` secret; this module adds secret generation and multi-secret rotation.
import { Webhook } from "standardwebhooks";
import { fromBase64, toBase64 } from "../lib/base64";

const SECRET_PREFIX = "whsec_";

/** A fresh signing secret: `whsec_` followed by 32 random bytes in base64. */
export function newWebhookSecret(): string {
  return SECRET_PREFIX + toBase64(crypto.getRandomValues(new Uint8Array(32)));
}

export function isWebhookSecret(value: string): boolean {
  if (!value.startsWith(SECRET_PREFIX)) return false;
  try {
    return fromBase64(value.slice(SECRET_PREFIX.length)).byteLength >= 24;
  } catch {
    return false;
  }
}

/** A message id: stable across retries of one event so receivers can deduplicate. */
export function newWebhookId(): string {
  return `msg_${crypto.randomUUID().replaceAll("-", "")}`;
}

/** One `v1,<sig>` entry per secret, space separated, as receivers accept during a rotation. */
export function signWebhook(
  secrets: string[],
  webhookId: string,
  timestampSeconds: number,
  body: string,
): string {
  const at = new Date(timestampSeconds * 1000);
  return secrets.map((secret) => new Webhook(secret).sign(webhookId, at, body)).join(" ");
}

/** The three Standard Webhooks headers for one delivery. */
export function webhookHeaders(
  secrets: string[],
  webhookId: string,
  timestampSeconds: number,
  body: string,
): Record<string, string> {
  return {
    "webhook-id": webhookId,
    "webhook-timestamp": String(timestampSeconds),
    "webhook-signature": signWebhook(secrets, webhookId, timestampSeconds, body),
  };
}
