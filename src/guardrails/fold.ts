// The text as content filters read it: compatibility forms folded (NFKC: fullwidth letters and signs,
// ligatures, no-break and ideographic spaces) and invisible format characters (zero-width spaces and
// joiners, soft hyphens, direction marks; every format, default-ignorable and control character but the
// line and word breaks; unpaired surrogates) dropped, so `bob＠example.com` or `ig\u200bnore` match as
// their plain forms do. Unicode tag characters read as the ASCII they hide ("ASCII smuggling": a model
// reads them, a person sees nothing). A text is read in up to three ways (readings): invisible
// characters dropped (`ig\u200bnore`), or read as spaces (`ignore\u200bprevious`, two words to the
// model), and bare: diacritics and combining marks stripped (`forbidden\u0301word`) and Cyrillic, Greek
// and other letters drawn like a Latin one read as it (`раssword` with a Cyrillic `р` and `а`). Matches
// found in a reading are mapped back to the text as sent, so a redaction replaces exactly what the
// caller wrote. A pattern written in those scripts still matches in the other readings.

/** Tag characters U+E0020..U+E007E: each reads as the ASCII character 0xE0000 below it. */
const TAG_FIRST = 0xe0020;
const TAG_LAST = 0xe007e;
const isTag = (cp: number) => cp >= TAG_FIRST && cp <= TAG_LAST;
/**
 * Code points that render as nothing (or only steer rendering): a filter reads through them. Unicode's
 * format characters (Cf: soft hyphen, zero-width spaces and joiners, direction marks, tags) and
 * default-ignorables (variation selectors, Hangul fillers, Mongolian selectors, musical symbol and
 * shorthand formatting), the braille pattern blank, unpaired surrogates (Cs), which no font draws and a
 * tokenizer skips or replaces, and the control characters that are no kind of line or word break: not
 * tab, line feed, vertical tab, form feed, carriage return, the information separators U+001C..U+001F
 * or next line U+0085 (read as written, like the text around them: dropped, a NEL between two lines
 * would join them into one word).
 */
const INVISIBLE =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it looks for
  /[\p{Cf}\p{Default_Ignorable_Code_Point}\p{Cs}\u2800\u0000-\u0008\u000E-\u001B\u007F-\u0084\u0086-\u009F]/u;
/** Whether a run holds a character every reading changes (invisible, tags included). */
const hasHidden = (run: string) => INVISIBLE.test(run);
const MARKS = /\p{M}/gu;

/**
 * Letters of other scripts that common fonts draw exactly as a Latin letter (Unicode's confusables, the
 * single-letter cases between Latin and Cyrillic, Greek and Armenian, and Latin's own look-alikes): the
 * bare reading reads them as that letter.
 */
const LOOK_ALIKES: Record<string, string> = Object.fromEntries(
  [
    // Cyrillic
    "аa",
    "еe",
    "оo",
    "рp",
    "сc",
    "уy",
    "хx",
    "ѕs",
    "іi",
    "јj",
    "ԁd",
    "ԛq",
    "ԝw",
    "һh",
    "ӏl",
    "АA",
    "ВB",
    "ЕE",
    "КK",
    "МM",
    "НH",
    "ОO",
    "РP",
    "СC",
    "ТT",
    "ХX",
    "ЅS",
    "ІI",
    "ЈJ",
    "ҮY",
    "ԚQ",
    "ԜW",
    "ӀI",
    // Greek
    "οo",
    "αa",
    "νv",
    "ρp",
    "ιi",
    "κk",
    "ΑA",
    "ΒB",
    "ΕE",
    "ΖZ",
    "ΗH",
    "ΙI",
    "ΚK",
    "ΜM",
    "ΝN",
    "ΟO",
    "ΡP",
    "ΤT",
    "ΥY",
    "ΧX",
    // Armenian, Latin
    "օo",
    "սu",
    "ıi",
    "ɑa",
    "ɡg",
  ].map((pair) => [pair[0]!, pair[1]!]),
);
const hasLookAlike = (run: string) => {
  for (const ch of run) if (LOOK_ALIKES[ch] !== undefined) return true;
  return false;
};

/** How a reading takes invisible characters and marks (see the header). */
export type Reading = "drop" | "space" | "bare";

