// The video job Durable Object: one per job, driving submit -> poll -> finish and the webhook with alarms.
import { DurableObject } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { settle } from "../billing/admission";
import { getDb, tables } from "../db/client";
import type { Bindings } from "../env";
import { runAttempts } from "../inference/attempts";
import { credentialResolver, currentWorkspaceByok } from "../inference/context";
import { errorText, log } from "../lib/log";
import { redactSecrets } from "../lib/redact";
import { toUpstreamError, withoutSecrets } from "../providers/errors";
import type { VideoPollResult } from "../providers/types";
import { usableBy } from "../routing/byok";
import { TERMINAL_STATUSES, type VideoStatus } from "../schemas/videos";
import { attemptDelivery, mayRetry, retryDelayMs } from "../webhooks/delivery";
import { newWebhookId } from "../webhooks/signing";
import { MAX_POLL_ERRORS, pollDelayMs, type VideoJobState, videoCostMicros } from "./state";
import { jobToWire, recordJobGeneration, syncJob } from "./store";
import { attemptsFor, connect, UPSTREAM_CALL_MS, videoAdapterOf } from "./upstream";

const KEY = "job";
/** When a step fails unexpectedly (D1 or ledger unavailable), try again this soon. */
const STEP_RETRY_MS = 5_000;
/**
 * The first step (submission upstream) runs this long after the POST. Nothing is lost (jobs take
 * minutes), and a just-accepted job is reliably `pending` for a moment, which tests rely on.
 */
const START_DELAY_MS = 1_000;

export type CancelOutcome = { ok: true } | { ok: false; status: VideoStatus };

/** What GET /videos/{id}/content needs to reach the provider that made the video. */
export interface ContentTarget {
  workspaceId: string;
  region: string;
  current: NonNullable<VideoJobState["current"]>;
}

declare module "../env" {
  interface Bindings {
    VIDEO_JOBS: DurableObjectNamespace<VideoJob>;
  }
}

export class VideoJob extends DurableObject<Bindings> {
  private async load(): Promise<VideoJobState | undefined> {
    return this.ctx.storage.get<VideoJobState>(KEY);
  }

  private async save(s: VideoJobState): Promise<void> {
    await this.ctx.storage.put(KEY, s);
  }

  /** Stores the accepted job and schedules its first step. Idempotent: a second start is ignored. */
  async start(initial: VideoJobState): Promise<void> {
    if (await this.load()) return;
    await this.save(initial);
    await this.ctx.storage.setAlarm(Date.now() + START_DELAY_MS);
  }

  /** The full record, for tests and diagnostics (not serialisable over RPC: call it inside the object). */
  async snapshot(): Promise<VideoJobState | undefined> {
    return this.load();
  }

  async contentTarget(): Promise<ContentTarget | null> {
    const s = await this.load();
    return s?.current ? { workspaceId: s.workspaceId, region: s.region, current: s.current } : null;
  }

  /** Cancels an unfinished job (idempotent for a cancelled one); a finished job is left as it is. */
  async cancel(): Promise<CancelOutcome> {
    const s = await this.load();
    if (!s) return { ok: false, status: "failed" };
    if (s.status === "cancelled") return { ok: true };
    if (TERMINAL_STATUSES.has(s.status)) return { ok: false, status: s.status };
    try {
      await this.finish(s, "cancelled", { error: "Cancelled by the caller" });
    } catch (err) {
      // The cancel itself is saved; the alarm finishes releasing and notifying.
      log("error", { message: "video job cancel incomplete", job_id: s.id, error: errorText(err) });
      await this.ctx.storage.setAlarm(Date.now() + STEP_RETRY_MS);
      return { ok: true };
    }
    await this.schedule(s);
    return { ok: true };
  }

  override async alarm(): Promise<void> {
    let s = await this.load();
    if (!s) return;
    try {
      if (!s.synced) await this.sync(s);
      if (TERMINAL_STATUSES.has(s.status) && !s.finalized) await this.finalize(s);
      const now = Date.now();
      if (!TERMINAL_STATUSES.has(s.status)) {
        if (now >= s.deadlineAt) await this.finish(s, "expired", { error: "The job did not finish in time" });
        else if (!s.current) await this.submit(s);
        // The alarm is the schedule: when it fires (or a test runs it early) the poll is due.
        else await this.poll(s);
      }
      // A cancel may have landed while the step awaited the provider: continue from the stored state.
      s = (await this.load()) ?? s;
      if (s.webhook && !s.webhook.done) await this.deliver(s);
    } catch (err) {
      // D1 or the ledger failed mid-step: the state saved so far stands; try the step again soon.
      log("error", { message: "video job step failed", job_id: s.id, error: errorText(err) });
      await this.ctx.storage.setAlarm(Date.now() + STEP_RETRY_MS);
      return;
    }
    await this.schedule(s);
  }

