// The prompt estimate made before a chat call: what admission reserves, what is billed when an upstream
// reports no usage, and what middle-out compression measures a conversation by.
import type { ChatMessage } from "../providers/types";

/** Tokens an image is estimated at, whatever its size: the largest images providers take cost 1.5k to 2.5k. */
export const IMAGE_PROMPT_TOKENS = 2_500;
/** Base64 characters of audio per estimated token (about 32 tokens a second of 128 kbps audio). */
const AUDIO_CHARS_PER_TOKEN = 500;
/**
 * Base64 characters of audio per token at most: Gemini bills 32 tokens a second whatever the bitrate,
 * and speech is often sent at 6 to 16 kbps (1,000 base64 characters a second at 6 kbps, 31 a token), so
 * the ceiling allows down to about 5 kbps. At 500 an hour of 8 kbps MP3 was reserved at a tenth of
 * its 115,200 tokens (found by a hostile probe).
 */
const AUDIO_CEILING_CHARS_PER_TOKEN = 25;

/** Characters a token where the estimate must not fall short: middle-out fitting, the gateway's token count. */
export const GENEROUS_CHARS_PER_TOKEN = 3;
/**
 * Characters a token where the estimate is billed (a stream cut before the upstream's usage): what
 * common tokenizers make of English, so a cut answer is not billed above a whole one (at 3, a probe's
 * cancelled stream was billed twice the prompt the provider counts for the complete one).
 */
const BILLED_CHARS_PER_TOKEN = 4;

/**
 * Prompt tokens, estimated before the call: `charsPerToken` characters a token of the messages' JSON,
 * plus framing. Images and audio are estimated by kind rather than by their base64 text (a 3 MB photo
 * is about 2,000 tokens, not a million). A file part (a PDF) stays at its characters: its pages decide
 * its tokens.
 */
export function estimatePromptTokens(
  messages: ChatMessage[],
  charsPerToken = GENEROUS_CHARS_PER_TOKEN,
): number {
  const { chars, mediaTokens } = promptText(messages, (text) => text.length, AUDIO_CHARS_PER_TOKEN);
  return Math.ceil(chars / charsPerToken) + mediaTokens + 4 * messages.length;
}

/**
 * The most tokens the messages can be, for admission to reserve: one a UTF-8 byte of their JSON (no
 * byte-level tokenizer, BPE or SentencePiece with byte fallback, makes more), media by kind as in the
 * estimate. Three characters a token held for English, but rare CJK characters take 2 to 2.5 tokens
 * each and emoji 1.5 a UTF-16 unit, so a prompt of them ran 6 times past its reservation, and a key's
 * cap with it (found by a hostile probe).
 */
export function promptTokenCeiling(messages: ChatMessage[]): number {
  const { chars, mediaTokens } = promptText(messages, utf8Bytes, AUDIO_CEILING_CHARS_PER_TOKEN);
  return chars + mediaTokens + 4 * messages.length;
}

/** UTF-8 bytes of a string, counted without encoding it (a lone surrogate as U+FFFD, 3 bytes). */
export function utf8Bytes(text: string): number {
  let bytes = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) bytes += 1;
    else if (c <= 0xdbff && c >= 0xd800 && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 2; // a surrogate pair: 4 bytes for its 2 units
      i++;
    } else bytes += 2;
  }
  return bytes;
}

/** The messages' JSON measured by `size`, less their media's base64 (which is priced by kind). */
function promptText(messages: ChatMessage[], size: (text: string) => number, audioCharsPerToken: number) {
  const { mediaChars, mediaTokens } = mediaOf(messages, audioCharsPerToken);
  // Base64 is ASCII: its characters are its bytes.
  return { chars: size(JSON.stringify(messages)) - mediaChars, mediaTokens };
}

