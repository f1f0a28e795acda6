// Wire pieces shared by many routes: the error envelope, data regions, timestamps, pagination.
import { z } from "@hono/zod-openapi";
import { DATA_REGIONS } from "../../regions";

export const ErrorEnvelopeSchema = z
  .object({
    error: z.object({
      code: z.int().openapi({ description: "Equals the HTTP status" }),
      message: z.string(),
      metadata: z.record(z.string(), z.unknown()).nullable().optional(),
    }),
    openrouter_metadata: z.record(z.string(), z.unknown()).nullable().optional(),
    user_id: z.string().nullable().optional(),
  })
  .openapi("ErrorEnvelope");

export const DataRegionSchema = z.enum(DATA_REGIONS);

/** A set of data regions: at least one, no repeats. */
export const DataRegionSetSchema = z
  .array(DataRegionSchema)
  .min(1, "must list at least one data region")
  .refine((a) => new Set(a).size === a.length, "must not repeat a data region");

export const ResetIntervalSchema = z.enum(["daily", "weekly", "monthly"]);

export const TimestampSchema = z.iso.datetime({ offset: true });
