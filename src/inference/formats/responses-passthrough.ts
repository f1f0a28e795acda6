// Same-format passthrough for /responses: an OpenAI Responses upstream's own events go to the responses client
// as they came, not re-encoded from chunks. Only what is the gateway's is rewritten: each `response` object's
// id (the generation id, as GET /generation takes it) and model (the gateway's slug the client asked for),
// the null penalties the strict readers require, and the final usage gains the gateway's `cost`, `is_byok` and `cost_details`. Events the gateway inserts
// (`response.debug` first, a `response.failed` when the stream breaks, a closing event when the upstream's
// stream was cut) keep sequence numbers strictly increasing. The JSON answer is the response the upstream
// completed, with the same rewrites. The chunks still fold as they pass: billing and records are the same
// as on the re-encoding path.

import { parseEventObject, rawFrame } from "../../providers/sse";
import type { ChatUsage, SseEvent } from "../../providers/types";
import {
  type BodyFormat,
  type ChatMeta,
  chargedOnFailure,
  type Folded,
  KEEPALIVE,
  type StreamFormat,
} from "../chat-stream";
import { type Json, outcomeOf, responsesUsage } from "./responses-object";

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
const str = (v: unknown) => (typeof v === "string" ? v : "");

const TERMINAL = new Set(["response.completed", "response.incomplete", "response.failed"]);

/** The usage the client sees: the upstream's own counts when it sent them, with the gateway's cost beside. */
function usageWithCost(upstream: unknown, folded: Folded, usage: ChatUsage, meta: ChatMeta): Json {
  const ours = responsesUsage(usage, meta);
  const cost = { cost: ours.cost, is_byok: ours.is_byok, cost_details: ours.cost_details };
  return folded.usage && isObject(upstream) ? { ...upstream, ...cost } : ours;
}

/**
 * The response as its events built it, the way the openai client accumulates one: the lifecycle events'
 * `response`, and output items from output_item.added, filled by their deltas, replaced at output_item.done.
 * Needed when the upstream gives no final response (a stream that broke or was cut).
 */
class ResponseSnapshot {
  response: Json = {};
  /** The response of the terminal event, when the upstream sent one. */
  final: Json | undefined;
  private items: Json[] = [];
  private done = new Set<number>();

  apply(event: Json): void {
    const at = typeof event.output_index === "number" ? event.output_index : -1;
    const item = this.items[at];
    const type = str(event.type);
    if (isObject(event.response)) {
      this.response = event.response;
      if (TERMINAL.has(type)) this.final = event.response;
      return;
    }
    switch (type) {
      case "response.output_item.added":
        if (at >= 0 && isObject(event.item)) this.items[at] = structuredClone(event.item);
        break;
      case "response.output_item.done":
        if (at >= 0 && isObject(event.item)) {
          this.items[at] = event.item;
          this.done.add(at);
        }
        break;
      case "response.content_part.added":
        if (item && Array.isArray(item.content) && isObject(event.part))
          item.content[Number(event.content_index)] = { ...event.part };
        break;
      case "response.output_text.delta":
      case "response.refusal.delta": {
        const part = Array.isArray(item?.content) ? item.content[Number(event.content_index)] : undefined;
        const field = type === "response.output_text.delta" ? "text" : "refusal";
        if (isObject(part)) part[field] = str(part[field]) + str(event.delta);
        break;
      }
      case "response.function_call_arguments.delta":
        if (item) item.arguments = str(item.arguments) + str(event.delta);
        break;
      case "response.reasoning_summary_part.added":
        if (item && Array.isArray(item.summary) && isObject(event.part))
          item.summary[Number(event.summary_index)] = { ...event.part };
        break;
      case "response.reasoning_summary_text.delta": {
        const part = Array.isArray(item?.summary) ? item.summary[Number(event.summary_index)] : undefined;
        if (isObject(part)) part.text = str(part.text) + str(event.delta);
        break;
      }
    }
  }

  /** The name of the function call at an output index ("" when none is known). */
  callName(at: unknown): string {
    const item = typeof at === "number" ? this.items[at] : undefined;
    return str(item?.name);
  }

  /** The output items so far; those never finished are marked `status` (incomplete, or as the answer ended). */
  output(status: string): Json[] {
    return this.items.flatMap((item, i) =>
      item ? [this.done.has(i) || !("status" in item) ? item : { ...item, status }] : [],
    );
  }
}

/**
 * Fields of a response the strict readers (@openrouter/sdk) require, present even when null, that OpenAI
 * leaves out: the sampling penalties its Responses API has no field for, and `completed_at` until the
 * response completed (the others are there in its events, and kept null where one is not).
 */
const REQUIRED_NULLABLE = [
  "completed_at",
  "error",
  "incomplete_details",
  "instructions",
  "metadata",
  "temperature",
  "top_p",
  "frequency_penalty",
  "presence_penalty",
] as const;

/** The response with the gateway's id and model, and every field the strict readers require. */
function ours(response: Json, meta: ChatMeta): Json {
  const out: Json = { ...response, id: meta.id, model: meta.model };
  for (const field of REQUIRED_NULLABLE) if (!(field in out)) out[field] = null;
  return out;
}

