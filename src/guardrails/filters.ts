// Content filters on request text: built-in detectors and custom RE2 patterns, giving block/redact/flag verdicts.

import {
  BUILTIN_FILTER_SLUGS,
  BUILTIN_FILTERS,
  type BuiltinFilterSlug,
  builtinMatches,
  mergeSpans,
} from "./builtin-filters";
import {
  type CustomPattern,
  compileCharge,
  compileCustomPattern,
  customSpans,
  newScanBudget,
  type ScanBudget,
} from "./custom-pattern";
import { FOLD_UNITS_PER_CHAR, type Fold, readings, unfoldSpans } from "./fold";
import type { AppliedFilter } from "./policy";

export { BUILTIN_FILTER_SLUGS, BUILTIN_FILTERS, type BuiltinFilterSlug, luhnValid } from "./builtin-filters";
export {
  CUSTOM_SCAN_BUDGET,
  compileCustomPattern,
  MAX_CUSTOM_PATTERN_LENGTH,
  newScanBudget,
  type ScanBudget,
} from "./custom-pattern";

/** Replacement text for a custom filter's matches when it has no label. */
export const CUSTOM_FILTER_DEFAULT_LABEL = "[REDACTED]";

export function isBuiltinSlug(slug: string): slug is BuiltinFilterSlug {
  return (BUILTIN_FILTER_SLUGS as readonly string[]).includes(slug);
}

export function defaultBuiltinLabel(slug: BuiltinFilterSlug): string {
  return BUILTIN_FILTERS[slug].defaultLabel;
}

export interface FilterVerdict {
  /** The text after every `redact` filter ran (unchanged when none matched or a filter blocked). */
  text: string;
  /** The first `block` filter that matched; the caller refuses the request with 403 naming its label. */
  blockedBy?: AppliedFilter;
  /**
   * The custom filter that found the request's scan budget spent: the text was not fully checked and
   * the caller refuses the request (413).
   */
  overBudget?: AppliedFilter;
  /** `flag` filters that matched (detect-only: the text is untouched). */
  flagged: AppliedFilter[];
  /** `redact` filters that matched and rewrote the text. */
  redacted: AppliedFilter[];
}

// Compiled custom patterns, shared across requests in the isolate (patterns were validated on write).
// A pattern takes ~20 KB plus 0.3-1 KB an instruction and up to 64 KB of probe DFA: ~40 MB at the caps.
// Least recently used first out: a key whose patterns overflow the caps evicts one pattern at a time,
// not every tenant's at once.
const compiled = new Map<string, CustomPattern | null>();
const MAX_COMPILED = 200;
const MAX_COMPILED_INSTRUCTIONS = 20_000;
let compiledInstructions = 0;
const instructionsOf = (entry: CustomPattern | null | undefined) => entry?.regex.programSize() ?? 0;

/**
 * The compiled pattern: once a request (even when the isolate's cache cannot hold all of a key's
 * patterns), compiling it when the isolate has none, charged to `budget` (see compileCharge).
 */
function customPattern(pattern: string, budget: ScanBudget): CustomPattern | null {
  budget.seen ??= new Map();
  const seen = budget.seen;
  const mine = seen.get(pattern);
  if (mine !== undefined) return mine;
  let entry = compiled.get(pattern);
  if (entry === undefined) {
    const verdict = compileCustomPattern(pattern);
    entry = verdict.ok ? verdict.compiled : null;
    budget.remaining -= entry ? compileCharge(pattern, entry.cost) : 0;
    const size = instructionsOf(entry);
    while (
      compiled.size > 0 &&
      (compiled.size >= MAX_COMPILED || compiledInstructions + size > MAX_COMPILED_INSTRUCTIONS)
    ) {
      const [oldest, evicted] = compiled.entries().next().value!;
      compiled.delete(oldest);
      compiledInstructions -= instructionsOf(evicted);
    }
    compiledInstructions += size;
  } else compiled.delete(pattern);
  compiled.set(pattern, entry);
  seen.set(pattern, entry);
  return entry;
}

/** The ways filters read the text (fold.ts), made once a request; folding is charged as reading. */
function readingsOf(text: string, budget: ScanBudget): Array<Fold | null> {
  budget.folds ??= new Map();
  const known = budget.folds.get(text);
  if (known !== undefined) return known;
  const made = readings(text);
  const folds = made.filter((r) => r !== null).length;
  budget.remaining -= (folds * text.length * FOLD_UNITS_PER_CHAR) / 10;
  budget.folds.set(text, made);
  return made;
}

/**
 * Match spans of one filter in `text` (only the first when `firstOnly`), found in each reading of the
 * text and given as spans of `text`; an unusable stored pattern matches nothing. Null when the filter
 * ran out of `budget`.
 */
export function filterMatches(
  filter: AppliedFilter,
  text: string,
  budget: ScanBudget,
  firstOnly = false,
): Array<[number, number]> | null {
  const found: Array<[number, number]> = [];
  for (const reading of readingsOf(text, budget)) {
    const read = reading?.text ?? text;
    let spans: Array<[number, number]> | null;
    if (filter.kind === "builtin") {
      spans = isBuiltinSlug(filter.match) ? builtinMatches(filter.match, read, budget, firstOnly) : [];
    } else {
      const compiledPattern = customPattern(filter.match, budget);
      if (budget.remaining < 0) return null;
      if (!compiledPattern) return [];
      spans = customSpans(compiledPattern, read, budget, firstOnly);
    }
    if (!spans) return null;
    found.push(...(reading ? unfoldSpans(reading, spans) : spans));
    if (firstOnly && found.length > 0) break;
  }
  return mergeSpans(found);
}

function replaceSpans(text: string, spans: Array<[number, number]>, label: string): string {
  let out = "";
  let at = 0;
  for (const [start, end] of spans) {
    out += text.slice(at, start) + label;
    at = end;
  }
  return out + text.slice(at);
}

/**
 * Runs the filters over one text input. Block and flag filters look at the text as sent (so a
 * redaction cannot hide what a block filter would catch); redactions then apply in order. Custom
 * patterns draw on `budget`, shared by every text of a request. Pure: verdicts, never exceptions.
 */
export function applyContentFilters(
  filters: AppliedFilter[],
  text: string,
  budget: ScanBudget = newScanBudget(),
): FilterVerdict {
  const flagged: AppliedFilter[] = [];
  for (const filter of filters) {
    if (filter.action === "redact") continue;
    const spans = filterMatches(filter, text, budget, true);
    if (!spans) return { text, overBudget: filter, flagged, redacted: [] };
    if (spans.length === 0) continue;
    if (filter.action === "block") return { text, blockedBy: filter, flagged, redacted: [] };
    flagged.push(filter);
  }
  const redacted: AppliedFilter[] = [];
  let out = text;
  for (const filter of filters) {
    if (filter.action !== "redact") continue;
    const spans = filterMatches(filter, out, budget);
    if (!spans) return { text, overBudget: filter, flagged, redacted: [] };
    if (spans.length === 0) continue;
    out = replaceSpans(out, spans, filter.label);
    redacted.push(filter);
  }
  return { text: out, flagged, redacted };
}
