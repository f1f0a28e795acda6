// The built-in content filters: what each slug detects, how, and the label its matches are redacted to.

export const BUILTIN_FILTER_SLUGS = [
  "email",
  "phone",
  "ssn",
  "credit-card",
  "ip-address",
  "secrets",
  "person-name",
  "address",
  "regex-prompt-injection",
] as const;
export type BuiltinFilterSlug = (typeof BUILTIN_FILTER_SLUGS)[number];

export interface BuiltinFilter {
  /** What the filter detects, as documented to users. */
  description: string;
  /** Replacement text used by `redact` when the entry carries no label of its own. */
  defaultLabel: string;
  /** Candidate matches; `accept` (when present) confirms each one (checksums, ranges). */
  patterns: RegExp[];
  accept?: (match: string) => boolean;
}

/** Luhn checksum: rejects most digit runs that merely look like card numbers. */
export function luhnValid(digits: string): boolean {
  let sum = 0;
  let double = false;
  for (let i = digits.length - 1; i >= 0; i--) {
    let d = digits.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return false;
    if (double) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    double = !double;
  }
  return sum % 10 === 0;
}

const OCTET = "(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)";
const HEX4 = "[0-9A-Fa-f]{1,4}";

const STREET_SUFFIX =
  "(?:Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Way|Place|Pl|Terrace|Ter|Parkway|Pkwy|Highway|Hwy|Square|Sq|Circle|Cir)";

export const BUILTIN_FILTERS: Record<BuiltinFilterSlug, BuiltinFilter> = {
  email: {
    description: "Email addresses (local-part@domain.tld).",
    defaultLabel: "[EMAIL]",
    // The lookbehind starts a match only at the start of a run, keeping the scan linear.
    patterns: [/(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,24}/g],
  },
  phone: {
    description:
      "Telephone numbers: international (+CC ...) and national forms with area code, 7 to 15 digits, separated by spaces, hyphens or parentheses.",
    defaultLabel: "[PHONE]",
    patterns: [/(?<![\w.+])(?:\+\d{1,3}[ -]?)?(?:\(\d{1,4}\)[ -]?|\d{2,4}[ -])\d{3,4}[ -]?\d{3,4}(?![\w.])/g],
    accept: (m) => {
      const digits = m.replace(/\D/g, "").length;
      return digits >= 7 && digits <= 15;
    },
  },
  ssn: {
    description:
      "US Social Security numbers written AAA-GG-SSSS (or with spaces), excluding never-issued ranges (000, 666, 9xx, 00, 0000).",
    defaultLabel: "[SSN]",
    patterns: [/(?<![\w-])(?!000|666|9\d\d)\d{3}([- ])(?!00)\d{2}\1(?!0000)\d{4}(?![\w-])/g],
  },
  "credit-card": {
    description:
      "Payment card numbers: 13 to 19 digits, optionally grouped by spaces or hyphens, that pass the Luhn checksum.",
    defaultLabel: "[CREDIT_CARD]",
    patterns: [/(?<![\w-])\d(?:[ -]?\d){12,18}(?![\w-])/g],
    accept: (m) => {
      const digits = m.replace(/\D/g, "");
      return digits.length >= 13 && digits.length <= 19 && luhnValid(digits);
    },
  },
  "ip-address": {
    description: "IPv4 addresses (each octet 0-255) and IPv6 addresses (full or '::'-compressed).",
    defaultLabel: "[IP_ADDRESS]",
    patterns: [
      new RegExp(`(?<![\\w.])${OCTET}(?:\\.${OCTET}){3}(?![\\w.])`, "g"),
      new RegExp(`(?<![\\w:])${HEX4}(?::${HEX4}){7}(?![\\w:])`, "g"),
      new RegExp(`(?<![\\w:])(?:${HEX4}(?::${HEX4}){0,6})?::(?:${HEX4}(?::${HEX4}){0,6})?(?![\\w:])`, "g"),
    ],
    // A bare "::" (e.g. C++ scope operator) is not an address.
    accept: (m) => m !== "::",
  },
  // Token patterns start only where a token run starts (lookbehind), so scans stay linear.
  secrets: {
    description:
      "Credentials: AWS access key ids, OpenAI/Anthropic-style sk- keys, GitHub, GitLab and Slack tokens, Google API keys, Stripe live keys, JSON Web Tokens and PEM private key blocks.",
    defaultLabel: "[SECRET]",
    patterns: [
      /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g,
      /(?<![A-Za-z0-9_-])sk-[A-Za-z0-9_-]{20,}/g,
      /\bgh[pousr]_[A-Za-z0-9]{36,}\b/g,
      /(?<![A-Za-z0-9_-])glpat-[A-Za-z0-9_-]{20,}/g,
      /(?<![A-Za-z0-9-])xox[abprs]-[A-Za-z0-9-]{10,}/g,
      /\bAIza[0-9A-Za-z_-]{35}\b/g,
      /\b[sr]k_live_[0-9A-Za-z]{16,}\b/g,
      /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g,
      // The body is base64 (no dashes), bounded, so an unterminated header cannot make the scan quadratic.
      /-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----[A-Za-z0-9+/=\s]{0,16384}(?:-----END (?:[A-Z]+ )?PRIVATE KEY-----)?/g,
    ],
  },
  "person-name": {
    description:
      "Personal names introduced by an honorific (Mr, Mrs, Ms, Dr, Prof...) or by a phrase such as 'my name is' / 'name:'; a heuristic, not a named-entity model.",
    defaultLabel: "[PERSON_NAME]",
    patterns: [
      /\b(?:Mr|Mrs|Ms|Mx|Miss|Dr|Prof|Sir|Dame)\.? [A-Z][a-z'-]+(?: [A-Z][a-z'-]+){0,2}/g,
      /(?<=\b(?:[Mm]y name is|I am called|[Nn]ame:)\s?)[A-Z][a-z'-]+(?: [A-Z][a-z'-]+){0,2}/g,
    ],
  },
  address: {
    description:
      "Street addresses: a house number, one to four capitalised words and a street type (Street, Ave, Rd, Blvd...), with an optional unit (Apt, Suite, Unit, #).",
    defaultLabel: "[ADDRESS]",
    patterns: [
      new RegExp(
        `\\b\\d{1,6} (?:[A-Z][A-Za-z'-]* ){1,4}${STREET_SUFFIX}\\b\\.?(?:,? (?:Apt|Apartment|Suite|Ste|Unit|#) ?[A-Za-z0-9-]+)?`,
        "g",
      ),
    ],
  },
  "regex-prompt-injection": {
    description:
      "Common prompt-injection phrasings: 'ignore/disregard/forget previous instructions', requests to reveal the system prompt, 'you are now DAN / in developer mode', and fake system-role markers.",
    defaultLabel: "[PROMPT_INJECTION]",
    patterns: [
      /\b(?:ignore|disregard|forget|override|bypass)\b(?:\s+(?:all|any|the|your|my|of|these|those))*\s+(?:previous|prior|above|earlier|preceding|initial|original|system)\s+(?:instructions|prompts?|rules|directions|messages|context)\b/gi,
      /\b(?:reveal|show|print|repeat|output|leak|tell\s+me)\b(?:\s+(?:me|us|the|your|all|of))*\s+(?:system\s+prompt|hidden\s+(?:prompt|instructions)|initial\s+instructions)\b/gi,
      /\byou\s+are\s+now\s+(?:DAN|in\s+(?:developer|god|jailbreak)\s+mode|unrestricted|jailbroken)\b/gi,
      /\b(?:enable|enter|activate)\s+(?:developer|god|jailbreak|DAN)\s+mode\b/gi,
      /<\|?(?:im_start|system)\|?>|\[\/?(?:INST|SYS)\]/gi,
    ],
  },
};

