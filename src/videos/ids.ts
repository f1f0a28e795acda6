// Identifiers of video jobs: `gen-vid-<unix seconds>-<20 alphanumerics>` as the SDK documents.
import { alphanumerics, unixSeconds } from "../inference/ids";

export const newVideoJobId = () => `gen-vid-${unixSeconds()}-${alphanumerics(20)}`;
export const pollingUrl = (jobId: string) => `/api/v1/videos/${jobId}`;
