// An isolate's side of blocks (see blocks.ts): the blocks it holds from one ledger, requests admitted
// and settled against them locally, and the reports owed to the ledger. Plain data only: every
// request of the isolate uses it, and none may await another's I/O.

import { BLOCK_MS, BLOCK_REQUESTS } from "../ledger/blocks";
import { LEASE_MS } from "../ledger/core";
import type {
  AdmitCommand,
  AdmitOutcome,
  BlockAsk,
  BlockGrant,
  BlockReport,
  BlockWant,
  SettleCommand,
} from "../ledger/types";

interface Held {
  id: string;
  signature: string;
  /** The request the block was granted for: its next block is asked for like it. */
  template: AdmitCommand;
  size: number;
  chargedCredits: number;
  chargedByok: number;
  holding: number;
  closed: boolean;
  /** This isolate admits against it until then (BLOCK_MS after the call that got it was sent). */
  openUntil: number;
  /** Rises with every change; `sent` and `acked` say which change the ledger was sent and has. */
  seq: number;
  sent: number;
  acked: number;
}

/**
 * Requests a block may carry: paid from credits, not gated by the free-model limits, with the usual
 * lease (video jobs, which hold for hours, go to the ledger).
 */
export function blockable(cmd: AdmitCommand): boolean {
  return !cmd.byok && !cmd.freeModel && (cmd.leaseMs == null || cmd.leaseMs <= LEASE_MS);
}

/** A block serves requests of one key under the same cap and budgets it was reserved against. */
const signatureOf = (cmd: AdmitCommand) => JSON.stringify([cmd.keyHash, cmd.cap, cmd.budgets, cmd.authority]);
const free = (b: Held) => b.size - b.chargedCredits - b.holding;
/** Whether an open block has used `spent` of its time, or half its room. */
const due = (b: Held, now: number, spent: number) =>
  now >= b.openUntil - BLOCK_MS + spent || free(b) < b.size / 2;

export class IsolateBlocks {
  private readonly blocks = new Map<string, Held>();
  /** The block open for admissions, by signature. */
  private readonly open = new Map<string, Held>();
  /** Requests held in a block here, by generation id. */
  private readonly holds = new Map<string, { block: Held; amount: number }>();
  /** Signatures with a call asking for a block in flight (one at a time). */
  private readonly wanting = new Set<string>();
  /** Signatures whose last ask for a block was refused (room is short, or the ledger grants none). */
  private readonly refused = new Set<string>();
  /** A request waits to send the blocks' reports if nothing carries them (one at a time). */
  private flushing = false;

  /** Admits `cmd` against the open block for its limits if it fits; undefined: ask the ledger. */
  admit(cmd: AdmitCommand, now: number): AdmitOutcome | undefined {
    const held = this.holds.get(cmd.generationId);
    if (held) return { ok: true, reservedMicros: held.amount, blockId: held.block.id };
    if (!blockable(cmd)) return undefined;
    const b = this.open.get(signatureOf(cmd));
    if (!b || now >= b.openUntil || free(b) < cmd.worstCaseMicros) return undefined;
    b.holding += cmd.worstCaseMicros;
    b.seq++;
    this.holds.set(cmd.generationId, { block: b, amount: cmd.worstCaseMicros });
    return { ok: true, reservedMicros: cmd.worstCaseMicros, blockId: b.id };
  }

  /**
   * No more admissions against this isolate's open blocks: their unused rest goes back with the next
   * call, so the ledger decides on the real room (all of them: the balance is shared by every key of
   * the account). Done when the ledger answered "retry" while one of them was open. Whether any was.
   */
  closeOpen(): boolean {
    const any = this.open.size > 0;
    for (const b of this.open.values()) this.close(b);
    return any;
  }

  /**
   * Whether a block for requests like `cmd` is being asked for and the last ask was not refused:
   * it is likely to come at once, so requests meanwhile go straight to the ledger rather than queue.
   */
  coming(cmd: AdmitCommand): boolean {
    const signature = signatureOf(cmd);
    return blockable(cmd) && this.wanting.has(signature) && !this.refused.has(signature);
  }

  /** A block to ask for with the call admitting `cmd`, unless it may use none or an ask is in flight. */
  want(cmd: AdmitCommand): BlockWant | undefined {
    const signature = signatureOf(cmd);
    if (!blockable(cmd) || cmd.worstCaseMicros <= 0 || this.wanting.has(signature)) return undefined;
    this.wanting.add(signature);
    return { blockId: crypto.randomUUID(), sizeMicros: cmd.worstCaseMicros * BLOCK_REQUESTS };
  }

