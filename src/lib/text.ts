// Counting text as people (and per-character price lists) count it.

/**
 * Characters as Unicode code points: an emoji or a mathematical letter outside the Basic Multilingual
 * Plane is one character, where `String.length` counts its two UTF-16 units.
 */
export function characterCount(text: string): number {
  let pairs = 0;
  for (let i = 0; i < text.length - 1; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        pairs++;
        i++;
      }
    }
  }
  return text.length - pairs;
}
