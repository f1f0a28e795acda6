// `npm run bench:runtime`: what single runtime operations cost in workerd (CPU microseconds each), so the
// gateway's per-request CPU can be read as a sum of known parts. Each operation runs N times in one request
// to a Worker of its own (bench/harness/runtime-costs-worker.js), 3 times over; workerd's CPU time (Linux
// /proc, 10 ms ticks) is read around each run, less the empty loop's. Prints the median of the 3.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { convertV4MiniflareOptions, Log, LogLevel, Miniflare } from "miniflare";
import { OPERATIONS } from "./harness/runtime-costs-worker.js";

const N = 20_000;
const worker = new URL("./harness/runtime-costs-worker.js", import.meta.url).pathname;
const mf = new Miniflare(
  convertV4MiniflareOptions({
    log: new Log(LogLevel.WARN),
    handleStructuredLogs: () => {},
    cf: false,
    workers: [
      {
        name: "costs",
        rootPath: new URL("./harness", import.meta.url).pathname,
        modules: true,
        scriptPath: worker,
        compatibilityDate: "2026-10-15",
        compatibilityFlags: ["nodejs_compat"],
      },
    ],
  }),
);
await mf.ready;

function workerdCpuMs() {
  const pids = execFileSync("pgrep", ["-P", String(process.pid), "workerd"], { encoding: "utf8" })
    .split("\n")
    .filter(Boolean);
  let ticks = 0;
  for (const pid of pids) {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ").at(-1).split(" ");
    ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks * 10;
}

async function usEach(op) {
  const runs = [];
  for (let i = 0; i < 3; i++) {
    const before = workerdCpuMs();
    const res = await mf.dispatchFetch(`http://costs/?op=${encodeURIComponent(op)}&n=${N}`);
    await res.text();
    runs.push(((workerdCpuMs() - before) * 1000) / N);
  }
  return runs.sort((a, b) => a - b)[1];
}

try {
  const empty = await usEach("nothing");
  console.log(
    `| operation | workerd CPU per operation (µs, the empty loop's ${empty.toFixed(1)} µs taken off) |`,
  );
  console.log("|---|---|");
  for (const op of Object.keys(OPERATIONS).filter((o) => o !== "nothing")) {
    console.log(`| ${op} | ${Math.max(0, (await usEach(op)) - empty).toFixed(1)} |`);
  }
} finally {
  await mf.dispose();
}
