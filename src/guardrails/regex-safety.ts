// Static safety check for user-supplied regex filters: rejects patterns that can backtrack catastrophically.

/** Longest custom pattern accepted, in characters. */
export const MAX_CUSTOM_PATTERN_LENGTH = 512;
/** Largest bound accepted in a counted repetition such as `{2,1000}`. */
const MAX_REPEAT_BOUND = 1000;
/** Flags custom patterns are compiled with: global, Unicode-aware (strict syntax). */
export const CUSTOM_PATTERN_FLAGS = "gu";

export type PatternVerdict = { ok: true; regex: RegExp } | { ok: false; reason: string };

interface Frame {
  /** Something inside repeats a variable number of times: repeating this group nests quantifiers. */
  repeats: boolean;
  /** Source of each `|` branch, for the overlap check. */
  branches: string[];
  branchStart: number;
}

/** Character-class-like atoms that overlap almost everything, so alternation between them is ambiguous. */
const BROAD_ATOMS = new Set([".", "\\w", "\\W", "\\d", "\\D", "\\s", "\\S", "[\\s\\S]", "[\\w\\W]", "[^]"]);

function readQuantifier(src: string, i: number): { min: number; max: number; length: number } | null {
  const ch = src[i];
  if (ch === "*") return { min: 0, max: Number.POSITIVE_INFINITY, length: 1 };
  if (ch === "+") return { min: 1, max: Number.POSITIVE_INFINITY, length: 1 };
  if (ch === "?") return { min: 0, max: 1, length: 1 };
  if (ch !== "{") return null;
  const m = /^\{(\d+)(,(\d*))?\}/.exec(src.slice(i));
  if (!m) return null;
  const min = Number(m[1]);
  const max = m[2] === undefined ? min : m[3] === "" ? Number.POSITIVE_INFINITY : Number(m[3]);
  return { min, max: Math.max(max, min), length: m[0].length };
}

