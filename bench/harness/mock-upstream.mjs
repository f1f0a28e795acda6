// The mock upstream both arms call: an OpenAI-compatible provider on loopback answering fixed bodies at once.
// Routes are by path prefix so neither arm's request body has to be parsed here:
//   POST /d<N>/v1/embeddings      one vector of N floats
//   POST /v1/audio/speech         audio bytes in chunks, a few ms apart
//   POST /v1/chat/completions     a server-sent-events stream of chat chunks (for when the gateway has chat)
import { createServer } from "node:http";

export const SPEECH = { chunks: 8, chunkBytes: 8 * 1024, intervalMs: 5 };
export const CHAT = { chunks: 16, intervalMs: 2 };

/** A vector as a real provider writes it: full-precision floats (~19 bytes each in JSON). */
function embeddingBody(dims) {
  const embedding = Array.from({ length: dims }, (_, i) => Math.sin(i + 1) / 3);
  return Buffer.from(
    JSON.stringify({
      object: "list",
      data: [{ object: "embedding", index: 0, embedding }],
      model: `bench-embed-${dims}`,
      usage: { prompt_tokens: 9, total_tokens: 9 },
    }),
  );
}

const audioChunk = Buffer.alloc(SPEECH.chunkBytes, 0x55);

function chatChunk(i, last) {
  const choice = last
    ? { index: 0, delta: {}, finish_reason: "stop" }
    : { index: 0, delta: { content: `token${i} ` }, finish_reason: null };
  const chunk = {
    id: "chatcmpl-bench",
    object: "chat.completion.chunk",
    model: "bench-chat",
    choices: [choice],
  };
  if (last) chunk.usage = { prompt_tokens: 9, completion_tokens: CHAT.chunks, total_tokens: 9 + CHAT.chunks };
  return `data: ${JSON.stringify(chunk)}\n\n`;
}

/** Writes `count` pieces `intervalMs` apart, the first at once; stops if the client went away. */
function drip(res, count, intervalMs, piece, end) {
  let i = 0;
  const next = () => {
    if (res.destroyed) return;
    res.write(piece(i));
    if (++i < count) setTimeout(next, intervalMs);
    else res.end(end ?? undefined);
  };
  next();
}

/**
 * Starts the mock on 127.0.0.1 (an ephemeral port). `delayMs` holds every answer back that long, as a
 * real model's time to first byte would (0: at once, so the figures compare CPU). `counts` tallies
 * requests per route, so the harness can check each arm really reached the upstream.
 */
export async function startMockUpstream({ delayMs = 0, port = 0 } = {}) {
  const bodies = new Map();
  const counts = {};
  const server = createServer((req, res) => {
    const answer = () => {
      const path = req.url ?? "/";
      const embed = /^\/d(\d+)\/v1\/embeddings$/.exec(path);
      counts[embed ? "embeddings" : path] = (counts[embed ? "embeddings" : path] ?? 0) + 1;
      if (req.method === "POST" && embed) {
        const dims = Number(embed[1]);
        if (!bodies.has(dims)) bodies.set(dims, embeddingBody(dims));
        const body = bodies.get(dims);
        res.writeHead(200, { "Content-Type": "application/json", "Content-Length": body.length });
        res.end(body);
      } else if (req.method === "POST" && path === "/v1/audio/speech") {
        res.writeHead(200, { "Content-Type": "audio/mpeg" });
        drip(res, SPEECH.chunks, SPEECH.intervalMs, () => audioChunk);
      } else if (req.method === "POST" && path === "/v1/chat/completions") {
        res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache" });
        drip(
          res,
          CHAT.chunks + 1,
          CHAT.intervalMs,
          (i) => chatChunk(i, i === CHAT.chunks),
          "data: [DONE]\n\n",
        );
      } else {
        res.writeHead(404, { "Content-Type": "application/json" });
        res.end(JSON.stringify({ error: { message: `mock upstream: no route for ${req.method} ${path}` } }));
      }
    };
    // Drain the request body before answering, as a real upstream reads it.
    req.on("data", () => {});
    req.on("end", () => (delayMs > 0 ? setTimeout(answer, delayMs) : answer()));
  });
  server.keepAliveTimeout = 60_000;
  await new Promise((resolve) => server.listen(port, "127.0.0.1", resolve));
  const { port: bound } = server.address();
  return {
    url: `http://127.0.0.1:${bound}`,
    counts,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(resolve);
      }),
  };
}
