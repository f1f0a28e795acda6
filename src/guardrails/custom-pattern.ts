// Custom content-filter patterns: validated by compiling them with RE2 (re2js), searched in time linear in the text.
import { RE2JS, RE2JSSyntaxException, RE2Set } from "re2js";

/** Longest custom pattern accepted, in characters. */
export const MAX_CUSTOM_PATTERN_LENGTH = 512;
/** Largest compiled program accepted: search cost grows with it, and `x{1000}` copies `x` a thousand times. */
const MAX_CUSTOM_PROGRAM_SIZE = 2000;
/**
 * Work custom patterns may do for one request, in units of one character handed to RE2 times the
 * pattern's cost (its instructions plus PER_CHARACTER). RE2's time is linear in both, so this bounds
 * the time deterministically (a clock could not: workerd's stands still while code runs): at most
 * ~130 ns a unit was measured on a shared CI core across adversarial patterns and inputs, so about
 * 1.3 s at worst. A 10-30 instruction pattern may scan 250k-550k characters per request; each match
 * it finds costs about 100 characters more (see customSpans), and compiling it, when the isolate has
 * not yet, COMPILE_CHARGE characters.
 */
export const CUSTOM_SCAN_BUDGET = 10_000_000;
/** Per-character cost of a pattern beyond its instructions: RE2's fixed work for each character. */
const PER_CHARACTER = 8;
/** Budget units compiling a pattern takes, per unit of its cost (compiling is ~5-10 µs an instruction). */
export const COMPILE_CHARGE = 100;
/**
 * Budget units each Unicode property (`\p{L}`, `\P{Lu}`, `\pN`) adds to a compile: building its class
 * takes 50-200 µs whatever the program's size (36 of them in one class, which RE2 folds into a few
 * ranges, took 3.4 ms to compile and probe against a charge of 1,300 units).
 */
const PROPERTY_COMPILE_CHARGE = 2_000;
const UNICODE_PROPERTY = /\\[pP](?:\{[^}]*\}|[A-Za-z])/g;

/** What compiling `pattern` (of `cost`, see CustomPattern) takes from the budget. */
export const compileCharge = (pattern: string, cost: number): number =>
  cost * COMPILE_CHARGE + (pattern.match(UNICODE_PROPERTY)?.length ?? 0) * PROPERTY_COMPILE_CHARGE;

/** What custom patterns may still spend on the current request (see CUSTOM_SCAN_BUDGET). */
export interface ScanBudget {
  remaining: number;
  /** The patterns this request already looked up (compiled at most once a request, whatever the cache). */
  seen?: Map<string, CustomPattern | null>;
  /** Each text's folded form (see fold.ts), made once a request. */
  folds?: Map<string, Array<Fold | null>>;
}

import type { Fold } from "./fold";

export const newScanBudget = (): ScanBudget => ({ remaining: CUSTOM_SCAN_BUDGET });

/** A compiled custom pattern. */
export interface CustomPattern {
  /** Finds match positions (with Matcher.find only: see customSpans). */
  regex: RE2JS;
  /** The pattern alone in a set, whose lazy DFA answers "any match?" within PROBE_MEMORY. */
  probe: RE2Set;
  /** What each character searched costs the budget (see CUSTOM_SCAN_BUDGET). */
  cost: number;
}

export type PatternVerdict = { ok: true; compiled: CustomPattern } | { ok: false; reason: string };

// RE2 syntax plus captureless lookbehind; unlike JavaScript: no backreferences or lookahead, `\s` is ASCII
// whitespace, `.` excludes only `\n`, property names are RE2's (`\p{L}`, `\p{Greek}`, not `\p{Letter}`).
const FLAGS = RE2JS.LOOKBEHINDS;
/**
 * DFA memory of a probe. RE2JS.test's DFA may take 8 MB per pattern, which cached patterns would keep
 * for the isolate's life, and building that many states costs more per character than the NFA; past
 * this the probe falls back to the NFA.
 */
const PROBE_MEMORY = 64 * 1024;

/** JavaScript's `\uXXXX` and `\u{X}` escapes, written `\x{X}` in RE2 (other escapes pass through). */
const toRe2Escapes = (pattern: string) =>
  pattern.replace(/\\(?:u\{([0-9A-Fa-f]{1,6})\}|u([0-9A-Fa-f]{4})|[\s\S])/g, (whole, braced, four) => {
    const hex = braced ?? four;
    return hex === undefined ? whole : `\\x{${hex}}`;
  });

