// The video job Durable Object: one per job, driving its lifecycle with alarms.
import { DurableObject } from "cloudflare:workers";
import type { Bindings } from "../env";

export class VideoJob extends DurableObject<Bindings> {}
