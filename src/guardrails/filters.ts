// Content filters on request text: built-in detectors and custom regexes, giving block/redact/flag verdicts.

import {
  BUILTIN_FILTER_SLUGS,
  BUILTIN_FILTERS,
  type BuiltinFilterSlug,
  builtinMatches,
  mergeSpans,
} from "./builtin-filters";
import type { AppliedFilter } from "./policy";
import { checkCustomPattern } from "./regex-safety";

export { BUILTIN_FILTER_SLUGS, BUILTIN_FILTERS, type BuiltinFilterSlug, luhnValid } from "./builtin-filters";
export { CUSTOM_PATTERN_FLAGS, checkCustomPattern, MAX_CUSTOM_PATTERN_LENGTH } from "./regex-safety";

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
  /** `flag` filters that matched (detect-only: the text is untouched). */
  flagged: AppliedFilter[];
  /** `redact` filters that matched and rewrote the text. */
  redacted: AppliedFilter[];
}

// Compiled custom patterns, shared across requests in the isolate (patterns were validated on write).
const compiled = new Map<string, RegExp | null>();
const MAX_COMPILED = 1000;

function customRegex(pattern: string): RegExp | null {
  let regex = compiled.get(pattern);
  if (regex === undefined) {
    const verdict = checkCustomPattern(pattern);
    regex = verdict.ok ? verdict.regex : null;
    if (compiled.size >= MAX_COMPILED) compiled.clear();
    compiled.set(pattern, regex);
  }
  return regex;
}

/** Match spans of one filter in `text`; an unusable stored pattern matches nothing. */
export function filterMatches(filter: AppliedFilter, text: string): Array<[number, number]> {
  if (filter.kind === "builtin") {
    return isBuiltinSlug(filter.match) ? builtinMatches(filter.match, text) : [];
  }
  const regex = customRegex(filter.match);
  if (!regex) return [];
  const spans: Array<[number, number]> = [];
  for (const m of text.matchAll(regex)) {
    if (m[0].length > 0) spans.push([m.index, m.index + m[0].length]);
  }
  return mergeSpans(spans);
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
 * redaction cannot hide what a block filter would catch); redactions then apply in order.
 * Pure: verdicts, never exceptions.
 */
export function applyContentFilters(filters: AppliedFilter[], text: string): FilterVerdict {
  const flagged: AppliedFilter[] = [];
  for (const filter of filters) {
    if (filter.action === "redact") continue;
    if (filterMatches(filter, text).length === 0) continue;
    if (filter.action === "block") return { text, blockedBy: filter, flagged, redacted: [] };
    flagged.push(filter);
  }
  const redacted: AppliedFilter[] = [];
  let out = text;
  for (const filter of filters) {
    if (filter.action !== "redact") continue;
    const spans = filterMatches(filter, out);
    if (spans.length === 0) continue;
    out = replaceSpans(out, spans, filter.label);
    redacted.push(filter);
  }
  return { text: out, flagged, redacted };
}
