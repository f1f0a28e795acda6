// The ledger client keeps one IsolateBlocks per ledger and forgets it when idle. A request that waits
// (told to retry, or waiting behind calls in flight) must not keep using the state it looked up before
// waiting: if that state was forgotten meanwhile, a block granted to the request would live only in the
// forgotten copy, never admit anyone, never be closed or reported, and hold its room at the ledger
// until the unclaimed block is reclaimed (60 s). That was the multi-ingress shortfall of
// `npm run test:ingress` (docs/reliability.md).
import { describe, expect, it } from "vitest";
import { admitThrough, type Background, carrying, MAX_RETRY_WAIT_MS } from "../../src/billing/ledger-client";
import type { Bindings } from "../../src/env";
import { BLOCK_MS } from "../../src/ledger/blocks";
import type { AdmitCommand, AdmitReply, BlockReport, Carried } from "../../src/ledger/types";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A scripted ledger: the first admission is refused with "retry" (another isolate's block may hold
 * room); while the refused request waits, another call of this isolate completes (which forgets the
 * idle state); the next admission is granted a block.
 */
function scriptedLedger() {
  const admits: AdmitCommand[][] = [];
  const reports: BlockReport[] = [];
  let grants = 0;
  const stub = {
    admit: async (
      _account: string,
      cmds: AdmitCommand[],
      carried: Carried,
      want?: { blockId: string; sizeMicros: number },
    ): Promise<AdmitReply> => {
      admits.push(cmds);
      reports.push(...carried.reports);
      if (admits.length === 1) {
        const rejection = {
          status: 402 as const,
          reason: "key_cap" as const,
          message: "limit",
          metadata: { reason: "key_cap" },
        };
        return { outcomes: cmds.map(() => ({ ok: false, rejection, retryAt: Date.now() + 20 })) };
      }
      const outcomes = cmds.map((c) => ({ ok: true as const, reservedMicros: c.worstCaseMicros }));
      if (!want) return { outcomes };
      grants++;
      return { outcomes, block: { blockId: want.blockId, sizeMicros: cmds[0]!.worstCaseMicros * 10 } };
    },
    settleAndReport: async (carried: Carried) => {
      reports.push(...carried.reports);
    },
    block: async () => [],
    status: async () => ({}),
  };
  const namespace = {
    idFromName: (name: string) => ({ toString: () => `scripted:${name}` }),
    get: () => stub,
  };
  return {
    env: { LEDGER: namespace } as unknown as Bindings,
    admits,
    reports,
    grants: () => grants,
  };
}

const command = (keyHash: string): AdmitCommand => ({
  generationId: crypto.randomUUID(),
  keyHash,
  cap: { limitMicros: 10_000, reset: null, includeByok: false },
  budgets: [],
  worstCaseMicros: 100,
  byok: false,
  freeModel: false,
});

describe("isolate state forgotten while a request waits", () => {
  it("a block granted after a retry wait is the isolate's: it admits locally, then closes and reports", async () => {
    const ledger = scriptedLedger();
    const accountId = `acct_${crypto.randomUUID()}`;
    const keyHash = `key_${crypto.randomUUID()}`;
    const pending: Promise<unknown>[] = [];
    const background: Background = { waitUntil: (p) => void pending.push(p) };

    const first = admitThrough(ledger.env, accountId, command(keyHash), background);
    // Once the first answer (retry) is in, another call of this isolate (a usage read) completes
    // while the request waits: the isolate's state for this ledger is idle and is forgotten.
    while (ledger.admits.length < 1) await sleep(1);
    await sleep(2);
    await carrying(ledger.env, accountId, async () => undefined);
    const outcome = await first;
    expect(ledger.admits).toHaveLength(2);
    expect(ledger.grants()).toBe(1);
    expect(outcome).toMatchObject({ ok: true });
    const blockId = (outcome as { blockId?: string }).blockId;
    expect(blockId).toBeDefined();

    // The block is this isolate's: the next request like it is admitted against it, with no call.
    const second = await admitThrough(ledger.env, accountId, command(keyHash), background);
    expect(second).toMatchObject({ ok: true, blockId });
    expect(ledger.admits).toHaveLength(2);

    // When its time ends it is closed and its closing report reaches the ledger.
    await sleep(BLOCK_MS + 50);
    await Promise.all(pending);
    const closing = ledger.reports.filter((r) => r.blockId === blockId && r.closed);
    expect(closing.length).toBeGreaterThan(0);
    expect(closing.at(-1)).toMatchObject({ holding: 200, chargedCredits: 0 });
  });
});

