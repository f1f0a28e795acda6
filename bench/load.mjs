// The load every benchmark drives (in workerd and from Node alike): closed loops, phases of each mode
// alternated in one run, and the figures reported for a pair of modes.

/**
 * One phase: `concurrency` loops, each sending its next request as soon as its last one answered,
 * until `total` requests were sent.
 * @param {number} concurrency
 * @param {number} total
 * @param {(i: number) => Promise<boolean>} one sends request `i`; resolves whether it succeeded
 * @returns {Promise<{ rps: number, failed: number }>}
 */
export async function closedLoop(concurrency, total, one) {
  let next = 0;
  let failed = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) if (!(await one(next++))) failed++;
    }),
  );
  return { rps: total / ((performance.now() - started) / 1000), failed };
}

/**
 * Warms every mode up once, then runs `rounds` rounds of every mode in turn, so drift on a shared
 * machine hits them all alike. Returns each mode's measured phases.
 * @template {string} M
 * @param {M[]} modes
 * @param {(mode: M) => Promise<{ rps: number, failed: number }>} phase
 * @returns {Promise<Record<M, Array<{ rps: number, failed: number }>>>}
 */
export async function alternate(modes, phase, rounds = 2) {
  for (const mode of modes) await phase(mode);
  const measured = /** @type {Record<M, Array<{ rps: number, failed: number }>>} */ ({});
  for (const mode of modes) measured[mode] = [];
  for (let round = 0; round < rounds; round++) {
    for (const mode of modes) measured[mode].push(await phase(mode));
  }
  return measured;
}

/** @param {Array<{ rps: number }>} phases */
export const meanRps = (phases) => phases.reduce((s, p) => s + p.rps, 0) / phases.length;

/**
 * The figures reported for ledger-off vs ledger-on phases of one run.
 * @param {Array<{ rps: number }>} off
 * @param {Array<{ rps: number }>} on
 */
export function onOff(off, on) {
  return {
    ledger_off_rps: Math.round(meanRps(off)),
    ledger_on_rps: Math.round(meanRps(on)),
    ratio: Number((meanRps(on) / meanRps(off)).toFixed(3)),
  };
}

/** @param {Array<{ failed: number }>} phases */
export const failures = (phases) => phases.reduce((s, p) => s + p.failed, 0);
