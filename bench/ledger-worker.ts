// Bench worker: the same request shape with the ledger on (admit, mock upstream, settle) or off (mock upstream only).

import { DurableObject } from "cloudflare:workers";
import app from "../src/app";
import { admit, settleInBackground } from "../src/billing/admission";
import type { AuthContext } from "../src/db/auth-records";
import type { Bindings } from "../src/env";
import { effectivePolicy } from "../src/guardrails/policy";
import { LEASE_MS } from "../src/ledger/core";

export { Ledger } from "../src/ledger/object";
export { VideoJob } from "../src/videos/job";

/** Simulated upstream latency: real inference takes at least this long. */
const UPSTREAM_MS = 5;

import { COST_MICROS } from "./constants";

const WORST_CASE_MICROS = 20;

function benchAuth(accountId: string, keyHash: string): AuthContext {
  const now = new Date().toISOString();
  return {
    key: {
      hash: keyHash,
      accountId,
      workspaceId: "bench-ws",
      name: "bench",
      label: "sk-gw-v1-ben...ch0",
      isManagement: false,
      isProvisioning: false,
      isFreeTier: false,
      disabled: false,
      expiresAt: null,
      limitMicros: null,
      limitReset: null,
      includeByokInLimit: false,
      allowedDataRegions: ["global"],
      creatorUserId: null,
      externalUser: null,
      createdAt: now,
      updatedAt: now,
    },
    account: {
      id: accountId,
      name: "bench",
      defaultWorkspaceId: null,
      exemptFreeLimits: false,
      createdAt: now,
    },
    workspace: null,
    guardrails: [],
    policy: effectivePolicy([]),
  };
}

/**
 * The ledger switched off for the gateway-path benchmark: admission always admits and settlement
 * records nothing, with no Durable Object call; everything else on the request path is the real one.
 */
const noLedger = {
  idFromName: (name: string) => name,
  get: () => ({
    admit: async (_account: string, cmds: Admitted) => ({ outcomes: admitAll(cmds) }),
    settleAndReport: async () => {},
  }),
} as unknown as Bindings["LEDGER"];

type Admitted = Array<{ worstCaseMicros: number }>;
/** Every admission admitted, its worst case "reserved" (nothing is stored). */
const admitAll = (cmds: Admitted) =>
  cmds.map((cmd) => ({ ok: true as const, reservedMicros: cmd.worstCaseMicros }));

/**
 * The floor of any design with one object call per admission: a Durable Object that answers every
 * call at once and stores nothing. `/gateway/empty` runs the real gateway path and the real ledger
 * client (batching, settlements riding along) against it, so "on" / "empty" is the ledger's own
 * cost and "empty" / "off" the cost of the object calls alone on this machine.
 */
export class EmptyLedger extends DurableObject {
  async admit(_account: string, cmds: Admitted) {
    return { outcomes: admitAll(cmds) };
  }
  async settleAndReport(): Promise<void> {}
}

const upstream = () => new Promise((resolve) => setTimeout(resolve, UPSTREAM_MS));

export default {
  async fetch(request: Request, env: Bindings, ctx: ExecutionContext): Promise<Response> {
    const url = new URL(request.url);
    const accountId = url.searchParams.get("account") ?? "bench";
    if (url.pathname === "/status") {
      const ledger = env.LEDGER.get(env.LEDGER.idFromName(accountId));
      return Response.json(await ledger.status(accountId, ["bench-key"]));
    }
    if (url.pathname.startsWith("/gateway/")) {
      // The real gateway path (POST /api/v1/embeddings), with the ledger on or replaced by noLedger.
      const inner = new Request("http://bench.local/api/v1/embeddings", request);
      // Abuse protection is off in every mode: the benchmark's own load would trip it.
      const base = { ...env, ABUSE_LIMITER: undefined };
      const empty = (env as { EMPTY_LEDGER?: Bindings["LEDGER"] }).EMPTY_LEDGER;
      const ledger = { "/gateway/on": env.LEDGER, "/gateway/off": noLedger, "/gateway/empty": empty }[
        url.pathname
      ];
      if (!ledger) return new Response(`no ledger for ${url.pathname}`, { status: 404 });
      return app.fetch(inner, { ...base, LEDGER: ledger }, ctx);
    }
    if (url.pathname === "/off") {
      await upstream();
      return Response.json({ ok: true });
    }
    const reservation = await admit(
      env,
      benchAuth(accountId, "bench-key"),
      {
        generationId: crypto.randomUUID(),
        model: "bench/model",
        isFreeModel: false,
        worstCaseMicros: WORST_CASE_MICROS,
        byok: false,
        exemptFromFreeLimits: false,
        leaseMs: LEASE_MS,
      },
      ctx,
    );
    await upstream();
    ctx.waitUntil(settleInBackground(env, reservation, { actualMicros: COST_MICROS, isByok: false }));
    return Response.json({ ok: true });
  },
};
