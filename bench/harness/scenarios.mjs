// The scenarios of issue 11, each a gateway arm and a passthrough arm against the same mock upstream.
// Adding one is one entry here (and, for a new upstream route, one route in mock-upstream.mjs).
//
// An entry: `model(upstream)` is the catalog record it needs (its endpoint's base URL on the mock);
// `gateway`/`passthrough` are the request each arm sends (`key`: "valid" | "invalid" | none); `figure`
// says what is compared: "throughput" (req/s ratio), "latency" (p50/p99 added ms), "stream" (streams/s
// ratio and time to first byte, and with `chunks` the added time per chunk), "completion" (whole-stream
// time ratio at concurrency 1); `optional`
// entries are skipped, with a note, while the gateway answers 404 for their route; `target` is what
// issue 11 asks of the figure (where issues 11 and 12 differ, the stricter).

import { CHAT } from "./mock-upstream.mjs";

export const BENCH_PROVIDER = "bench-upstream";
export const BENCH_PROVIDER_KEY = "sk-bench-upstream-platform-key";

const TEXT = "The quick brown fox jumps over the lazy dog";
const policies = { zdr: false, trains_on_data: false, publishes_prompts: false };
const regions = ["global", "europe", "us"];

function embeddingModel(dims, upstream) {
  return {
    slug: `bench/embed-${dims}`,
    canonical_slug: `bench/embed-${dims}`,
    name: `Bench: ${dims}-dim embeddings`,
    maker: "other",
    modality: "embeddings",
    created: 1767225600,
    endpoints: [
      {
        id: `bench/embed-${dims}@${BENCH_PROVIDER}`,
        provider: BENCH_PROVIDER,
        adapter: "openai-compatible",
        upstream_model: `bench-embed-${dims}`,
        base_urls: { default: `${upstream}/d${dims}/v1` },
        pricing: { input_token: 0.02 },
        capabilities: { dimensions: dims, encodings: ["float", "base64"], inputs: ["text"] },
        policies,
        regions,
      },
    ],
  };
}

const speechModel = (upstream) => ({
  slug: "bench/tts",
  canonical_slug: "bench/tts",
  name: "Bench: streamed speech",
  maker: "other",
  modality: "speech",
  created: 1767225600,
  endpoints: [
    {
      id: `bench/tts@${BENCH_PROVIDER}`,
      provider: BENCH_PROVIDER,
      adapter: "openai-compatible",
      upstream_model: "bench-tts",
      base_urls: { default: `${upstream}/v1` },
      pricing: { character: 12 },
      capabilities: { voices: ["alloy"], formats: ["mp3", "pcm"] },
      policies,
      regions,
    },
  ],
});

const chatModel = (upstream) => ({
  slug: "bench/chat",
  canonical_slug: "bench/chat",
  name: "Bench: streamed chat",
  maker: "other",
  modality: "chat",
  created: 1767225600,
  endpoints: [
    {
      id: `bench/chat@${BENCH_PROVIDER}`,
      provider: BENCH_PROVIDER,
      adapter: "openai-compatible",
      upstream_model: "bench-chat",
      base_urls: { default: `${upstream}/v1` },
      pricing: { input_token: 0.5, output_token: 1.5 },
      capabilities: { max_output_tokens: 4096, parameters: ["max_tokens", "temperature"] },
      policies,
      regions,
    },
  ],
});

/** What the passthrough arm of every chat-shaped stream sends: the same chat stream, straight from the mock. */
const chatPassthrough = {
  path: "/v1/chat/completions",
  body: { model: "bench-chat", stream: true, messages: [{ role: "user", content: TEXT }] },
};

/** The chat stream through the gateway against the same stream from the mock, forwarded. */
const chat = {
  model: chatModel,
  gateway: {
    path: "/api/v1/chat/completions",
    key: "valid",
    body: { model: "bench/chat", stream: true, messages: [{ role: "user", content: TEXT }] },
  },
  passthrough: chatPassthrough,
  chunks: CHAT.chunks,
};

const embeddings = (dims) => ({
  model: (upstream) => embeddingModel(dims, upstream),
  gateway: {
    path: "/api/v1/embeddings",
    key: "valid",
    body: { model: `bench/embed-${dims}`, input: TEXT },
  },
  passthrough: { path: `/d${dims}/v1/embeddings`, body: { model: `bench-embed-${dims}`, input: TEXT } },
});

/**
 * No gateway: the passthrough Worker parsing the 8-dim embeddings request and answer and serialising both
 * again (passthrough-worker.js under /json), against the same Worker streaming both untouched.
 */
const jsonRelay = {
  reference: true,
  gateway: { path: "/json/d8/v1/embeddings", body: embeddings(8).passthrough.body, via: "passthrough" },
  passthrough: embeddings(8).passthrough,
  status: 200,
  target: {},
};

const speech = {
  model: speechModel,
  gateway: {
    path: "/api/v1/audio/speech",
    key: "valid",
    body: { model: "bench/tts", input: TEXT, voice: "alloy", response_format: "mp3" },
  },
  passthrough: {
    path: "/v1/audio/speech",
    body: { model: "bench-tts", input: TEXT, voice: "alloy", response_format: "mp3" },
  },
};

