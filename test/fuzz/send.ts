// Sends one fuzz case through the Worker in-process and reads what came back.
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import app from "../../src/app";
import { BASE } from "../helpers/http";
import type { Oversize } from "./mutations";
import type { FuzzCase } from "./requests";

const encoder = new TextEncoder();

/** `{"a":"xxx...` of `bytes` bytes: sent whole (with a Content-Length) up to 4 MiB, streamed past that. */
function oversize({ bytes }: Oversize): BodyInit {
  if (bytes <= 4 * 1024 * 1024) return encoder.encode(`{"a":"${"x".repeat(bytes - 6)}`);
  const chunk = encoder.encode("x".repeat(64 * 1024));
  let left = bytes;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      const n = Math.min(left, chunk.length);
      controller.enqueue(chunk.subarray(0, n));
      left -= n;
      if (left === 0) controller.close();
    },
  });
}

function toRequest(c: FuzzCase): Request {
  const body = c.body?.body;
  let init: BodyInit | undefined;
  if (typeof body === "string") init = encoder.encode(body);
  else if (body instanceof Uint8Array || body === undefined) init = body;
  else init = oversize(body);
  return new Request(`${BASE}${c.url}`, { method: c.method, headers: c.headers, body: init });
}

export interface Sent {
  status: number;
  contentType: string;
  /** Every response header, as JSON text, for the secret search. */
  headers: string;
  /** The body as text; audio and video bodies are read to the end but kept as "" (they are no text). */
  text: string;
  /** The Worker's background work (waitUntil) for this request. */
  settled: Promise<void>;
}

const BINARY = /^(audio|video)\/|^application\/octet-stream/i;

export async function send(c: FuzzCase): Promise<Sent> {
  const ctx = createExecutionContext();
  const res = await app.fetch(toRequest(c), { ...env, REGION: c.region }, ctx);
  const contentType = res.headers.get("Content-Type") ?? "";
  let text = "";
  if (BINARY.test(contentType)) await res.body?.pipeTo(new WritableStream());
  else text = new TextDecoder().decode(await res.arrayBuffer());
  return {
    status: res.status,
    contentType,
    headers: JSON.stringify([...res.headers]),
    text,
    settled: waitOnExecutionContext(ctx),
  };
}

export function describeCase(c: FuzzCase, r: Pick<Sent, "status" | "text">): string {
  const sent = c.body?.body;
  const preview =
    typeof sent === "string" ? sent : sent instanceof Uint8Array ? `bytes ${sent.join(",")}` : "";
  const body = c.body ? ` body(${c.body.note}): ${preview.slice(0, 300)}` : "";
  const headers = JSON.stringify(c.headers).slice(0, 300);
  return `${c.method} ${c.url.slice(0, 300)} via ${c.region} as ${c.caller} headers ${headers}${body}\n  -> ${r.status} ${r.text.slice(0, 600)}`;
}