describe("a request that waited before it was told to retry", () => {
  it("keeps asking for MAX_RETRY_WAIT_MS from the first retry, not from its start", async () => {
    // Its first call (queued behind a burst, say) answers only after most of MAX_RETRY_WAIT_MS; the
    // room comes back 300 ms past MAX_RETRY_WAIT_MS from the start (another isolate's block closed).
    const started = Date.now();
    const roomBackAt = started + MAX_RETRY_WAIT_MS + 300;
    let calls = 0;
    const rejection = {
      status: 402 as const,
      reason: "key_cap" as const,
      message: "limit",
      metadata: { reason: "key_cap" },
    };
    const stub = {
      admit: async (_account: string, cmds: AdmitCommand[]): Promise<AdmitReply> => {
        if (++calls === 1) await sleep(MAX_RETRY_WAIT_MS - 200);
        const outcomes = cmds.map(() =>
          Date.now() >= roomBackAt
            ? { ok: true as const, reservedMicros: 100 }
            : { ok: false as const, rejection, retryAt: roomBackAt },
        );
        return { outcomes };
      },
      settleAndReport: async () => undefined,
    };
    const namespace = {
      idFromName: (name: string) => ({ toString: () => `waited:${name}` }),
      get: () => stub,
    };
    const env = { LEDGER: namespace } as unknown as Bindings;
    const outcome = await admitThrough(env, `acct_${crypto.randomUUID()}`, command("k"));
    expect(outcome).toMatchObject({ ok: true, reservedMicros: 100 });
    expect(Date.now()).toBeGreaterThanOrEqual(roomBackAt);
    expect(calls).toBeGreaterThan(2);
  }, 15_000);
});

describe("a ledger of the previous version (during a deploy)", () => {
  it("answers a renewal in its old shape (null): taken as nothing granted, and renewal is asked again", async () => {
    let blockCalls = 0;
    const stub = {
      admit: async (
        _account: string,
        cmds: AdmitCommand[],
        _carried: Carried,
        want?: { blockId: string },
      ) => ({
        outcomes: cmds.map((c) => ({ ok: true as const, reservedMicros: c.worstCaseMicros })),
        ...(want ? { block: { blockId: want.blockId, sizeMicros: 1_000 } } : {}),
      }),
      // The old Ledger.block(accountId, template, carried, want) answered one grant or null.
      block: async () => {
        blockCalls++;
        return null;
      },
      settleAndReport: async () => undefined,
    };
    const namespace = {
      idFromName: (name: string) => ({ toString: () => `mixed:${name}` }),
      get: () => stub,
    };
    const env = { LEDGER: namespace } as unknown as Bindings;
    const accountId = `acct_${crypto.randomUUID()}`;
    const pending: Promise<unknown>[] = [];
    const background: Background = { waitUntil: (p) => void pending.push(p) };
    const admitted = () => admitThrough(env, accountId, command("k"), background);

    // The block holds 10 requests of 100; past half its room each admission asks for the next.
    for (let i = 0; i < 6; i++) expect(await admitted()).toMatchObject({ ok: true });
    while (blockCalls < 1) await sleep(1);
    await sleep(5);
    expect(await admitted()).toMatchObject({ ok: true });
    const until = Date.now() + 2_000;
    while (blockCalls < 2 && Date.now() < until) await sleep(5);
    expect(blockCalls).toBe(2);
  });
});