/** The upstream's events for a streaming responses client. */
export function responsesPassthroughStream(meta: ChatMeta): StreamFormat {
  const snapshot = new ResponseSnapshot();
  /** Gateway events sent before the upstream's (debug): upstream sequence numbers move up by as many. */
  let offset = 0;
  /** The last sequence number sent. */
  let seq = -1;
  let terminal = false;
  let doneSent = false;
  /** Whether the upstream names its events (`event:` lines), so the gateway's own do the same. */
  let named = false;

  const own = (type: string, fields: Json) => {
    seq += 1;
    return rawFrame(named ? type : undefined, JSON.stringify({ type, sequence_number: seq, ...fields }));
  };
  const closing = () => {
    if (doneSent) return "";
    doneSent = true;
    return "data: [DONE]\n\n";
  };

  const write = (event: SseEvent, folded: Folded): string => {
    if (event.data === "[DONE]") return closing();
    if (event.event !== undefined) named = true;
    const payload = parseEventObject(event.data);
    if (!payload) return rawFrame(event.event, event.data);
    snapshot.apply(payload);
    const type = str(payload.type);
    if (TERMINAL.has(type)) terminal = true;
    const upstreamSeq = payload.sequence_number;
    if (typeof upstreamSeq === "number") seq = upstreamSeq + offset;
    const response = isObject(payload.response) ? payload.response : undefined;
    // OpenAI's function_call_arguments.done has no `name`; the strict readers require it (the call's, as
    // its output_item.added gave it).
    const unnamedCall = type === "response.function_call_arguments.done" && typeof payload.name !== "string";
    if (unnamedCall) payload.name = snapshot.callName(payload.output_index);
    if (!response && !unnamedCall && offset === 0) return rawFrame(event.event, event.data);
    if (typeof upstreamSeq === "number") payload.sequence_number = seq;
    if (response) {
      payload.response = ours(response, meta);
      if (TERMINAL.has(type) && isObject(response.usage)) {
        // The chunk of this event is already folded: its usage is the one billed.
        const { usage } = folded.finalUsage(meta);
        (payload.response as Json).usage = usageWithCost(response.usage, folded, usage, meta);
      }
    }
    return rawFrame(event.event, JSON.stringify(payload));
  };

  return {
    // One response.debug event per attempted provider, before the upstream's response.created.
    open: () => {
      const debug = (meta.echo ?? []).map((body) =>
        own("response.debug", { debug: { echo_upstream_body: body } }),
      );
      offset = debug.length;
      return debug.join("");
    },
    chunk: (chunk, folded) => {
      let out = "";
      for (const event of chunk.raw ?? []) out += write(event, folded);
      return out;
    },
    // An upstream stream that ended without a terminal event but with its usage is closed as the answer
    // ended (one with neither a finish nor usage was cut: it fails instead, see cutStream).
    end: (folded, usage) => {
      if (terminal) return closing();
      const outcome = outcomeOf(folded.finish);
      const items = outcome.status === "completed" ? "completed" : "incomplete";
      const response = {
        ...ours(snapshot.response, meta),
        status: outcome.status,
        ...(outcome.status === "completed" ? { completed_at: Math.floor(Date.now() / 1000) } : {}),
        output: snapshot.output(items),
        incomplete_details: outcome.incomplete ?? null,
        usage: responsesUsage(usage, meta),
      };
      return own(`response.${outcome.status}`, { response }) + closing();
    },
    // The gateway's own failure (its deadlines, a broken connection, the upstream's error event mapped
    // through its status), worded as on the re-encoding path; the output as it stood, unfinished items incomplete.
    fail: (error, folded) => {
      const { usage } = folded.finalUsage(meta);
      const response = {
        ...ours(snapshot.response, meta),
        status: "failed",
        output: snapshot.output("incomplete"),
        error: { code: error.code === 429 ? "rate_limit_exceeded" : "server_error", message: error.message },
        error_type: error.metadata.error_type,
        usage: responsesUsage(usage, chargedOnFailure(folded, meta)),
      };
      return own("response.failed", { response }) + closing();
    },
    keepalive: KEEPALIVE,
  };
}

/** The response an OpenAI Responses upstream streamed, for a JSON responses client. */
export function responsesPassthroughJson(meta: ChatMeta): BodyFormat {
  const snapshot = new ResponseSnapshot();
  return {
    chunk: (chunk) => {
      for (const event of chunk.raw ?? []) {
        const payload = parseEventObject(event.data);
        if (payload) snapshot.apply(payload);
      }
    },
    body: (folded, usage) => {
      const final = snapshot.final;
      if (final) {
        return {
          ...ours(final, meta),
          provider: meta.provider,
          usage: usageWithCost(final.usage, folded, usage, meta),
        };
      }
      const outcome = outcomeOf(folded.finish);
      return {
        ...ours(snapshot.response, meta),
        provider: meta.provider,
        status: outcome.status,
        output: snapshot.output(outcome.status === "completed" ? "completed" : "incomplete"),
        incomplete_details: outcome.incomplete ?? null,
        usage: responsesUsage(usage, meta),
      };
    },
  };
}
