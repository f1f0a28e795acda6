// The data regions this gateway is deployed to: one validated record per regional deployment.
import { z } from "zod";
import europe from "./europe.json";
import global from "./global.json";
import us from "./us.json";

export const DATA_REGIONS = ["global", "europe", "us"] as const;
export const DataRegionSchema = z.enum(DATA_REGIONS);
export type DataRegion = z.infer<typeof DataRegionSchema>;

export const RegionRecordSchema = z.object({
  name: DataRegionSchema,
  /** `[env.<name>]` in wrangler.toml; null for the top-level (global) deployment. */
  wranglerEnv: z.string().nullable(),
  workerName: z.string().min(1),
  /** Ingress hostname clients use; the worker's custom-domain route. */
  hostname: z.string().min(1),
  /** The base URL a client configures, version prefix included. */
  baseUrl: z.url().refine((u) => u.endsWith("/api/v1"), "baseUrl must end with /api/v1"),
  /** Port `npm run start[:region]` serves this region on locally. */
  localPort: z.number().int().min(1024).max(65535),
  /** Cloudflare jurisdiction for data this region keeps at rest ("eu", "fedramp"), null for none. */
  jurisdiction: z.enum(["eu", "fedramp"]).nullable(),
  /**
   * Whether this deployment owns the Durable Object classes. Exactly one does (global): the
   * others bind its namespaces with `script_name`, so a key has one ledger whatever the ingress.
   */
  ownsDurableObjects: z.boolean(),
});
export type RegionRecord = z.infer<typeof RegionRecordSchema>;

export const REGIONS: Record<DataRegion, RegionRecord> = {
  global: RegionRecordSchema.parse(global),
  europe: RegionRecordSchema.parse(europe),
  us: RegionRecordSchema.parse(us),
};
