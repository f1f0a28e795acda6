// `npm run bench:readme [file]`: puts the latest bench/results/<date>.json (or `file`) into README.md, between
// the `<!-- bench:results -->` markers: the timing table beside the targets, the counting and profile tables.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { countingTable, profileSummaryTable, timingTable } from "./harness/report.mjs";

const root = new URL("..", import.meta.url).pathname;
const dir = join(root, "bench/results");
const file =
  process.argv[2] ??
  join(
    dir,
    readdirSync(dir)
      .filter((f) => /^\d{4}-\d{2}-\d{2}\.json$/.test(f))
      .sort()
      .at(-1),
  );
const results = JSON.parse(readFileSync(file, "utf8"));

const load = (m) =>
  `load average ${m.machine.loadavg_before[0].toFixed(1)} -> ${m.machine.loadavg_after[0].toFixed(1)}`;
const about = (m) =>
  `commit ${m.revision?.commit ?? "?"}${m.revision?.src_changed ? " (src changed)" : ""}, ${m.machine.cpus} cores, ${load(m)}`;

const parts = [`From \`bench/results/${file.split("/").pop()}\`.`];
if (results.timing) {
  const t = results.timing;
  parts.push(
    `Timing: ${t.rounds} rounds of ${t.phase_ms / 1000} s per arm after a warm-up; ${about(t)}.`,
    "",
    timingTable(t.scenarios),
  );
}
if (results.counting) {
  const c = results.counting;
  parts.push(
    "",
    `Counting (\`--count\`): ${c.requests_per_scenario} requests per scenario after a warm-up, averages per request; ${about(c)}.`,
    "",
    countingTable(c.scenarios),
  );
}

if (results.profile) {
  const p = results.profile;
  parts.push(
    "",
    `Profile (\`--profile\`): CPU per request of every isolate in workerd while one arm runs; ${about(p)}.`,
    "",
    profileSummaryTable(p.scenarios),
  );
}

const START = "<!-- bench:results -->";
const END = "<!-- /bench:results -->";
const readme = readFileSync(join(root, "README.md"), "utf8");
const from = readme.indexOf(START);
const to = readme.indexOf(END);
if (from < 0 || to < from) throw new Error(`README.md has no ${START} ... ${END} section`);
writeFileSync(
  join(root, "README.md"),
  `${readme.slice(0, from + START.length)}\n${parts.join("\n")}\n${readme.slice(to)}`,
);
console.log(`README.md: results of ${file.split("/").pop()}`);
