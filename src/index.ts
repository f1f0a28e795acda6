// The Worker entry: the HTTP app, the generation records' queue consumer, and the Durable Object
// classes the global deployment owns.
import app from "./app";
import type { Bindings } from "./env";
import { consumeRecords } from "./generations/consumer";
import type { RecordsMessage } from "./generations/insert";

export { Ledger } from "./ledger/object";
export { VideoJob } from "./videos/job";

export default {
  fetch: app.fetch,
  queue: consumeRecords,
} satisfies ExportedHandler<Bindings, RecordsMessage>;
