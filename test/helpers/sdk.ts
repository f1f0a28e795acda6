// An @openrouter/sdk client wired to the in-process Worker, so its parsing proves wire compatibility.
import { HTTPClient, OpenRouter } from "@openrouter/sdk";
import type { DataRegion } from "../../regions";
import { BASE, workerFetch } from "./http";

/**
 * `fetcher` defaults to one that waits for the Worker's waitUntil work before handing back the
 * response; streamed responses need one that does not (test/helpers/media.ts streamingFetch).
 */
export function sdkFor(
  apiKey: string,
  region?: DataRegion,
  fetcher: typeof fetch = workerFetch(region),
): OpenRouter {
  return new OpenRouter({
    apiKey,
    serverURL: BASE,
    httpClient: new HTTPClient({ fetcher }),
    retryConfig: { strategy: "none" },
  });
}
