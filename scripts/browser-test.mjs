// `npm run test:browser`: the console in a real headless Chromium against `npm start`: sign in, create a key,
// make sandbox requests with it, see its spend chart, edit a guardrail (and see the API refuse a bad edit).
// Screenshots go to docs/. Without /usr/bin/chromium the test is skipped with the reason (exit 0).
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const ROOT = fileURLToPath(new URL("..", import.meta.url));
// Not 8787 (npm start's default) nor 8800-8899: another gateway may be running there.
const PORT = process.env.BROWSER_TEST_PORT ?? "8910";
const ORIGIN = `http://127.0.0.1:${PORT}`;
const started = Date.now();

if (!existsSync(CHROMIUM)) {
  console.log(
    `test:browser SKIPPED: no Chromium at ${CHROMIUM} (install Debian's chromium package, or set CHROMIUM_PATH)`,
  );
  process.exit(0);
}

const { chromium } = await import("playwright-core");

function startGateway() {
  const server = spawn("npm", ["start"], {
    cwd: ROOT,
    env: { ...process.env, PORT, WRANGLER_REGISTRY_PATH: join(ROOT, ".wrangler", "registry") },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let log = "";
  server.stdout.on("data", (d) => (log += d));
  server.stderr.on("data", (d) => (log += d));
  return { server, log: () => log };
}

async function waitForGateway(gateway) {
  for (let i = 0; i < 360; i++) {
    if (gateway.server.exitCode !== null) throw new Error(`npm start exited:\n${gateway.log()}`);
    try {
      const res = await fetch(`${ORIGIN}/api/v1/openapi.json`);
      if (res.ok) return;
    } catch {}
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`npm start did not serve within 180 s:\n${gateway.log()}`);
}

function check(condition, message) {
  if (!condition) throw new Error(`FAILED: ${message}`);
  console.log(`ok - ${message}`);
}

async function inference(apiKey, path, body) {
  const res = await fetch(`${ORIGIN}/api/v1${path}`, {
    method: "POST",
    headers: { Authorization: `Bearer ${apiKey}`, "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  check(res.status === 200, `POST ${path} with the new key answered 200 (got ${res.status})`);
  await res.arrayBuffer();
}

const gateway = startGateway();
let browser;
let page;
try {
  await waitForGateway(gateway);
  const { managementKey } = JSON.parse(readFileSync(join(ROOT, ".dev", "keys.json"), "utf8"));
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--headless", "--no-sandbox"] });
  // A fresh context is a fresh profile: no storage from an earlier run.
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  mkdirSync(join(ROOT, "docs"), { recursive: true });

  // Sign in.
  await page.goto(`${ORIGIN}/console`);
  await page.fill("#signin input[name=key]", managementKey);
  await page.click("#signin button[type=submit]");
  await page.waitForSelector("#create-key");
  check((await page.evaluate(() => document.cookie)) === "", "no cookie is set");
  check(
    (await page.evaluate(() => sessionStorage.getItem("gateway-console-key"))) === managementKey,
    "the key is kept in session storage",
  );

  // Create a key with a cap; the plaintext key is shown once.
  const name = `browser ${new Date().toISOString().slice(11, 19)}`;
  await page.fill("#create-key input[name=name]", name);
  await page.fill("#create-key input[name=limit]", "5");
  await page.click("#create-key button[type=submit]");
  const newKey = (await (await page.waitForSelector("#new-key")).textContent()).trim();
  check(/^sk-gw-v1-[0-9a-f]{64}$/.test(newKey), "the new key is shown once, in full");
  check((await page.locator("table", { hasText: name }).count()) === 1, "the keys table lists the new key");

  // Spend with it: two chats and an embeddings request on the sandbox.
  for (const content of ["hello console", "draw me a chart"]) {
    await inference(newKey, "/chat/completions", {
      model: "sandbox/chat-echo",
      messages: [{ role: "user", content }],
    });
  }
  await inference(newKey, "/embeddings", { model: "sandbox/embed-small", input: "spend per day" });
  // Records are written just after each answer: wait until the listing has all three.
  const hash = await page.evaluate(
    async (k) =>
      (await (await fetch("/api/v1/keys", { headers: { Authorization: `Bearer ${k}` } })).json()).data,
    managementKey,
  );
  const keyHash = hash.find((k) => k.name === name).hash;
  for (let i = 0; ; i++) {
    const res = await fetch(`${ORIGIN}/api/v1/generations?api_key_hash=${keyHash}`, {
      headers: { Authorization: `Bearer ${managementKey}` },
    });
    if ((await res.json()).data.length >= 3) break;
    if (i > 40) throw new Error("the three generation records never appeared");
    await new Promise((r) => setTimeout(r, 250));
  }

  // The spend chart of that key has a bar for today.
  await page.goto(`${ORIGIN}/console#spend`);
  const keyChart = page.locator(`#charts-keys .chart[data-series^="${name} ("]`);
  await keyChart.waitFor();
  const bars = await keyChart
    .locator("rect.bar")
    .evaluateAll((rects) => rects.map((r) => Number(r.getAttribute("height"))));
  check(bars.length === 30, "the key's chart has one bar per day of the last 30");
  check(bars[29] > 0 && bars.slice(0, 29).every((b) => b === 0), "today's bar shows the key's spend");
  check(
    (await page.locator('#charts-models .chart[data-series="sandbox/chat-echo"]').count()) === 1,
    "a per-model chart shows sandbox/chat-echo",
  );
  await page.screenshot({ path: join(ROOT, "docs", "console-spend.png"), fullPage: true });
  // The keys page again, without the one-time key on it, its usage now showing.
  await page.goto(`${ORIGIN}/console#keys`);
  await page.waitForSelector("main[aria-busy=false]");
  await page.screenshot({ path: join(ROOT, "docs", "console-keys.png"), fullPage: true });
  // Disabled, the key stays on the page, marked, with the button that enables it again.
  await page.locator("tr", { hasText: name }).locator("button", { hasText: "Disable" }).click();
  const disabledRow = page.locator("tr", { hasText: name });
  await disabledRow.locator("button", { hasText: "Enable" }).waitFor();
  check(
    (await disabledRow.locator(".pill", { hasText: "disabled" }).count()) === 1,
    "a disabled key stays listed",
  );
  await disabledRow.locator("button", { hasText: "Enable" }).click();
  await page.locator("tr", { hasText: name }).locator("button", { hasText: "Disable" }).waitFor();

  // Guardrails: create one, edit it, and see the API's validation refuse a bad edit.
  await page.goto(`${ORIGIN}/console#guardrails`);
  const guardrailName = `console ${Date.now()}`;
  await page.fill("#create-guardrail input[name=name]", guardrailName);
  await page.click("#create-guardrail button[type=submit]");
  const form = page.locator("form[data-guardrail]", { has: page.locator(`input[value="${guardrailName}"]`) });
  await form.waitFor();
  await form.locator("input[name=limit_usd]").fill("25");
  await form.locator("select[name=reset_interval]").selectOption("monthly");
  await form.locator("input[name=allowed_providers]").fill("sandbox, openai");
  await form.locator("button[type=submit]").click();
  await form.locator(".notice", { hasText: "Saved." }).waitFor();
  const id = await form.getAttribute("data-guardrail");
  const saved = await (
    await fetch(`${ORIGIN}/api/v1/guardrails/${id}`, {
      headers: { Authorization: `Bearer ${managementKey}` },
    })
  ).json();
  check(
    saved.data.limit_usd === 25 &&
      saved.data.reset_interval === "monthly" &&
      saved.data.allowed_providers.join() === "sandbox,openai",
    "the guardrail edit is stored",
  );
  await form.locator("textarea[name=content_filters]").fill('[{"pattern": "(a)\\\\1", "action": "block"}]');
  await form.locator("button[type=submit]").click();
  const refusal = await form.locator(".error").textContent({ timeout: 10_000 });
  check(
    /content_filters/.test(refusal),
    `a pattern RE2 cannot run is refused with the API's message ("${refusal.slice(0, 80)}...")`,
  );
  await page.screenshot({ path: join(ROOT, "docs", "console-guardrails.png"), fullPage: true });

  // The other pages load without errors.
  for (const view of ["generations", "byok", "videos"]) {
    await page.goto(`${ORIGIN}/console#${view}`);
    await page.waitForSelector("main[aria-busy=false]");
    check((await page.locator("main .error").count()) === 0, `the ${view} page loads`);
  }
  await page.goto(`${ORIGIN}/console#generations?api_key_hash=${keyHash}`);
  await page.waitForSelector("main[aria-busy=false]");
  check((await page.locator("main tbody tr").count()) === 3, "the generations page filters by key");
  await page.screenshot({ path: join(ROOT, "docs", "console-generations.png"), fullPage: true });
  check(errors.length === 0, `no script errors in the page${errors.length ? `: ${errors.join("; ")}` : ""}`);
  console.log(`test:browser passed in ${((Date.now() - started) / 1000).toFixed(0)} s`);
} catch (err) {
  console.error(err instanceof Error ? err.message : err);
  const shot = join(ROOT, ".wrangler", "browser-test-failure.png");
  await page?.screenshot({ path: shot, fullPage: true }).then(
    () => console.error(`screenshot of the page: ${shot}`),
    () => {},
  );
  process.exitCode = 1;
} finally {
  await browser?.close();
  // npm start runs in its own process group: end all of it (npm, node, wrangler, workerd).
  try {
    process.kill(-gateway.server.pid, "SIGTERM");
  } catch {}
}
