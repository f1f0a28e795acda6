// The Worker entry: the HTTP app and the Durable Object classes the global deployment owns.
import app from "./app";

export { Ledger } from "./ledger/object";
export { VideoJob } from "./videos/job";

export default app;
