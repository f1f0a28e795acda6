// The Anthropic headers a Messages client sends, as passed to Anthropic upstreams.
import { describe, expect, it } from "vitest";
import { anthropicHeadersOf } from "../src/lib/anthropic-headers";

const headers = (h: Record<string, string>) => (name: string) => h[name];

describe("anthropicHeadersOf", () => {
  it("keeps a dated version only, and each beta flag once, in order, across both headers", () => {
    expect(
      anthropicHeadersOf(
        headers({
          "anthropic-version": " 2023-06-01 ",
          "anthropic-beta": "a, b,,a",
          "x-anthropic-beta": "b,c",
        }),
      ),
    ).toEqual({ version: "2023-06-01", beta: "a,b,c" });
    expect(anthropicHeadersOf(headers({ "anthropic-version": "latest", "anthropic-beta": " , " }))).toEqual(
      {},
    );
  });

  it("cuts at whole flags within 2,048 characters, however many flags the headers carry", () => {
    // Two headers of 30,000 distinct flags each (about 400 KB): pairwise deduplication before the cut
    // took seconds of the isolate's CPU for this; the flags past the budget are not even compared.
    const flags = (p: string) => Array.from({ length: 30_000 }, (_, i) => `${p}${i}`).join(",");
    const { beta } = anthropicHeadersOf(
      headers({ "anthropic-beta": flags("f"), "x-anthropic-beta": flags("g") }),
    );
    expect(beta!.length).toBeLessThanOrEqual(2_048);
    const kept = beta!.split(",");
    expect(kept.slice(0, 3)).toEqual(["f0", "f1", "f2"]);
    // No flag was cut in half: the last one kept is whole, and the next one would not have fit.
    expect(kept.at(-1)).toBe(`f${kept.length - 1}`);
    expect(beta!.length + `,f${kept.length}`.length).toBeGreaterThan(2_048);
  });
});
