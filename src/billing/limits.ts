// Platform limits on free (`:free`) model variants; the tier follows all-time credits purchased.
import { MICROS_PER_USD } from "../lib/money";

export const FREE_LIMITS = {
  perMinute: 20,
  perDayLowTier: 50,
  perDayHighTier: 1000,
  /** All-time credits purchased at which the higher daily ceiling applies... */
  tierThresholdMicros: 10 * MICROS_PER_USD,
  /** ...which starts one credit below the threshold. */
  tierGraceMicros: 1 * MICROS_PER_USD,
} as const;

export function freeDailyCeiling(creditsPurchasedMicros: number): number {
  return creditsPurchasedMicros >= FREE_LIMITS.tierThresholdMicros - FREE_LIMITS.tierGraceMicros
    ? FREE_LIMITS.perDayHighTier
    : FREE_LIMITS.perDayLowTier;
}
