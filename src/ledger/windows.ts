// Spending windows reset at UTC boundaries: days at 00:00, weeks on Monday 00:00, months on the 1st.

export type Window = "daily" | "weekly" | "monthly";

export function windowStart(window: Window, now: number): number {
  const d = new Date(now);
  const day = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
  if (window === "daily") return day;
  if (window === "weekly") return day - ((d.getUTCDay() + 6) % 7) * 86_400_000;
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}

export function nextWindowStart(window: Window, now: number): number {
  const d = new Date(windowStart(window, now));
  if (window === "daily") return d.getTime() + 86_400_000;
  if (window === "weekly") return d.getTime() + 7 * 86_400_000;
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
}
