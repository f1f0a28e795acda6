// Text files given inline as data URLs (`data:text/plain;base64,...`, JSON, XML, CSV, ...): their text is
// what the model reads, so the content filters read it too. Other files (a PDF, an image) are not text a
// filter can read and pass as sent.
import { fromBase64, toBase64 } from "../lib/base64";
import { badRequest } from "../lib/errors";

const TEXT_TYPE =
  /^(?:text\/[\w.+-]+|application\/(?:json|xml|yaml|x-yaml|csv|x-ndjson|javascript|[\w.-]+\+(?:json|xml)))$/;
/** `data:<type>[;param]...,`: the header, bounded so a huge URL without a comma is not scanned. */
const HEADER = /^data:([^;,]{0,128})((?:;[^;,]{0,128}){0,8}),/;

const encoder = new TextEncoder();

/**
 * A file's `file_data` with the text of an inline text file passed through `visit` (and written back,
 * in the same encoding, when `visit` changed it); anything else unchanged and not visited. The same
 * data always visits the same way, so a walk that collects texts and one that puts them back agree.
 */
export function visitTextFile(data: string, visit: (text: string) => string): string {
  const header = HEADER.exec(data.slice(0, 1_300));
  if (!header || !TEXT_TYPE.test(header[1]!.trim().toLowerCase())) return data;
  const params = header[2]!
    .toLowerCase()
    .split(";")
    .map((p) => p.trim());
  const base64 = params.includes("base64");
  const charset =
    params
      .find((p) => p.startsWith("charset="))
      ?.slice(8)
      .replace(/"/g, "") || "utf-8";
  const payload = data.slice(header[0].length);
  const decoder = base64 ? textDecoder(charset) : null;
  let text: string;
  try {
    text = decoder ? decoder.decode(fromBase64(payload)) : decodeURIComponent(payload);
  } catch {
    // Not decodable: the provider cannot read it as text either.
    return data;
  }
  const visited = visit(text);
  if (visited === text) return data;
  // Written back as UTF-8 (the only encoding a Worker writes), and said so in the header.
  const kept = params.filter((p) => p && p !== "base64" && !p.startsWith("charset="));
  const head = `data:${header[1]}${kept.map((p) => `;${p}`).join("")};charset=utf-8`;
  return base64
    ? `${head};base64,${toBase64(encoder.encode(visited))}`
    : `${head},${encodeURIComponent(visited)}`;
}

/**
 * A decoder for a file's declared charset (UTF-16, Latin-1, Shift JIS, ...: what the runtime knows);
 * bytes that do not decode read as U+FFFD and the rest is still read. A charset the runtime does not
 * know cannot be read: refused (400) rather than passed unread, since a filter would be passed by.
 */
function textDecoder(charset: string): TextDecoder {
  try {
    return new TextDecoder(charset);
  } catch {
    throw badRequest(
      `A text file in charset '${charset}' cannot be read by the content filters; send it as UTF-8`,
    );
  }
}
