// GET /credits: the account's total credits purchased and total credit usage (management keys, as in the SDK).
import { z } from "@hono/zod-openapi";
import { readCredits } from "../billing/usage";
import { microsToUsd } from "../lib/money";
import { apiRoute, createRouter, jsonContent } from "../lib/openapi";
import { requireManagementKey } from "../middleware/auth";

export const CreditsSchema = z
  .object({
    total_credits: z.number().openapi({ description: "All-time credits purchased, USD" }),
    total_usage: z
      .number()
      .openapi({ description: "All-time settled spend on credits, USD (BYOK excluded)" }),
  })
  .openapi("Credits");

const route = apiRoute({
  method: "get",
  path: "/credits",
  operationId: "getCredits",
  tags: ["Credits"],
  summary: "Total credits purchased and used",
  security: [{ bearer: [] }],
  middleware: requireManagementKey,
  responses: {
    200: jsonContent(z.object({ data: CreditsSchema }), "Credits purchased and used"),
  },
});

export const creditsRoutes = createRouter().openapi(route, async (c) => {
  const { account } = c.get("auth");
  const figures = await readCredits(c.env, account.id);
  return c.json(
    { data: { total_credits: microsToUsd(figures.purchased), total_usage: microsToUsd(figures.spent) } },
    200,
  );
});
