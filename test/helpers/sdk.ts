// An @openrouter/sdk client wired to the in-process Worker, so its parsing proves wire compatibility.
import { HTTPClient, OpenRouter } from "@openrouter/sdk";
import type { DataRegion } from "../../regions";
import { BASE, workerFetch } from "./http";

export function sdkFor(apiKey: string, region?: DataRegion): OpenRouter {
  return new OpenRouter({
    apiKey,
    serverURL: BASE,
    httpClient: new HTTPClient({ fetcher: workerFetch(region) }),
    retryConfig: { strategy: "none" },
  });
}
