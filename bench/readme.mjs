// `npm run bench:readme [file]`: puts the bench results into README.md, between the
// `<!-- bench:results -->` markers: the timing table beside the targets, then the counting, profile and
// memory tables. Each table comes from the newest bench/results/<date>.json holding that mode (or all
// from `file`), since a run of one mode writes only its own section.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { countingTable, memoryTable, profileSummaryTable, timingTable } from "./harness/report.mjs";

const root = new URL("..", import.meta.url).pathname;
const dir = join(root, "bench/results");
const files = process.argv[2]
  ? [process.argv[2]]
  : readdirSync(dir)
      .filter((f) => /^\d{4}-\d{2}-\d{2}\.json$/.test(f))
      .sort()
      .reverse()
      .map((f) => join(dir, f));
const loaded = files.map((file) => ({
  name: file.split("/").pop(),
  results: JSON.parse(readFileSync(file, "utf8")),
}));
/** The newest file's section for a mode, with the file's name. */
const newest = (mode) => {
  const hit = loaded.find((l) => l.results[mode]);
  return hit && { name: hit.name, section: hit.results[mode] };
};

const load = (m) =>
  `load average ${m.machine.loadavg_before[0].toFixed(1)} -> ${m.machine.loadavg_after[0].toFixed(1)}`;
const about = (m) =>
  `commit ${m.revision?.commit ?? "?"}${m.revision?.src_changed ? " (src changed)" : ""}${m.keys > 1 ? `, load spread over ${m.keys} keys` : ""}, ${m.machine.cpus} cores, ${load(m)}`;

const MODES = [
  {
    mode: "timing",
    heading: (t) => `Timing: ${t.rounds} rounds of ${t.phase_ms / 1000} s per arm after a warm-up`,
    table: timingTable,
  },
  {
    mode: "counting",
    heading: (c) =>
      `Counting (\`--count\`): ${c.requests_per_scenario} requests per scenario after a warm-up, averages per request`,
    table: countingTable,
  },
  {
    mode: "profile",
    heading: () => "Profile (`--profile`): CPU per request of every isolate in workerd while one arm runs",
    table: profileSummaryTable,
  },
  {
    mode: "memory",
    heading: (m) =>
      `Memory (\`--memory\`): workerd's resident memory, and the gateway isolate's V8 heap after a full collection, over ${m.requests_per_scenario} gateway requests after ${m.warmup_requests} of warm-up`,
    table: memoryTable,
  },
];

const parts = [];
for (const { mode, heading, table } of MODES) {
  const found = newest(mode);
  if (!found) continue;
  if (parts.length) parts.push("");
  parts.push(
    `${heading(found.section)}; from \`bench/results/${found.name}\`, ${about(found.section)}.`,
    "",
    table(found.section.scenarios),
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
console.log(
  `README.md: results of ${[...new Set(MODES.map((m) => newest(m.mode)?.name).filter(Boolean))].join(", ")}`,
);
