// Same-format passthrough for /messages: an Anthropic upstream's own events go to the Messages client as they
// came, not re-encoded from chunks. Only what is the gateway's is rewritten: in message_start the message id
// (the generation id, as GET /generation takes it) and the model (the gateway's slug the client asked for);
// message_delta's usage gains the gateway's `cost` and `is_byok`. The JSON answer is the message those
// events build, with the same rewrites. The chunks still fold as they pass: billing and records are the
// same as on the re-encoding path.
import { anthropicErrorEnvelope } from "../../lib/errors";
import { parseEventObject, rawFrame } from "../../providers/sse";
import type { SseEvent } from "../../providers/types";
import {
  type BodyFormat,
  type ChatMeta,
  chargedOnFailure,
  type Folded,
  type StreamFormat,
} from "../chat-stream";
import {
  debugFrames,
  failureDelta,
  frame,
  gatewayCost,
  isObject,
  MessageSnapshot,
  startEvent,
  stopReasonOf,
  stopSequenceOf,
  usageOf,
} from "./messages-events";

/** The upstream's events for a streaming Messages client. */
export function messagesPassthroughStream(meta: ChatMeta): StreamFormat {
  /** Content blocks started and not yet stopped (closed by the gateway if the upstream stream is cut). */
  const open = new Set<number>();
  let started = false;
  let delta = false;
  let stopped = false;
  let debugged = meta.echo === undefined;
  const debug = () => {
    if (debugged) return "";
    debugged = true;
    return debugFrames(meta.echo ?? []);
  };
  const indexOf = (data: string) => {
    const index = parseEventObject(data)?.index;
    return typeof index === "number" ? index : -1;
  };

  const write = (event: SseEvent, folded: Folded): string => {
    const name = event.event ?? parseEventObject(event.data)?.type;
    switch (name) {
      case "message_start": {
        const payload = parseEventObject(event.data);
        if (!payload || !isObject(payload.message)) break;
        started = true;
        payload.message = { ...payload.message, id: meta.id, model: meta.model };
        return `${frame("message_start", payload)}${debug()}`;
      }
      case "message_delta": {
        const payload = parseEventObject(event.data);
        if (!payload) break;
        delta = true;
        // The chunk of this event is already folded: its usage is the cumulative one billed so far.
        const { usage } = folded.finalUsage(meta);
        payload.usage = { ...(isObject(payload.usage) ? payload.usage : {}), ...gatewayCost(usage, meta) };
        return `${debug()}${frame("message_delta", payload)}`;
      }
      case "content_block_start":
        open.add(indexOf(event.data));
        break;
      case "content_block_stop":
        open.delete(indexOf(event.data));
        break;
      case "message_stop":
        stopped = true;
        break;
    }
    return `${debug()}${rawFrame(typeof name === "string" ? name : undefined, event.data)}`;
  };

  return {
    open: () => "",
    chunk: (chunk, folded) => {
      let out = "";
      for (const event of chunk.raw ?? []) out += write(event, folded);
      return out;
    },
    // An upstream stream that ended after its message_delta but without message_stop is closed as a
    // complete message (one with neither a stop reason nor usage was cut: it fails, see cutStream).
    end: (folded, usage) => {
      if (stopped) return "";
      let out = started ? "" : `${frame("message_start", startEvent(meta))}${debug()}`;
      for (const index of [...open].sort((a, b) => a - b))
        out += frame("content_block_stop", { type: "content_block_stop", index });
      if (!delta) {
        out += frame("message_delta", {
          type: "message_delta",
          delta: { stop_reason: stopReasonOf(folded), stop_sequence: stopSequenceOf(folded) },
          usage: usageOf(usage, meta),
        });
      }
      return `${out}${frame("message_stop", { type: "message_stop" })}`;
    },
    // Errors are the gateway's to word (its deadlines, a broken connection, the upstream's `error` event
    // mapped through its status), in the same envelope as on the re-encoding path.
    // Usage until the break (unless the upstream's message_delta already said it), then the error.
    fail: (error, folded) => {
      const { usage } = folded.finalUsage(meta);
      const said = delta ? "" : failureDelta(usage, chargedOnFailure(folded, meta));
      return `${debug()}${said}${frame("error", anthropicErrorEnvelope(error.code, error.message))}`;
    },
    keepalive: frame("ping", { type: "ping" }),
  };
}

/** The message an Anthropic upstream streamed, for a JSON Messages client. */
export function messagesPassthroughJson(meta: ChatMeta): BodyFormat {
  const snapshot = new MessageSnapshot();
  return {
    chunk: (chunk) => {
      for (const event of chunk.raw ?? []) {
        const payload = parseEventObject(event.data);
        if (payload) snapshot.apply(payload);
      }
    },
    body: (folded, usage) => {
      const message = snapshot.message;
      return {
        type: "message",
        role: "assistant",
        ...message,
        id: meta.id,
        model: meta.model,
        provider: meta.provider,
        content: snapshot.blocks(),
        stop_reason: message.stop_reason ?? stopReasonOf(folded),
        // The upstream's counts when it reported them (what was billed), else the gateway's estimate.
        usage:
          folded.usage && isObject(message.usage)
            ? { ...message.usage, ...gatewayCost(usage, meta) }
            : usageOf(usage, meta),
      };
    },
  };
}