export const SCENARIOS = [
  {
    id: "embeddings-8d",
    title: "embeddings, 8-dim, 32 concurrent",
    figure: "throughput",
    concurrency: 32,
    ...embeddings(8),
    status: 200,
    target: { ratio: 0.8 },
  },
  {
    id: "embeddings-1536d",
    title: "embeddings, 1536-dim, 32 concurrent",
    figure: "throughput",
    concurrency: 32,
    ...embeddings(1536),
    status: 200,
    target: { ratio: 0.8 },
  },
  {
    // The floor any gateway stands on that parses the body it forwards and the answer it returns.
    id: "embeddings-json-relay-8d",
    title: "reference, no gateway: a JSON relay of 8-dim embeddings, 32 concurrent",
    figure: "throughput",
    concurrency: 32,
    ...jsonRelay,
  },
  {
    id: "latency-c1",
    title: "embeddings, 8-dim, concurrency 1",
    figure: "latency",
    concurrency: 1,
    ...embeddings(8),
    status: 200,
    target: { addedP50Ms: 0.3, addedP99Ms: 1.5 },
  },
  {
    // The same floor as embeddings-json-relay-8d, one request at a time: the added latency of reading.
    id: "latency-json-relay-c1",
    title: "reference, no gateway: a JSON relay of 8-dim embeddings, concurrency 1",
    figure: "latency",
    concurrency: 1,
    ...jsonRelay,
  },
  {
    id: "invalid-key",
    title: "invalid key -> 401, 32 concurrent (passthrough: 8-dim embeddings)",
    figure: "throughput",
    concurrency: 32,
    gateway: { ...embeddings(8).gateway, key: "invalid" },
    passthrough: embeddings(8).passthrough,
    status: 401,
    target: { ratio: 0.9 },
  },
  {
    id: "speech-c64",
    title: "speech, 64 concurrent streams",
    figure: "stream",
    concurrency: 64,
    ...speech,
    status: 200,
    target: { ratio: 0.95, addedTtfbP50Ms: 2 },
  },
  {
    id: "speech-c1",
    title: "speech, one stream at a time (completion time)",
    figure: "completion",
    concurrency: 1,
    ...speech,
    status: 200,
    target: { completionRatio: 1.02 },
  },
  {
    // Issue 11's chat targets, split as its other figures are: throughput under load here (its time to
    // first byte is mostly the wait for the one busy thread, shown without a target), added time at
    // concurrency 1 in chat-stream-c1.
    id: "chat-stream-c64",
    title: "chat completions, streamed, 64 concurrent",
    figure: "stream",
    concurrency: 64,
    optional: true,
    ...chat,
    status: 200,
    target: { ratio: 0.8 },
  },
  {
    id: "chat-stream-c1",
    title: "chat completions, streamed, one stream at a time (added time)",
    figure: "stream",
    concurrency: 1,
    optional: true,
    ...chat,
    status: 200,
    target: { addedTtfbP50Ms: 1, addedPerChunkP50Ms: 0.05 },
  },
  {
    // No gateway: the floor any gateway reading the stream in JavaScript stands on. Its "gateway" arm is
    // the passthrough Worker relaying the chat stream chunk by chunk through JavaScript (see
    // passthrough-worker.js), against the same Worker piping it natively. Timing mode only.
    id: "chat-stream-js-relay-c64",
    title: "reference, no gateway: a JavaScript relay of the chat stream, 64 concurrent",
    figure: "stream",
    concurrency: 64,
    reference: true,
    gateway: { path: "/relay/v1/chat/completions", body: chatPassthrough.body, via: "passthrough" },
    passthrough: chatPassthrough,
    chunks: CHAT.chunks,
    status: 200,
    target: {},
  },
  {
    id: "responses-stream-c64",
    title: "responses, streamed, 64 concurrent (passthrough: chat completions)",
    figure: "stream",
    concurrency: 64,
    optional: true,
    ...chat,
    gateway: {
      path: "/api/v1/responses",
      key: "valid",
      body: { model: "bench/chat", stream: true, input: TEXT },
    },
    status: 200,
    target: { ratio: 0.8, addedTtfbP50Ms: 1, addedPerChunkP50Ms: 0.05 },
  },
  {
    // The Anthropic Messages client on an OpenAI-compatible upstream: the mock's chat stream re-encoded
    // as Messages events, against the passthrough forwarding the same chat stream.
    id: "messages-stream-c64",
    title: "messages, streamed, 64 concurrent (passthrough: chat completions)",
    figure: "stream",
    concurrency: 64,
    optional: true,
    ...chat,
    gateway: {
      path: "/api/v1/messages",
      key: "valid",
      body: {
        model: "bench/chat",
        stream: true,
        max_tokens: 4096,
        messages: [{ role: "user", content: TEXT }],
      },
    },
    status: 200,
    target: { ratio: 0.8, addedTtfbP50Ms: 1, addedPerChunkP50Ms: 0.05 },
  },
];
