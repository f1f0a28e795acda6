// The admin CLI's plumbing: usage errors (exit 2), tables or JSON on stdout, progress on stderr for slow steps.

/** Bad input: said plainly, exit code 2, and nothing was written. */
export class UsageError extends Error {
  constructor(message) {
    super(message);
    this.exitCode = 2;
  }
}

/** A check or operation that ran and failed (exit code 1). */
export class Failure extends Error {
  constructor(message) {
    super(message);
    this.exitCode = 1;
  }
}

/** Rows as an aligned text table; `columns` are [key, heading] pairs. */
export function table(rows, columns) {
  if (rows.length === 0) return "(none)";
  const cell = (v) => (v === null || v === undefined ? "-" : String(v));
  const widths = columns.map(([key, heading]) =>
    Math.max(heading.length, ...rows.map((r) => cell(r[key]).length)),
  );
  const line = (values) =>
    values
      .map((v, i) => v.padEnd(widths[i]))
      .join("  ")
      .trimEnd();
  return [
    line(columns.map(([, h]) => h)),
    line(widths.map((w) => "-".repeat(w))),
    ...rows.map((r) => line(columns.map(([k]) => cell(r[k])))),
  ].join("\n");
}

/** Prints a command's result: JSON with --json, else a table (one record: a table of its fields). */
export function output(result, { json, columns }) {
  if (json) {
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    return;
  }
  if (!Array.isArray(result)) {
    const fields = Object.entries(result).map(([field, value]) => ({ field, value }));
    process.stdout.write(
      `${table(fields, [
        ["field", "field"],
        ["value", "value"],
      ])}\n`,
    );
    return;
  }
  process.stdout.write(`${table(result, columns ?? Object.keys(result[0] ?? {}).map((k) => [k, k]))}\n`);
}

const FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/**
 * Runs `work`, and once it has taken a second shows what it is doing on stderr: a spinner with the
 * elapsed time on a terminal, one line otherwise (and one more saying how long it took).
 */
export async function progress(label, work) {
  const started = Date.now();
  const tty = process.stderr.isTTY;
  let frame = 0;
  let shown = false;
  let ticker;
  const show = () => {
    shown = true;
    const seconds = ((Date.now() - started) / 1000).toFixed(0);
    if (tty) process.stderr.write(`\r${FRAMES[frame++ % FRAMES.length]} ${label}... ${seconds}s`);
    else process.stderr.write(`${label}...\n`);
  };
  const delay = setTimeout(() => {
    show();
    if (tty) ticker = setInterval(show, 100);
  }, 1000);
  let failed = false;
  try {
    return await work();
  } catch (err) {
    failed = true;
    throw err;
  } finally {
    clearTimeout(delay);
    clearInterval(ticker);
    if (shown) {
      const took = `${((Date.now() - started) / 1000).toFixed(1)}s`;
      const end = failed ? `failed after ${took}` : `done in ${took}`;
      if (tty) process.stderr.write(`\r\x1b[K${label}: ${end}\n`);
      else process.stderr.write(`${label}: ${end}\n`);
    }
  }
}
