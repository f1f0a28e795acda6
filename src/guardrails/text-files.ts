// Text files given inline as data URLs (`data:text/plain;base64,...`, JSON, XML, CSV, ...): their text is
// what the model reads, so the content filters read it too. Other files (a PDF, an image) are not text a
// filter can read and pass as sent.
import { fromBase64, toBase64 } from "../lib/base64";

const TEXT_TYPE =
  /^(?:text\/[\w.+-]+|application\/(?:json|xml|yaml|x-yaml|csv|x-ndjson|javascript|[\w.-]+\+(?:json|xml)))$/;
/** `data:<type>[;param]...,`: the header, bounded so a huge URL without a comma is not scanned. */
const HEADER = /^data:([^;,]{0,128})((?:;[^;,]{0,128}){0,8}),/;

const decoder = new TextDecoder();
const encoder = new TextEncoder();

/**
 * A file's `file_data` with the text of an inline text file passed through `visit` (and written back,
 * in the same encoding, when `visit` changed it); anything else unchanged and not visited. The same
 * data always visits the same way, so a walk that collects texts and one that puts them back agree.
 */
export function visitTextFile(data: string, visit: (text: string) => string): string {
  const header = HEADER.exec(data.slice(0, 1_300));
  if (!header || !TEXT_TYPE.test(header[1]!.trim().toLowerCase())) return data;
  const base64 = header[2]!.toLowerCase().split(";").includes("base64");
  const payload = data.slice(header[0].length);
  let text: string;
  try {
    text = base64 ? decoder.decode(fromBase64(payload)) : decodeURIComponent(payload);
  } catch {
    // Not decodable: the provider cannot read it as text either.
    return data;
  }
  const visited = visit(text);
  if (visited === text) return data;
  return `${header[0]}${base64 ? toBase64(encoder.encode(visited)) : encodeURIComponent(visited)}`;
}
