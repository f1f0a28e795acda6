// A meter: spend totals and UTC daily/weekly/monthly windows of one scope (a key or a guardrail) and bucket.
import { nextWindowStart, type Window, windowStart } from "./windows";

/** Credits spend and BYOK spend are metered apart; caps and budgets choose whether BYOK counts. */
export type Bucket = "credits" | "byok";

export interface Meter {
  total: number;
  daily: number;
  dailyStart: number;
  weekly: number;
  weeklyStart: number;
  monthly: number;
  monthlyStart: number;
  /** Open reservations in this bucket, not yet settled. */
  reserved: number;
}

export const WINDOWS: readonly Window[] = ["daily", "weekly", "monthly"];

export function emptyMeter(): Meter {
  return {
    total: 0,
    daily: 0,
    dailyStart: 0,
    weekly: 0,
    weeklyStart: 0,
    monthly: 0,
    monthlyStart: 0,
    reserved: 0,
  };
}

const startField = (w: Window) => `${w}Start` as const;

/** Settled spend in the window current at `now` (or all-time when `window` is null). */
export function spentIn(m: Meter, window: Window | null, now: number): number {
  if (window == null) return m.total;
  return m[startField(window)] === windowStart(window, now) ? m[window] : 0;
}

/** Adds settled spend at `now`; a window whose start has passed begins again from zero. */
export function addSpend(m: Meter, amount: number, now: number): Meter {
  const next = { ...m, total: m.total + amount };
  for (const w of WINDOWS) {
    const start = windowStart(w, now);
    if (next[startField(w)] !== start) {
      next[startField(w)] = start;
      next[w] = 0;
    }
    next[w] += amount;
  }
  return next;
}

export interface SpendFigures {
  total: number;
  daily: number;
  weekly: number;
  monthly: number;
}

export function figures(m: Meter | undefined, now: number): SpendFigures {
  if (!m) return { total: 0, daily: 0, weekly: 0, monthly: 0 };
  return {
    total: m.total,
    daily: spentIn(m, "daily", now),
    weekly: spentIn(m, "weekly", now),
    monthly: spentIn(m, "monthly", now),
  };
}

export interface Limit {
  limitMicros: number;
  reset: Window | null;
  includeByok: boolean;
}

/** Spend plus open reservations that count against a limit right now. */
export function committed(
  credits: Meter | undefined,
  byok: Meter | undefined,
  limit: Limit,
  now: number,
): number {
  const part = (m: Meter | undefined) => (m ? spentIn(m, limit.reset, now) + m.reserved : 0);
  return part(credits) + (limit.includeByok ? part(byok) : 0);
}

/** When a limit with this reset interval next starts again; null for lifetime limits. */
export function resetsAt(limit: Limit, now: number): number | null {
  return limit.reset == null ? null : nextWindowStart(limit.reset, now);
}
