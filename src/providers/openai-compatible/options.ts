// What differs between OpenAI-compatible providers: auth headers and which optional fields they accept.

export interface OpenAiCompatibleOptions {
  /** Adapter name catalog endpoints use. */
  name: string;
  authHeaders(apiKey: string): Record<string, string>;
  /** Whether the upstream accepts `input_type` on /embeddings (many OpenAI-compatible hosts do). */
  sendsInputType: boolean;
  /**
   * Whether the upstream serves the Responses API (POST /responses, OpenAI's own): a responses client's
   * chat then goes there and its events pass through; every other client keeps /chat/completions.
   */
  responsesApi?: boolean;
}

export const bearer = (apiKey: string): Record<string, string> => ({ Authorization: `Bearer ${apiKey}` });
