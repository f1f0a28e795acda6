// Platform limits on free (`:free`) model variants, per account: a per-minute and a per-day count (UTC),
// the daily ceiling following all-time credits purchased; checked and counted by the ledger's core.
import { z } from "zod";
import { MICROS_PER_USD } from "../lib/money";
import type { LedgerStore, Rejection } from "./types";

export interface FreeLimits {
  perMinute: number;
  perDayLowTier: number;
  perDayHighTier: number;
  /** All-time credits purchased at which the higher daily ceiling applies... */
  tierThresholdMicros: number;
  /** ...which starts this much (one credit) below the threshold. */
  tierGraceMicros: number;
}

export const FREE_LIMITS: FreeLimits = {
  perMinute: 20,
  perDayLowTier: 50,
  perDayHighTier: 1000,
  tierThresholdMicros: 10 * MICROS_PER_USD,
  tierGraceMicros: 1 * MICROS_PER_USD,
};

/** Overrides for the defaults, as the FREE_MODEL_LIMITS variable (JSON, USD for money) may give them. */
const OverridesSchema = z
  .object({
    per_minute: z.int().min(0),
    per_day: z.int().min(0),
    per_day_high_tier: z.int().min(0),
    tier_threshold_usd: z.number().min(0),
  })
  .partial();

/** The limits in force: the defaults with any valid overrides applied; an invalid value is ignored. */
export function freeLimitsFrom(json: string | undefined): FreeLimits {
  if (!json) return FREE_LIMITS;
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch {
    return FREE_LIMITS;
  }
  const parsed = OverridesSchema.safeParse(raw);
  if (!parsed.success) return FREE_LIMITS;
  const o = parsed.data;
  return {
    ...FREE_LIMITS,
    perMinute: o.per_minute ?? FREE_LIMITS.perMinute,
    perDayLowTier: o.per_day ?? FREE_LIMITS.perDayLowTier,
    perDayHighTier: o.per_day_high_tier ?? FREE_LIMITS.perDayHighTier,
    tierThresholdMicros:
      o.tier_threshold_usd == null
        ? FREE_LIMITS.tierThresholdMicros
        : Math.round(o.tier_threshold_usd * MICROS_PER_USD),
  };
}

export function freeDailyCeiling(creditsPurchasedMicros: number, limits: FreeLimits = FREE_LIMITS): number {
  return creditsPurchasedMicros >= limits.tierThresholdMicros - limits.tierGraceMicros
    ? limits.perDayHighTier
    : limits.perDayLowTier;
}

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;
const minuteStart = (now: number) => Math.floor(now / MINUTE_MS) * MINUTE_MS;
const dayStart = (now: number) => Math.floor(now / DAY_MS) * DAY_MS;

type FreeStore = Pick<LedgerStore, "account" | "free" | "putFree">;

export interface FreeDaily {
  limit: number;
  used: number;
  remaining: number;
}

/** The account's free-model requests today (UTC) against its daily ceiling. */
export function freeDaily(store: FreeStore, limits: FreeLimits, now: number): FreeDaily {
  const limit = freeDailyCeiling(store.account().purchased, limits);
  const f = store.free();
  const used = f.dayStart === dayStart(now) ? f.dayUsed : 0;
  return { limit, used, remaining: Math.max(0, limit - used) };
}

/** The refusal for one more free-model request now, if a limit is reached (the day's first). */
export function checkFree(store: FreeStore, limits: FreeLimits, now: number): Rejection | undefined {
  const day = freeDaily(store, limits, now);
  if (day.used >= day.limit)
    return { reason: "free_per_day", at: now, requests: day.limit, resetsAt: dayStart(now) + DAY_MS };
  const f = store.free();
  const minute = minuteStart(now);
  const usedThisMinute = f.minuteStart === minute ? f.minuteUsed : 0;
  if (usedThisMinute >= limits.perMinute)
    return { reason: "free_per_minute", at: now, requests: limits.perMinute, resetsAt: minute + MINUTE_MS };
  return undefined;
}

/** Counts one admitted free-model request; a window whose start has passed begins again from zero. */
export function countFree(store: FreeStore, now: number): void {
  const f = store.free();
  const minute = minuteStart(now);
  const day = dayStart(now);
  store.putFree({
    minuteStart: minute,
    minuteUsed: (f.minuteStart === minute ? f.minuteUsed : 0) + 1,
    dayStart: day,
    dayUsed: (f.dayStart === day ? f.dayUsed : 0) + 1,
  });
}
