// Declares the fuzz tests of one area of the API: a fixture, the network cut, one test per operation.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createFixture, type Fixture } from "./fixture";
import { loadDocument, type Operation, operationName, operationsOf, resolver } from "./openapi";
import { cutTheNetwork, fuzzOperation, fuzzRuns, reportLine } from "./runner";

export type Area = "keys" | "guardrails" | "presets-byok" | "inference" | "videos";

/** Each operation belongs to exactly one test file, so the files can run side by side. */
export function areaOf(op: Pick<Operation, "method" | "path">): Area {
  const p = op.path;
  if (p === "/key" || p.startsWith("/keys") || p === "/credits" || p.startsWith("/workspaces")) return "keys";
  // Catalog discovery and the account's analytics read what the keys area's fixture already holds.
  if (
    p === "/models" ||
    p.startsWith("/models/") ||
    p.startsWith("/model/") ||
    p === "/providers" ||
    p === "/activity"
  )
    return "keys";
  // The API's own index, its document and its reference page: public, no input beyond the method.
  if (p === "" || p === "/openapi.json" || p === "/docs") return "keys";
  if (p.startsWith("/guardrails")) return "guardrails";
  if (p.startsWith("/presets") || p.startsWith("/byok")) return "presets-byok";
  if (
    ["/chat", "/responses", "/messages", "/embeddings", "/audio", "/generation"].some((prefix) =>
      p.startsWith(prefix),
    )
  )
    return "inference";
  if (p.startsWith("/videos")) return "videos";
  throw new Error(`no fuzz area for ${operationName(op)}: add it to test/fuzz/suite.ts`);
}

/** The document's operations are read at collection time, so each becomes its own named test. */
const doc = await loadDocument();
const operations = operationsOf(doc);

export function fuzzArea(area: Area) {
  describe(`fuzz: ${area}`, () => {
    let fx: Fixture;
    let network: ReturnType<typeof cutTheNetwork>;
    beforeAll(async () => {
      network = cutTheNetwork();
      fx = await createFixture();
    }, 120_000);
    afterAll(() => network.restore());

    it("every operation of the document belongs to a fuzz area", () => {
      expect(operations.length).toBeGreaterThan(30);
      for (const op of operations) expect(() => areaOf(op)).not.toThrow();
    });

    for (const op of operations.filter((o) => areaOf(o) === area)) {
      it(operationName(op), { timeout: 120_000 + fuzzRuns() * 500 }, async () => {
        const report = await fuzzOperation(op, fx, resolver(doc), network.state, operations);
        console.log(reportLine(op, report));
        // Every status the operation answered is one its document lists (lib/openapi-responses.ts).
        expect([...report.undocumented], "statuses not in the document").toEqual([]);
      });
    }
  });
}