/**
 * What built-in filters take from a request's scan budget (custom-pattern.ts, CUSTOM_SCAN_BUDGET): a unit
 * per 10 characters scanned (each pattern runs in 1-11 ns a character over text it does not match) and
 * 4 units a match (dense matches take ~40 ns a character: 2.6 million names in 15 MB took 0.7 s and
 * 100 MB per filter). So many guardrails over a large text end in a 413, not in seconds of work.
 */
const BUILTIN_CHARS_PER_UNIT = 10;
const BUILTIN_MATCH_UNITS = 4;

/**
 * Spans ([start, end)) of the filter's matches in `text`, sorted and merged where they overlap (only
 * the first one found when `firstOnly`), or null when `budget` ran out first.
 */
export function builtinMatches(
  slug: BuiltinFilterSlug,
  text: string,
  budget: { remaining: number } = { remaining: Number.POSITIVE_INFINITY },
  firstOnly = false,
): Array<[number, number]> | null {
  const filter = BUILTIN_FILTERS[slug];
  const spans: Array<[number, number]> = [];
  for (const pattern of filter.patterns) {
    budget.remaining -= text.length / BUILTIN_CHARS_PER_UNIT;
    if (budget.remaining < 0) return null;
    for (const m of text.matchAll(pattern)) {
      if (m[0].length === 0) continue;
      if (filter.accept && !filter.accept(m[0])) continue;
      budget.remaining -= BUILTIN_MATCH_UNITS;
      if (budget.remaining < 0) return null;
      spans.push([m.index, m.index + m[0].length]);
      if (firstOnly) return spans;
    }
  }
  return mergeSpans(spans);
}

export function mergeSpans(spans: Array<[number, number]>): Array<[number, number]> {
  spans.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
  const merged: Array<[number, number]> = [];
  for (const span of spans) {
    const last = merged[merged.length - 1];
    if (last && span[0] < last[1]) last[1] = Math.max(last[1], span[1]);
    else merged.push([span[0], span[1]]);
  }
  return merged;
}
