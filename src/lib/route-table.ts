// Knows which method+path pairs the app serves, so unknown paths get 404 and wrong methods 405 before auth.

interface Entry {
  method: string;
  pattern: RegExp;
}

export class RouteTable {
  private entries: Entry[] | null = null;

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
              .replace(/\*/g, ".*")}/?$`,
          ),
        }));
    }
    return this.entries;
  }

  /** The methods served at this path; empty when the path is unknown. */
  methodsFor(path: string): string[] {
    const methods = new Set(
      this.table()
        .filter((e) => e.pattern.test(path))
        .map((e) => e.method),
    );
    if (methods.has("GET")) methods.add("HEAD");
    return [...methods];
  }
}
