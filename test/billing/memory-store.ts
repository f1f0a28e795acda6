// An in-memory LedgerStore for the pure accounting core's model tests (no runtime needed).

import type { Bucket, Meter } from "../../src/ledger/meter";
import type {
  AccountState,
  BlockRecord,
  FreeCounters,
  LedgerStore,
  ReservationRecord,
  SettledRecord,
} from "../../src/ledger/types";

export class MemoryLedgerStore implements LedgerStore {
  private acct: AccountState = { purchased: 0, purchasedReadAt: 0, spent: 0, reserved: 0 };
  private readonly meters = new Map<string, Meter>();
  private readonly reservations = new Map<string, ReservationRecord>();
  private readonly settledIds = new Map<string, SettledRecord>();
  private readonly blocks = new Map<string, BlockRecord>();
  private counters: FreeCounters = { minuteStart: 0, minuteUsed: 0, dayStart: 0, dayUsed: 0 };

  account = () => ({ ...this.acct });
  putAccount = (a: AccountState) => {
    this.acct = { ...a };
  };
  meter = (scope: string, bucket: Bucket) => {
    const m = this.meters.get(`${scope}|${bucket}`);
    return m && { ...m };
  };
  putMeter = (scope: string, bucket: Bucket, m: Meter) => {
    this.meters.set(`${scope}|${bucket}`, { ...m });
  };
  reservation = (id: string) => this.reservations.get(id);
  putReservation = (r: ReservationRecord) => {
    this.reservations.set(r.generationId, r);
  };
  deleteReservation = (id: string) => {
    this.reservations.delete(id);
  };
  expiredReservations = (now: number) => [...this.reservations.values()].filter((r) => r.expiresAt <= now);
  nextExpiry = () => {
    const all = [...this.reservations.values()].map((r) => r.expiresAt);
    return all.length ? Math.min(...all) : null;
  };
  settled = (id: string) => this.settledIds.get(id);
  putSettled = (r: SettledRecord) => {
    this.settledIds.set(r.generationId, r);
  };
  pruneSettled = (before: number) => {
    for (const [id, r] of this.settledIds) if (r.at < before) this.settledIds.delete(id);
  };
  block = (id: string) => {
    const b = this.blocks.get(id);
    return b && { ...b };
  };
  putBlock = (b: BlockRecord) => {
    this.blocks.set(b.blockId, { ...b });
  };
  openBlocks = (now: number) => [...this.blocks.values()].filter((b) => !b.closed && b.openUntil > now);
  pruneBlocks = (doneBefore: number, before: number) => {
    for (const [id, b] of this.blocks) {
      if ((b.closed && b.holding === 0 && b.at < doneBefore) || b.at < before) this.blocks.delete(id);
    }
  };
  free = () => ({ ...this.counters });
  putFree = (f: FreeCounters) => {
    this.counters = { ...f };
  };
}
