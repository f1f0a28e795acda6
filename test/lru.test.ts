// The LRU cache keeps recently used entries and evicts the least recently used one when full.
import { describe, expect, it } from "vitest";
import { LruCache } from "../src/lib/lru";

describe("LruCache", () => {
  it("evicts the least recently used entry, not everything, when full", () => {
    const cache = new LruCache<string, number>(3);
    cache.set("a", 1);
    cache.set("b", 2);
    cache.set("c", 3);
    expect(cache.get("a")).toBe(1); // "b" is now the oldest
    cache.set("d", 4);
    expect(cache.size).toBe(3);
    expect(cache.get("b")).toBeUndefined();
    expect([cache.get("a"), cache.get("c"), cache.get("d")]).toEqual([1, 3, 4]);
  });

  it("refreshes an entry's recency and value when it is set again", () => {
    const cache = new LruCache<string, number>(2);
    cache.set("a", 1);
    cache.set("b", 2);
    cache.set("a", 10);
    cache.set("c", 3);
    expect(cache.get("a")).toBe(10);
    expect(cache.get("b")).toBeUndefined();
  });

  it("keeps a key in use through a flood of one-off keys larger than the cache", () => {
    const cache = new LruCache<string, string>(10_000);
    cache.set("valid", "record");
    for (let i = 0; i < 25_000; i++) {
      cache.set(`bad-${i}`, "none");
      if (i % 1000 === 0) expect(cache.get("valid")).toBe("record");
    }
    expect(cache.get("valid")).toBe("record");
    expect(cache.size).toBe(10_000);
  });

  it("caches null values and supports delete and clear", () => {
    const cache = new LruCache<string, string | null>(2);
    cache.set("miss", null);
    expect(cache.get("miss")).toBeNull();
    expect(cache.delete("miss")).toBe(true);
    expect(cache.get("miss")).toBeUndefined();
    cache.set("x", "1");
    cache.clear();
    expect(cache.size).toBe(0);
  });

  it("rejects a size that is not a positive integer", () => {
    expect(() => new LruCache(0)).toThrow(RangeError);
    expect(() => new LruCache(1.5)).toThrow(RangeError);
  });
});