  /**
   * The blocks to ask for ahead of time, after `cmd` was admitted against the open one: none until
   * that one has used half its time or half its room (so requests never wait for the next one); then
   * its next block, and in the same call the next block of every other open block here (other keys',
   * or other limits') that admitted a request and has used a quarter of its time or half its room.
   * One call renews them all, and blocks renewed together stay in step: each renewing on its own, an
   * account's 8 keys at a few requests a second each made about one ledger call every two requests.
   */
  renewals(cmd: AdmitCommand, now: number): BlockAsk[] {
    const own = this.open.get(signatureOf(cmd));
    if (!own || !due(own, now, BLOCK_MS / 2)) return [];
    const first = this.want(cmd);
    if (!first) return [];
    const asks: BlockAsk[] = [{ template: cmd, want: first }];
    for (const b of this.open.values()) {
      // Only in time and in use: an idle key's block is left to end.
      if (b === own || now >= b.openUntil || (b.seq === 0 && b.holding === 0) || !due(b, now, BLOCK_MS / 4))
        continue;
      const want = this.want(b.template);
      if (want) asks.push({ template: b.template, want });
    }
    return asks;
  }

  /**
   * The answer to a call that asked (no grant if refused or failed). The block replaces the open one
   * for the same limits; `holdsAsker`: the asking request was admitted into it.
   */
  answered(cmd: AdmitCommand, grant: BlockGrant | undefined, sentAt: number, holdsAsker: boolean): void {
    const signature = signatureOf(cmd);
    this.wanting.delete(signature);
    if (!grant) {
      this.refused.add(signature);
      return;
    }
    this.refused.delete(signature);
    const previous = this.open.get(signature);
    if (previous) this.close(previous);
    // What the ledger recorded at the grant is report 0, already acked.
    const held = holdsAsker ? cmd.worstCaseMicros : 0;
    const b: Held = {
      id: grant.blockId,
      signature,
      template: cmd,
      size: grant.sizeMicros,
      chargedCredits: 0,
      chargedByok: 0,
      holding: held,
      closed: false,
      openUntil: sentAt + BLOCK_MS,
      seq: 0,
      sent: 0,
      acked: 0,
    };
    this.blocks.set(b.id, b);
    this.open.set(signature, b);
    if (holdsAsker) this.holds.set(cmd.generationId, { block: b, amount: held });
  }

  /** Settles a request held here (idempotent); undefined if it was not held in a block here. */
  settle(cmd: SettleCommand): { blockId: string } | undefined {
    const held = this.holds.get(cmd.generationId);
    if (!held) return undefined;
    this.holds.delete(cmd.generationId);
    const b = held.block;
    b.holding -= held.amount;
    if (cmd.byok) b.chargedByok += cmd.actualMicros;
    else b.chargedCredits += cmd.actualMicros;
    b.seq++;
    return { blockId: b.id };
  }

  /** When the block stops admitting here (null if it is not open). */
  openUntil(blockId: string): number | null {
    const b = this.blocks.get(blockId);
    return b && !b.closed ? b.openUntil : null;
  }

  /** Closes blocks whose open time ended (all of them with `all`, e.g. before a usage read). */
  closeExpired(now: number, all = false): void {
    for (const b of this.open.values()) if (all || now >= b.openUntil) this.close(b);
  }

  /** Reports of every block changed since its last report was sent; they count as sent. */
  take(): BlockReport[] {
    const reports: BlockReport[] = [];
    for (const b of this.blocks.values()) {
      if (b.seq <= b.sent) continue;
      reports.push({
        blockId: b.id,
        seq: b.seq,
        chargedCredits: b.chargedCredits,
        chargedByok: b.chargedByok,
        holding: b.holding,
        closed: b.closed,
      });
      b.sent = b.seq;
    }
    return reports;
  }

  /** The ledger has these reports: a closed block with nothing held and all reported is done. */
  delivered(reports: BlockReport[]): void {
    for (const r of reports) {
      const b = this.blocks.get(r.blockId);
      if (!b) continue;
      b.acked = Math.max(b.acked, r.seq);
      if (b.closed && b.holding === 0 && b.acked === b.seq) this.blocks.delete(b.id);
    }
  }

  /** These reports were lost with their call: the next call carries the block's latest state. */
  lost(reports: BlockReport[]): void {
    for (const r of reports) {
      const b = this.blocks.get(r.blockId);
      if (b) b.sent = b.acked;
    }
  }

  /**
   * Whether the caller should be the one to send the blocks' reports later if nothing carries them;
   * false while another request already waits to (one such timer per ledger, however many keys).
   */
  claimFlush(): boolean {
    if (this.flushing) return false;
    this.flushing = true;
    return true;
  }

  /** The waiting is over: whether any block has changes the ledger was not sent. */
  releaseFlush(): boolean {
    this.flushing = false;
    for (const b of this.blocks.values()) if (b.sent < b.seq) return true;
    return false;
  }

  /** Nothing held, open, owed or asked for: the isolate may forget this ledger's state. */
  idle(): boolean {
    return this.blocks.size === 0 && this.wanting.size === 0 && !this.flushing;
  }

  private close(b: Held): void {
    b.closed = true;
    b.seq++;
    if (this.open.get(b.signature) === b) this.open.delete(b.signature);
  }
}
