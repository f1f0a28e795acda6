// Region ingress: the deployment's data region must be allowed by the key and by every applicable guardrail.
import { createMiddleware } from "hono/factory";
import type { AuthContext } from "../db/auth-records";
import type { AppEnv } from "../env";
import { forbidden } from "../lib/errors";

export const enforceRegion = createMiddleware<AppEnv>(async (c, next) => {
  assertRegionAllowed(c.get("auth"), c.env.REGION);
  await next();
});

/** Throws the 403 when `region` is not allowed by the key or by one of its guardrails. */
export function assertRegionAllowed(auth: Pick<AuthContext, "key" | "guardrails">, region: string): void {
  const { key, guardrails } = auth;
  if (!key.allowedDataRegions.includes(region)) {
    throw forbidden(
      `Requests through the '${region}' data region are not allowed for this API key ` +
        `(allowed: ${key.allowedDataRegions.join(", ") || "none"})`,
      { region },
    );
  }
  const refusing = guardrails.find(
    (g) => g.allowedDataRegions != null && !g.allowedDataRegions.includes(region),
  );
  if (refusing) {
    throw forbidden(
      `Requests through the '${region}' data region are not allowed by guardrail '${refusing.name}' ` +
        `(allowed: ${refusing.allowedDataRegions!.join(", ")})`,
      { region, guardrail_id: refusing.id },
    );
  }
}