/** Length of the escape sequence starting at `i` (a backslash). */
function escapeLength(src: string, i: number): number {
  const next = src[i + 1];
  if ((next === "u" || next === "p" || next === "P" || next === "k") && /[{<]/.test(src[i + 2] ?? "")) {
    const close = src.indexOf(next === "k" ? ">" : "}", i + 2);
    return close === -1 ? 2 : close - i + 1;
  }
  return 2;
}

function ambiguousBranches(branches: string[]): boolean {
  const seen = new Set<string>();
  for (const b of branches) {
    if (b === "" || seen.has(b)) return true;
    seen.add(b);
  }
  const broad = branches.filter((b) => BROAD_ATOMS.has(b));
  if (broad.length > 0 && branches.length > 1) return true;
  // (a|aa)*: one branch is another repeated.
  return branches.some((a) =>
    branches.some((b) => b !== a && b.length % a.length === 0 && b === a.repeat(b.length / a.length)),
  );
}

/** Structural scan: nested repetition (star height > 1), ambiguous repeated alternation, backreferences. */
function structuralProblem(src: string): string | null {
  const stack: Frame[] = [{ repeats: false, branches: [], branchStart: 0 }];
  // What the last atom was: a closed group (with its frame) or a single token.
  let last: { group: Frame | null } | null = null;
  let i = 0;
  while (i < src.length) {
    const ch = src[i]!;
    const frame = stack[stack.length - 1]!;
    if (ch === "\\") {
      const next = src[i + 1] ?? "";
      if (/[1-9]/.test(next) || (next === "k" && src[i + 2] === "<")) {
        return "backreferences are not allowed in custom filters";
      }
      i += escapeLength(src, i);
      last = { group: null };
      continue;
    }
    if (ch === "[") {
      let j = i + 1;
      if (src[j] === "^") j++;
      if (src[j] === "]") j++;
      while (j < src.length && src[j] !== "]") j += src[j] === "\\" ? 2 : 1;
      i = j + 1;
      last = { group: null };
      continue;
    }
    if (ch === "(") {
      let j = i + 1;
      if (src[j] === "?") {
        // (?: (?= (?! (?<= (?<! (?<name>
        j++;
        if (src[j] === "<" && src[j + 1] !== "=" && src[j + 1] !== "!") {
          const close = src.indexOf(">", j);
          j = close === -1 ? j + 1 : close + 1;
        } else {
          j += src[j] === "<" ? 2 : 1;
        }
      }
      stack.push({ repeats: false, branches: [], branchStart: j });
      i = j;
      last = null;
      continue;
    }
    if (ch === "|") {
      frame.branches.push(src.slice(frame.branchStart, i));
      frame.branchStart = i + 1;
      i++;
      last = null;
      continue;
    }
    if (ch === ")") {
      if (stack.length === 1) return "unbalanced parenthesis";
      frame.branches.push(src.slice(frame.branchStart, i));
      stack.pop();
      const parent = stack[stack.length - 1]!;
      parent.repeats ||= frame.repeats;
      i++;
      last = { group: frame };
      continue;
    }
    const q = readQuantifier(src, i);
    if (q) {
      i += q.length;
      if (src[i] === "?") i++;
      if (q.min > MAX_REPEAT_BOUND || (q.max > MAX_REPEAT_BOUND && Number.isFinite(q.max))) {
        return `counted repetitions may not exceed ${MAX_REPEAT_BOUND}`;
      }
      if (q.max > 1) {
        if (last?.group?.repeats) {
          return "nested quantifiers (a repeated group that itself contains a repetition, like (a+)+) can backtrack catastrophically";
        }
        if (last?.group && last.group.branches.length > 1 && ambiguousBranches(last.group.branches)) {
          return "a repeated alternation whose branches overlap (like (a|a)* or (.|x)+) can backtrack catastrophically";
        }
      }
      // A fixed count like \d{3} adds no ambiguity; only variable repetition nests badly.
      if (q.max > q.min) frame.repeats = true;
      last = null;
      continue;
    }
    i++;
    last = { group: null };
  }
  return null;
}

/** The leading atom of `src` when a variable, unbounded quantifier (`+`, `*`, `{n,}`) follows it. */
function leadingRepeatedAtom(src: string): string | null {
  let atom: string;
  if (src[0] === "\\") {
    atom = src.slice(0, escapeLength(src, 0));
    // Only class escapes: a literal escape like \. is fine too, an assertion like \b is not an atom.
    if (/^\\[bBk0-9]/.test(atom)) return null;
  } else if (src[0] === "[") {
    let j = 1;
    if (src[j] === "^") j++;
    if (src[j] === "]") j++;
    while (j < src.length && src[j] !== "]") j += src[j] === "\\" ? 2 : 1;
    if (j >= src.length) return null;
    atom = src.slice(0, j + 1);
  } else if (src[0] && !"()|^$*+?{".includes(src[0])) {
    atom = src[0];
  } else {
    return null;
  }
  const q = readQuantifier(src, atom.length);
  // A lazy repetition (a+?) can end inside a run and match again there: leave it as written.
  if (!q || src[atom.length + q.length] === "?") return null;
  return Number.isFinite(q.max) ? null : atom;
}

function hasTopLevelAlternation(src: string): boolean {
  let depth = 0;
  for (let i = 0; i < src.length; i++) {
    const ch = src[i];
    if (ch === "\\") i++;
    else if (ch === "[") {
      i++;
      while (i < src.length && src[i] !== "]") i += src[i] === "\\" ? 2 : 1;
    } else if (ch === "(") depth++;
    else if (ch === ")") depth--;
    else if (ch === "|" && depth === 0) return true;
  }
  return false;
}

/**
 * A pattern that opens with a repeated atom (`\w+@...`) would be retried from every position inside
 * a long run of that atom: quadratic. Starting matches only where such a run starts finds the same
 * matches (from a run's start the repetition can cover whatever a later start covered), in linear time.
 */
export function linearised(pattern: string): string {
  const atom = leadingRepeatedAtom(pattern);
  if (!atom || hasTopLevelAlternation(pattern)) return pattern;
  return `(?<!${atom})${pattern}`;
}

/** Validates a custom content-filter pattern; the compiled regex is returned when it is safe. */
export function checkCustomPattern(pattern: string): PatternVerdict {
  if (pattern.length === 0) return { ok: false, reason: "pattern must not be empty" };
  if (pattern.length > MAX_CUSTOM_PATTERN_LENGTH) {
    return { ok: false, reason: `pattern is longer than ${MAX_CUSTOM_PATTERN_LENGTH} characters` };
  }
  let regex: RegExp;
  try {
    regex = new RegExp(pattern, CUSTOM_PATTERN_FLAGS);
  } catch (err) {
    const detail = err instanceof Error ? err.message.replace(/^Invalid regular expression: /, "") : "";
    return { ok: false, reason: `pattern is not a valid regular expression (${detail})` };
  }
  const problem = structuralProblem(pattern);
  if (problem) return { ok: false, reason: problem };
  if (regex.test("")) return { ok: false, reason: "pattern must not match the empty string" };
  try {
    return { ok: true, regex: new RegExp(linearised(pattern), CUSTOM_PATTERN_FLAGS) };
  } catch {
    // The rewrite is an optimisation; should it ever not compile, the checked pattern stands.
    regex.lastIndex = 0;
    return { ok: true, regex };
  }
}
