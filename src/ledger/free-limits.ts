// Platform limits on free (`:free`) model variants; the daily tier follows all-time credits purchased.
import { z } from "zod";
import { MICROS_PER_USD } from "../lib/money";

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