  /** Whether the job was finished (cancelled) by another call while this step awaited the provider. */
  private async endedMeanwhile(s: VideoJobState): Promise<boolean> {
    const latest = await this.load();
    return latest != null && latest.status !== s.status && TERMINAL_STATUSES.has(latest.status);
  }

  private async schedule(s: VideoJobState): Promise<void> {
    const times: number[] = [];
    if (!s.synced) times.push(Date.now() + STEP_RETRY_MS);
    if (!TERMINAL_STATUSES.has(s.status)) times.push(Math.min(s.nextPollAt ?? Date.now(), s.deadlineAt));
    if (s.webhook && !s.webhook.done) times.push(s.webhook.nextAt);
    if (times.length) await this.ctx.storage.setAlarm(Math.min(...times));
    else await this.ctx.storage.deleteAlarm();
  }

  private async sync(s: VideoJobState): Promise<void> {
    await syncJob(this.env.DB, s);
    s.synced = true;
    await this.save(s);
  }

  /** Submits to the plan's endpoints in order, failing over like any inference request. */
  private async submit(s: VideoJobState): Promise<void> {
    const plan = { model: s.model, attempts: await attemptsFor(this.env, s.region, s.plan), rejections: [] };
    // A credential disabled or restricted (allowed_*) since the job was accepted is not used for it:
    // its attempt is refused with no upstream call, as a new request's would be.
    const caller = { keyHash: s.keyHash, userId: s.userId };
    const byok = (await currentWorkspaceByok(this.env.DB, s.workspaceId)).filter((c) => !c.disabled);
    const resolve = credentialResolver(this.env, byok);
    const outcome = await runAttempts(plan, {
      modality: "video",
      resolveCredential: (attempt) => {
        const { credential } = attempt;
        if (credential.source === "byok") {
          const row = byok.find((r) => r.id === credential.credentialId);
          if (!row || !usableBy(row, attempt.model, caller)) return Promise.resolve(null);
        }
        return resolve(attempt);
      },
      call: (attempt, call) =>
        videoAdapterOf(attempt.endpoint.adapter).submit(
          {
            ...s.request,
            // Absent: the endpoint's own capability flag, false when it states none.
            generateAudio: s.request.generateAudio ?? attempt.endpoint.capabilities.audio_generation ?? false,
            passthrough: s.providerOptions[attempt.endpoint.provider],
          },
          call,
        ),
    });
    if (await this.endedMeanwhile(s)) return;
    // The record lists every provider tried, as an inference request's does.
    s.attempts = outcome.log as unknown as Array<Record<string, unknown>>;
    if (!outcome.ok) {
      await this.finish(s, "failed", { error: `Submission failed: ${outcome.error.message}` });
      return;
    }
    const quoted = s.plan.find(
      (t) => t.endpointId === outcome.attempt.endpoint.id && t.modelSlug === outcome.attempt.model.slug,
    );
    s.current = {
      modelSlug: outcome.attempt.model.slug,
      endpointId: outcome.attempt.endpoint.id,
      credential: outcome.attempt.credential,
      ...(quoted?.pricing ? { pricing: quoted.pricing } : {}),
      provider: outcome.attempt.endpoint.provider,
      upstreamJobId: outcome.value.upstreamJobId,
    };
    s.isByok = outcome.credential.source === "byok";
    s.status = "in_progress";
    s.nextPollAt = Date.now() + pollDelayMs(0);
    await this.transition(s);
  }

  private async poll(s: VideoJobState): Promise<void> {
    const current = s.current!;
    let result: VideoPollResult;
    // The credential the poll sent: upstreams echo it in error text, which is stored and shown.
    let sent: string[] = [];
    try {
      const signal = AbortSignal.timeout(UPSTREAM_CALL_MS);
      const { adapter, call } = await connect(this.env, s.workspaceId, s.region, current, signal);
      sent = [call.credential.apiKey];
      result = await adapter.poll(current.upstreamJobId, call);
    } catch (err) {
      if (await this.endedMeanwhile(s)) return;
      const error = withoutSecrets(
        toUpstreamError(err, current.provider, err instanceof Error && err.name === "TimeoutError"),
        sent,
      );
      s.pollErrors += 1;
      if (!error.retryable || s.pollErrors >= MAX_POLL_ERRORS) {
        await this.finish(s, "failed", { error: error.message });
        return;
      }
      s.nextPollAt = Date.now() + pollDelayMs(s.polls + s.pollErrors);
      await this.save(s);
      return;
    }
    if (await this.endedMeanwhile(s)) return;
    s.polls += 1;
    s.pollErrors = 0;
    if (result.status === "completed") {
      await this.finish(s, "completed", { durationSeconds: result.durationSeconds });
    } else if (result.status === "failed") {
      await this.finish(s, "failed", {
        error: result.error ? redactSecrets(result.error, sent) : "The provider could not generate the video",
      });
    } else {
      s.nextPollAt = Date.now() + pollDelayMs(s.polls);
      await this.save(s);
    }
  }

