// CI smoke test of the README quick start: `npm start`, then the README's curls (chat streamed too) must answer.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";

const port = process.env.SMOKE_PORT ?? "18787";
const base = `http://127.0.0.1:${port}/api/v1`;
const server = spawn("npm", ["start"], {
  env: { ...process.env, PORT: port },
  stdio: ["ignore", "pipe", "pipe"],
  detached: true,
});
let output = "";
server.stdout.on("data", (d) => (output += d));
server.stderr.on("data", (d) => (output += d));

async function check() {
  for (let i = 0; ; i++) {
    try {
      await fetch(`${base}/openapi.json`);
      break;
    } catch {
      if (i > 240) throw new Error("npm start did not serve within 120 s");
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  const { apiKey } = JSON.parse(readFileSync(".dev/keys.json", "utf8"));
  const headers = { Authorization: `Bearer ${apiKey}`, "Content-Type": "application/json" };
  const key = await fetch(`${base}/key`, { headers });
  if (key.status !== 200) throw new Error(`GET /key answered ${key.status}: ${await key.text()}`);
  const embeddings = await fetch(`${base}/embeddings`, {
    method: "POST",
    headers,
    body: JSON.stringify({ model: "sandbox/embed-small", input: "hello gateway" }),
  });
  const body = await embeddings.json();
  if (embeddings.status !== 200 || body.data?.[0]?.embedding?.length === undefined) {
    throw new Error(`POST /embeddings answered ${embeddings.status}: ${JSON.stringify(body)}`);
  }
  const speech = await fetch(`${base}/audio/speech`, {
    method: "POST",
    headers,
    body: JSON.stringify({ model: "sandbox/tts-mini", input: "hello", voice: "alloy" }),
  });
  const audio = new Uint8Array(await speech.arrayBuffer());
  if (speech.status !== 200 || speech.headers.get("Content-Type") !== "audio/mpeg" || audio.length === 0) {
    throw new Error(`POST /audio/speech answered ${speech.status} with ${audio.length} bytes`);
  }
  const chat = await fetch(`${base}/chat/completions`, {
    method: "POST",
    headers,
    body: JSON.stringify({
      model: "sandbox/chat-echo",
      stream: true,
      messages: [{ role: "user", content: "hello gateway" }],
    }),
  });
  const events = (await chat.text()).split("\n\n").filter((e) => e.startsWith("data: "));
  if (chat.status !== 200 || events.at(-1) !== "data: [DONE]" || !events.some((e) => e.includes("hello"))) {
    throw new Error(`POST /chat/completions answered ${chat.status} with ${events.length} events`);
  }
  console.log(
    `quick start smoke: GET /key, POST /embeddings, POST /audio/speech, POST /chat/completions answered on ${base}`,
  );
}

try {
  await check();
} catch (error) {
  console.error(`quick start smoke FAILED: ${error.message}\n--- npm start output ---\n${output}`);
  process.exitCode = 1;
} finally {
  process.kill(-server.pid, "SIGTERM");
}