/** The characters of the messages' images and audio, and the tokens they are estimated at by kind. */
function mediaOf(messages: ChatMessage[], audioCharsPerToken: number) {
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
        mediaTokens += Math.ceil(p.input_audio.data.length / audioCharsPerToken);
      }
    }
  }
  return { mediaChars, mediaTokens };
}

/**
 * Whether the prompt holds a file given by URL: its pages (a PDF) or its length (a video) decide its
 * tokens, and the gateway cannot see them before the call. Admission then reserves the model's whole
 * context window (a probe had a one-hour video by URL reserved at its URL's 60 tokens and billed 950k).
 * Adapters that may read other parts as any media say so themselves (ProviderAdapter.unboundedMedia).
 */
export function hasFileByUrl(messages: ChatMessage[]): boolean {
  for (const m of messages) {
    if (!Array.isArray(m.content)) continue;
    for (const p of m.content) {
      if (
        p.type === "file" &&
        typeof p.file.file_data === "string" &&
        !p.file.file_data.startsWith("data:")
      ) {
        return true;
      }
    }
  }
  return false;
}

/** Tokens of a JSON value at `charsPerToken` characters a token (0 when absent). */
const jsonTokens = (value: unknown, charsPerToken: number): number =>
  value == null ? 0 : Math.ceil((JSON.stringify(value)?.length ?? 0) / charsPerToken);
/** The most tokens a JSON value can be: its UTF-8 bytes (0 when absent). */
const jsonTokenCeiling = (value: unknown): number =>
  value == null ? 0 : utf8Bytes(JSON.stringify(value) ?? "");

/**
 * The whole prompt a chat request sends: its messages, and beside them the tool definitions and the
 * response format's schema, which providers bill as prompt tokens too (a request with large tool
 * schemas and one short message was reserved at a few tokens and charged for thousands).
 */
export function estimateRequestTokens(
  messages: ChatMessage[],
  beside: { tools?: unknown; responseFormat?: unknown },
  charsPerToken = GENEROUS_CHARS_PER_TOKEN,
): number {
  return (
    estimatePromptTokens(messages, charsPerToken) +
    jsonTokens(beside.tools, charsPerToken) +
    jsonTokens(beside.responseFormat, charsPerToken)
  );
}

/**
 * The prompt tokens billed when an upstream reports no usage (a stream cut before it): the text the
 * messages carry (every string value, not the JSON's keys and punctuation, which no provider bills) at
 * BILLED_CHARS_PER_TOKEN, media by kind, and OpenAI's framing of 3 tokens a message and 3 for the reply.
 * Counting the JSON put a fixed ~8 tokens a message on top, so a probe's cut answer cost 1.6 times the
 * whole one.
 */
export function billedPromptTokens(
  messages: ChatMessage[],
  beside: { tools?: unknown; responseFormat?: unknown },
): number {
  const { mediaChars, mediaTokens } = mediaOf(messages, AUDIO_CHARS_PER_TOKEN);
  const text = stringChars(messages) - mediaChars;
  return (
    Math.ceil(text / BILLED_CHARS_PER_TOKEN) +
    mediaTokens +
    3 * messages.length +
    3 +
    jsonTokens(beside.tools, BILLED_CHARS_PER_TOKEN) +
    jsonTokens(beside.responseFormat, BILLED_CHARS_PER_TOKEN)
  );
}

/** Characters of every string value in a JSON value (object keys not counted). */
function stringChars(value: unknown): number {
  if (typeof value === "string") return value.length;
  if (typeof value !== "object" || value === null) return 0;
  let chars = 0;
  for (const v of Array.isArray(value) ? value : Object.values(value)) chars += stringChars(v);
  return chars;
}

/** The most tokens the whole prompt can be (see promptTokenCeiling): what admission reserves. */
export function requestTokenCeiling(
  messages: ChatMessage[],
  beside: { tools?: unknown; responseFormat?: unknown },
): number {
  return (
    promptTokenCeiling(messages) + jsonTokenCeiling(beside.tools) + jsonTokenCeiling(beside.responseFormat)
  );
}
