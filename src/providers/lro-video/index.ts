// The long-running-operation video adapter (Veo-style `:predictLongRunning`): video only.
import type { ProviderAdapter } from "../types";
import { lroVideos } from "./video";

export const lroVideoAdapter: ProviderAdapter = {
  name: "lro-video",
  requiresApiKey: true,
  videos: lroVideos,
};
