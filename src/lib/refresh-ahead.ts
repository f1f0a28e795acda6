// Isolate caches read again ahead of their end: the request that finds a copy near its end goes on
// with it and reads the next one in its background, so a cache in steady use never makes a request
// wait on D1, and no copy older than the cache's lifetime is used.
import { errorText, log } from "./log";

/** Work that outlives the response (`ctx.waitUntil`). */
export interface Background {
  waitUntil(promise: Promise<unknown>): void;
}

export class RefreshAhead<K> {
  /** Keys whose read is under way in some request's background. */
  private readonly reading = new Set<K>();
  /** Bumped by `invalidate`: a read that started before it does not store its (older) answer. */
  private epoch = 0;

  /** `aheadMs`: how long before its end a copy is read again. */
  constructor(
    private readonly aheadMs: number,
    private readonly what: string,
  ) {}

  /**
   * Starts `read` in `background` when the copy of `key` that ends at `expires` has less than
   * `aheadMs` left and no read of it is under way; `read` gets `current()`, which says whether the
   * cache was not invalidated since the read began (store the answer only then).
   */
  check(
    key: K,
    expires: number,
    now: number,
    background: Background | undefined,
    read: (current: () => boolean) => Promise<unknown>,
  ): void {
    if (!background || expires - now >= this.aheadMs || this.reading.has(key)) return;
    this.reading.add(key);
    const from = this.epoch;
    background.waitUntil(
      read(() => this.epoch === from)
        .catch((err: unknown) =>
          log("warn", { message: `${this.what} refresh failed`, error: errorText(err) }),
        )
        .finally(() => this.reading.delete(key)),
    );
  }

  /** For a read on the request path: whether the cache is still not invalidated since it began. */
  guard(): () => boolean {
    const from = this.epoch;
    return () => this.epoch === from;
  }

  invalidate(): void {
    this.epoch++;
  }
}
