// GET /console: the static console, served without a key, locked down by its headers; its script renders API
// data only as text.
import { describe, expect, it } from "vitest";
import script from "../src/console/app.js";
import { send } from "./helpers/http";

const get = (path: string, method = "GET") => send(new Request(`http://gateway.test${path}`, { method }));

describe("GET /console", () => {
  it("serves the page and its script without a key, with a CSP that allows only this origin's script", async () => {
    const page = await get("/console");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
    const csp = page.headers.get("content-security-policy")!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toMatch(/script-src[^;]*unsafe/);
    expect(page.headers.get("x-content-type-options")).toBe("nosniff");
    expect(page.headers.get("set-cookie")).toBeNull();
    const html = await page.text();
    expect(html).toContain('<script src="/console/app.js" type="module"></script>');
    // No inline script: the CSP would refuse it.
    expect(html.match(/<script/g)).toHaveLength(1);

    const js = await get("/console/app.js");
    expect(js.status).toBe(200);
    expect(js.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(await js.text()).toBe(script);
  });

  it("never builds markup from strings and keeps the key in session storage, sent as a bearer token", () => {
    expect(script).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write/);
    expect(script).not.toMatch(/document\.cookie|localStorage/);
    expect(script).toContain("sessionStorage");
    expect(script).toMatch(/Authorization: `Bearer \$\{key\(\)\}`/);
  });

  it("answers other methods with 405 and unknown console paths with 404", async () => {
    expect((await get("/console", "POST")).status).toBe(405);
    expect((await get("/console/other.js")).status).toBe(404);
  });
});
