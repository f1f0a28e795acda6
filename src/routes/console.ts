// GET /console: the operator console, static HTML and JS served by the Worker (no build step). Everything
// it shows comes from the public API with the management key the user signs in with.
import { Hono } from "hono";
import script from "../console/app.js";
import page from "../console/index.html";
import type { AppEnv } from "../env";

/**
 * Only this origin's script and API; no inline script, no framing, no forms posting elsewhere. The key
 * lives in sessionStorage, so a script injected from anywhere else is what must be impossible.
 */
const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "connect-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

const headers = (type: string) => ({
  "Content-Type": type,
  "Content-Security-Policy": CSP,
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
  // Revalidated each load, so a deploy shows at once; small enough not to matter.
  "Cache-Control": "no-cache",
});

export const consoleRoutes = new Hono<AppEnv>()
  .get("/console", (c) => c.body(page, 200, headers("text/html; charset=utf-8")))
  .get("/console/app.js", (c) => c.body(script, 200, headers("text/javascript; charset=utf-8")));