  /**
   * Ends the job: fixes its status and cost, saved at once (so nothing can move it again), then
   * finalizes. A finalize that fails halfway (ledger or D1 down) is resumed by the next alarm.
   */
  private async finish(
    s: VideoJobState,
    status: Exclude<VideoStatus, "pending" | "in_progress">,
    detail: { error?: string; durationSeconds?: number },
  ): Promise<void> {
    // Saved before any other I/O, so a concurrent cancel sees the final status (storage calls hold the
    // object's input gate; only network or D1 awaits let another call in).
    s.status = status;
    s.error = status === "completed" ? null : (detail.error ?? null);
    s.billedDurationSeconds = detail.durationSeconds ?? s.billedDurationSeconds;
    // A job cancelled once a provider took it is charged as made: the provider is not told (adapters
    // have no cancel), makes it and bills it. Released, a capped key could have a provider make any
    // number of videos by submitting and cancelling (found by a hostile probe).
    const charged = status === "completed" || (status === "cancelled" && s.current !== null);
    s.costMicros = charged ? null : 0;
    s.nextPollAt = null;
    s.finalized = false;
    await this.save(s);
    await this.finalize(s);
  }

  /**
   * What the job is charged: the seconds made at the price quoted at submission (a catalog change while
   * it ran does not reprice it), never more than was reserved for it (a provider reporting more seconds
   * than asked for is not passed on past the worst case the caller's limits were checked against).
   */
  private async costOf(s: VideoJobState): Promise<number> {
    if (!s.current) return 0;
    // Jobs submitted before prices were kept with the plan read the catalog's.
    const pricing =
      s.current.pricing ?? (await attemptsFor(this.env, s.region, [s.current]))[0]?.endpoint.pricing;
    if (!pricing) return 0;
    const cost = videoCostMicros(pricing, s.resolution, s.billedDurationSeconds);
    return s.reservation ? Math.min(cost, s.reservation.reservedMicros) : cost;
  }

  /**
   * Charges the real cost on completion or releases the reservation otherwise (settle is idempotent),
   * writes the generation record (once), queues the webhook when a URL applies, and mirrors D1.
   */
  private async finalize(s: VideoJobState): Promise<void> {
    if (s.costMicros == null) {
      s.costMicros = await this.costOf(s);
      await this.save(s);
    }
    if (s.reservation) {
      await settle(this.env, s.reservation, { actualMicros: s.costMicros ?? 0, isByok: s.isByok });
    }
    await recordJobGeneration(this.env.DB, s);
    const url = s.callbackUrl ?? (await this.workspaceWebhookUrl(s.workspaceId));
    if (url && !s.webhook) {
      const now = Date.now();
      s.webhook = {
        webhookId: newWebhookId(),
        url,
        body: JSON.stringify({
          type: `video.${s.status}`,
          timestamp: new Date(now).toISOString(),
          data: jobToWire(s),
        }),
        attempts: 0,
        firstAt: now,
        nextAt: now,
        done: false,
      };
    }
    s.finalized = true;
    await this.transition(s);
  }

  private async workspaceWebhookUrl(workspaceId: string): Promise<string | null> {
    const row = await getDb(this.env.DB)
      .select({ url: tables.workspaces.videoWebhookUrl })
      .from(tables.workspaces)
      .where(eq(tables.workspaces.id, workspaceId))
      .get();
    return row?.url ?? null;
  }

  /** Saves, then mirrors to D1; a failed mirror is retried by the next alarm. */
  private async transition(s: VideoJobState): Promise<void> {
    s.synced = false;
    await this.save(s);
    await this.sync(s);
  }

  private async deliver(s: VideoJobState): Promise<void> {
    const hook = s.webhook!;
    hook.attempts += 1;
    const outcome = await attemptDelivery(
      this.env,
      { jobId: s.id, workspaceId: s.workspaceId, webhookId: hook.webhookId, url: hook.url, body: hook.body },
      hook.attempts,
    );
    const now = Date.now();
    if (outcome.ok || !outcome.retry || !mayRetry(hook.attempts, hook.firstAt, now)) hook.done = true;
    else hook.nextAt = now + retryDelayMs(hook.attempts);
    await this.save(s);
  }
}
