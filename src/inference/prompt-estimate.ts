// The prompt estimate made before a chat call: what admission reserves, what is billed when an upstream
// reports no usage, and what middle-out compression measures a conversation by.
import type { ChatMessage } from "../providers/types";

/** Tokens an image is estimated at, whatever its size: the largest images providers take cost 1.5k to 2.5k. */
export const IMAGE_PROMPT_TOKENS = 2_500;
/** Base64 characters of audio per estimated token (about 32 tokens a second of compressed audio, generously). */
const AUDIO_CHARS_PER_TOKEN = 500;

/**
 * Prompt tokens, estimated generously before the call: about 3 characters a token of the messages' JSON,
 * plus framing. Images and audio are estimated by kind rather than by their base64 text (a 3 MB photo
 * is about 2,000 tokens, not a million): the estimate is the reservation, and the usage billed when an
 * upstream reports none. A file part (a PDF) stays at its characters: its pages decide its tokens.
 */
export function estimatePromptTokens(messages: ChatMessage[]): number {
  let mediaChars = 0;
  let mediaTokens = 0;
  for (const m of messages) {
    if (!Array.isArray(m.content)) continue;
    for (const p of m.content) {
      if (p.type === "image_url") {
        mediaChars += p.image_url.url.length;
        mediaTokens += IMAGE_PROMPT_TOKENS;
      } else if (p.type === "input_audio") {
        mediaChars += p.input_audio.data.length;
        mediaTokens += Math.ceil(p.input_audio.data.length / AUDIO_CHARS_PER_TOKEN);
      }
    }
  }
  const chars = JSON.stringify(messages).length - mediaChars;
  return Math.ceil(chars / 3) + mediaTokens + 4 * messages.length;
}

/** Tokens of a JSON value at 3 characters a token (0 when absent). */
const jsonTokens = (value: unknown): number =>
  value == null ? 0 : Math.ceil((JSON.stringify(value)?.length ?? 0) / 3);

/**
 * The whole prompt a chat request sends: its messages, and beside them the tool definitions and the
 * response format's schema, which providers bill as prompt tokens too (a request with large tool
 * schemas and one short message was reserved at a few tokens and charged for thousands).
 */
export function estimateRequestTokens(
  messages: ChatMessage[],
  beside: { tools?: unknown; responseFormat?: unknown },
): number {
  return estimatePromptTokens(messages) + jsonTokens(beside.tools) + jsonTokens(beside.responseFormat);
}
