// Region ingress: the deployment's data region must be allowed by the key and by every applicable guardrail
// (for a management key, unless they together leave it no region at all: see below).
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
  // A management key is bound by its guardrails' regions too, but never to nowhere: guardrails that
  // together allow none of the key's own regions (a misconfiguration: an EU-only guardrail assigned to a
  // key that allows only global and us) would lock the account out of the API that repairs them, so for
  // such a key they are set aside and the key's own regions hold.
  if (key.isManagement && !someRegionLeft(key.allowedDataRegions, guardrails)) return;
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

/** Whether one of `regions` is allowed by every guardrail that limits regions. */
function someRegionLeft(regions: string[], guardrails: AuthContext["guardrails"]): boolean {
  return regions.some((r) =>
    guardrails.every((g) => g.allowedDataRegions == null || g.allowedDataRegions.includes(r)),
  );
}
