// Money is integer micro-dollars inside the gateway; USD numbers exist only at the wire.

export const MICROS_PER_USD = 1_000_000;

export function usdToMicros(usd: number): number {
  return Math.round(usd * MICROS_PER_USD);
}

export function microsToUsd(micros: number): number {
  return micros / MICROS_PER_USD;
}

export function microsToUsdOrNull(micros: number | null | undefined): number | null {
  return micros == null ? null : microsToUsd(micros);
}

/** Whole micro-dollars from a computed price, rounded up as charged (float noise forgiven), never below 0. */
export function chargedMicros(micros: number): number {
  return Math.max(0, Math.ceil(micros - 1e-9));
}