function syntaxReason(err: RE2JSSyntaxException): string {
  const piece = err.input ?? "";
  if (/^\\([1-9]|k)/.test(piece)) return `backreferences are not supported (${err.error}: ${piece})`;
  if (piece.startsWith("(?=") || piece.startsWith("(?!")) {
    return `lookahead assertions are not supported (${err.error}: ${piece})`;
  }
  return `pattern is not a valid regular expression (${err.error}${piece ? `: ${piece}` : ""})`;
}

/** Compiles a custom content-filter pattern, or says why it cannot be used. */
export function compileCustomPattern(pattern: string): PatternVerdict {
  if (pattern.length === 0) return { ok: false, reason: "pattern must not be empty" };
  if (pattern.length > MAX_CUSTOM_PATTERN_LENGTH) {
    return { ok: false, reason: `pattern is longer than ${MAX_CUSTOM_PATTERN_LENGTH} characters` };
  }
  const source = toRe2Escapes(pattern);
  let regex: RE2JS;
  try {
    regex = RE2JS.compile(source, FLAGS);
  } catch (err) {
    if (err instanceof RE2JSSyntaxException) return { ok: false, reason: syntaxReason(err) };
    const detail = err instanceof Error ? err.message : String(err);
    return { ok: false, reason: `pattern is not a valid regular expression (${detail})` };
  }
  const size = regex.programSize();
  if (size > MAX_CUSTOM_PROGRAM_SIZE) {
    return {
      ok: false,
      reason: `pattern is too large: it compiles to ${size} instructions, at most ${MAX_CUSTOM_PROGRAM_SIZE} (large counted repetitions multiply the size)`,
    };
  }
  if (regex.matcher("").find()) return { ok: false, reason: "pattern must not match the empty string" };
  const probe = new RE2Set(RE2Set.UNANCHORED, FLAGS, PROBE_MEMORY);
  probe.add(source);
  probe.compile();
  return { ok: true, compiled: { regex, probe, cost: size + PER_CHARACTER } };
}

// RE2 finds one match in linear time, but the next search may rescan the same text (`a.*b|a` over a
// run of a's looks for a b to the end once per a): finding every match can be quadratic. So searches
// after the first match run in windows: a window holds a little context before the search position
// and reaches ahead, doubling while it could cut a match short. A match is thus found as on the whole
// text unless a longer one, over MATCH_MARGIN characters, would have taken precedence.
/** A match starting at least this far before the window's end (and ending before it) is the whole text's. */
const MATCH_MARGIN = 64;
/** Characters kept before the search position for `\b` and lookbehind, which sees no further back. */
const CONTEXT = 32;

/**
 * Non-empty matches of `pattern` in `text` as [start, end) spans (only the first when `firstOnly`),
 * or null when the budget runs out first. Charges the budget for every character handed to RE2.
 */
export function customSpans(
  { regex, probe, cost }: CustomPattern,
  text: string,
  budget: ScanBudget,
  firstOnly: boolean,
): Array<[number, number]> | null {
  const charge = (chars: number) => {
    budget.remaining -= chars * cost;
    return budget.remaining >= 0;
  };
  // Most texts match nothing: the probe's DFA settles that in one fast pass.
  if (!charge(text.length)) return null;
  if (probe.match(text).length === 0) return [];

  const spans: Array<[number, number]> = [];
  let at = 0;
  // The first search covers the whole text (one search is linear); windows start after a match.
  let reach = text.length;
  while (at < text.length) {
    const from = Math.max(0, at - CONTEXT);
    const to = Math.min(text.length, at + reach);
    if (!charge(to - from)) return null;
    const m = regex.matcher(text.slice(from, to));
    const found = m.find(at - from);
    const start = found ? from + m.start() : -1;
    const end = found ? from + m.end() : -1;
    if (to < text.length && (!found || end === to || start + MATCH_MARGIN > to)) {
      reach *= 2;
      continue;
    }
    if (!found) break;
    reach = MATCH_MARGIN;
    if (end > start) {
      spans.push([start, end]);
      if (firstOnly) break;
      at = end;
    } else {
      at = start + ((text.codePointAt(start) ?? 0) > 0xffff ? 2 : 1);
    }
  }
  return spans;
}
