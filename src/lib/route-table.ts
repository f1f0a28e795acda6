// Knows which method+path pairs the app serves, so unknown paths get 404 and wrong methods 405 before auth.

interface Entry {
  method: string;
  pattern: RegExp;
}

/** Paths remembered with their methods; past this many the memory starts over (ids make paths unbounded). */
const REMEMBERED_PATHS = 512;

export class RouteTable {
  private entries: Entry[] | null = null;
  /** The answer per path: the same few inference paths take most traffic, and the scan tests every route. */
  private readonly known = new Map<string, readonly string[]>();

  constructor(private readonly source: () => ReadonlyArray<{ method: string; path: string }>) {}

  private table(): Entry[] {
    if (!this.entries) {
      this.entries = this.source()
        .filter((r) => r.method !== "ALL")
        .map((r) => ({
          method: r.method.toUpperCase(),
          pattern: new RegExp(
            `^${r.path
              .replace(/[.+?^${}()|[\]\\]/g, "\\$&")
              .replace(/\/:[^/]+/g, "/[^/]+")
              .replace(/\*/g, ".*")}$`,
          ),
        }));
    }
    return this.entries;
  }

  /** The methods served at this path; empty when the path is unknown. */
  methodsFor(path: string): readonly string[] {
    const known = this.known.get(path);
    if (known) return known;
    if (this.known.size >= REMEMBERED_PATHS) this.known.clear();
    const methods = new Set(
      this.table()
        .filter((e) => e.pattern.test(path))
        .map((e) => e.method),
    );
    if (methods.has("GET")) methods.add("HEAD");
    const found = [...methods];
    this.known.set(path, found);
    return found;
  }
}
