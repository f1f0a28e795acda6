// Figures shared by the bench worker and the benchmarks that drive it.

/** What the synthetic ledger benchmark charges each request, in micro-dollars. */
export const COST_MICROS = 7;
