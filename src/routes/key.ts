// GET /key: information on the API key that authenticated the request.
import { z } from "@hono/zod-openapi";
import { readLedgerStatus } from "../billing/usage";
import { capWire, usageWire } from "../db/api-keys";
import { apiRoute, createRouter, jsonContent } from "../lib/openapi";
import { CurrentKeySchema } from "../schemas/keys";

const route = apiRoute({
  method: "get",
  path: "/key",
  operationId: "getCurrentKey",
  tags: ["API keys"],
  summary: "Current API key information",
  security: [{ bearer: [] }],
  responses: {
    200: jsonContent(z.object({ data: CurrentKeySchema }), "The key's settings, usage and limits"),
  },
});

export const keyRoutes = createRouter().openapi(route, async (c) => {
  const { key, account } = c.get("auth");
  const status = await readLedgerStatus(c.env, account.id, [key.hash]);
  const snapshot = status.keys[key.hash];
  return c.json(
    {
      data: {
        label: key.label,
        allowed_data_regions: key.allowedDataRegions as ("global" | "europe" | "us")[],
        creator_user_id: key.creatorUserId,
        expires_at: key.expiresAt,
        ...capWire(key, snapshot),
        ...usageWire(snapshot),
        is_free_tier: key.isFreeTier,
        is_management_key: key.isManagement,
        is_provisioning_key: key.isProvisioning,
        free_model_daily_requests: status.freeModelDaily,
        rate_limit: {
          interval: "10s",
          requests: -1,
          note: "Deprecated: rate limits are reported on 429 responses",
        },
        workspace_id: key.workspaceId,
        organization_id: account.id,
      },
    },
    200,
  );
});