function foldedChar(ch: string, reading: Reading): string {
  const cp = ch.codePointAt(0)!;
  if (isTag(cp)) return String.fromCharCode(cp - 0xe0000);
  if (INVISIBLE.test(ch)) return reading === "space" ? " " : "";
  if (reading !== "bare") return ch.normalize("NFKC");
  const bare = ch.normalize("NFKD").replace(MARKS, "");
  return LOOK_ALIKES[bare] ?? bare;
}

/** Whether a run (with nothing hidden in it) reads as it is written. */
const plainRun = (run: string, reading: Reading) =>
  reading === "bare"
    ? run.normalize("NFKD").replace(MARKS, "") === run && !hasLookAlike(run)
    : run.normalize("NFKC") === run;
/**
 * Runs of what folding may change: any non-ASCII code unit, and ASCII's control characters but the
 * breaks (tab, line feed, vertical tab, form feed, carriage return, U+001C..U+001F: read as written).
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it looks for
const FOLDABLE_RUN = /[\u0000-\u0008\u000E-\u001B\u007F-\uFFFF]+/g;
/** Folding a character costs the scan budget as much as reading ten (see custom-pattern.ts). */
export const FOLD_UNITS_PER_CHAR = 1;

/** A character of the original (at `from`, `length` code units) that reads as `to` in the folded text. */
interface Change {
  /** Where its folded form starts in the folded text. */
  at: number;
  /** Its folded form's length (0 when dropped). */
  folded: number;
  from: number;
  length: number;
}

export interface Fold {
  text: string;
  /** In order; every character between two changes is the same in both texts. */
  changes: Change[];
}

/**
 * The folded text, or null when folding changes nothing (an ASCII text, or one already in NFKC with
 * nothing invisible): filters then read the text as sent.
 */
export function fold(text: string, reading: Reading = "drop"): Fold | null {
  FOLDABLE_RUN.lastIndex = 0;
  if (!FOLDABLE_RUN.test(text)) return null;
  const changes: Change[] = [];
  let out = "";
  let copied = 0;
  FOLDABLE_RUN.lastIndex = 0;
  for (const run of text.matchAll(FOLDABLE_RUN)) {
    const value = run[0];
    // A run already in its folded form (most non-Latin text) is kept whole.
    if (!hasHidden(value) && plainRun(value, reading)) continue;
    out += text.slice(copied, run.index);
    copied = run.index;
    for (const ch of value) {
      const to = foldedChar(ch, reading);
      if (to !== ch) changes.push({ at: out.length, folded: to.length, from: copied, length: ch.length });
      out += to;
      copied += ch.length;
    }
  }
  if (changes.length === 0) return null;
  return { text: out + text.slice(copied), changes };
}

/**
 * The ways filters read a text: the folded text (or null: the text as sent), then, when they differ from
 * it, the text with invisible characters read as spaces and the text without marks.
 */
export function readings(text: string): Array<Fold | null> {
  const dropped = fold(text);
  const first = dropped?.text ?? text;
  const out: Array<Fold | null> = [dropped];
  if (dropped?.changes.some((c) => c.folded === 0)) {
    const spaced = fold(text, "space");
    if (spaced && spaced.text !== first) out.push(spaced);
  }
  const bare = fold(text, "bare");
  if (bare && bare.text !== first) out.push(bare);
  return out;
}

/** The characters of the text as sent that the folded text's code unit `q` was read from. */
function sourceOf(f: Fold, q: number): [number, number] {
  // The last change that starts at or before q (a dropped character takes no room in the folded text).
  let lo = 0;
  let hi = f.changes.length - 1;
  let last = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (f.changes[mid]!.at <= q) {
      last = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  if (last < 0) return [q, q + 1];
  const c = f.changes[last]!;
  if (q < c.at + c.folded) return [c.from, c.from + c.length];
  const original = q + (c.from + c.length) - (c.at + c.folded);
  return [original, original + 1];
}

/** Spans found in the folded text, as spans of the text as sent (each covers the characters it read). */
export function unfoldSpans(f: Fold, spans: Array<[number, number]>): Array<[number, number]> {
  return spans.map(([start, end]) => [sourceOf(f, start)[0], sourceOf(f, Math.max(start, end - 1))[1]]);
}
