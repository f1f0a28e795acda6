// zod's issue for a value no branch of a union took is a bare "Invalid input"; this says why when the
// value's own type picks out one branch. Shared by the routes' validation hook and schemas that re-raise
// nested issues (a responses input item is checked by its kind inside a refinement).
import type { z } from "@hono/zod-openapi";

type Issue = z.core.$ZodIssue;

/**
 * A branch the value was not meant for: it failed on the value's type itself (a string given where the
 * branch takes an array), or on its `type` field (objects of OpenAI's and Anthropic's shapes say which
 * form they are by `type`, so `{type: "function"}` is not meant for the `allowed_tools` form).
 */
const typeOnly = (branch: Issue[]) =>
  branch.length > 0 &&
  (branch.every((i) => i.path.length === 0 && (i.code === "invalid_type" || i.code === "custom")) ||
    branch.some((i) => i.code === "invalid_value" && i.path.length === 1 && i.path[0] === "type"));

/**
 * The issue that says why, for a value no branch of a union took: the issue of the one branch whose
 * type the value has (a list too long, a part's field wrong), looked into again when that is a union
 * too; when the value has none of the branches' types, which types they are. When two or more branches
 * took the value's type as far, which one was meant cannot be told: zod's own issue stands.
 */
export function explainedIssue(issue: Issue): { path: PropertyKey[]; message: string } {
  if (issue.code !== "invalid_union" || issue.errors.length === 0) return issue;
  const matched = issue.errors.filter((branch) => branch.length > 0 && !typeOnly(branch));
  // Of those, the one that took the value furthest (into its fields or items), when only one did: an
  // object checked field by field was meant, not an enum of strings that refused it whole.
  const deeper = matched.filter((branch) => branch.some((i) => i.path.length > 0));
  const meant = matched.length === 1 ? matched[0] : deeper.length === 1 ? deeper[0] : undefined;
  if (meant) {
    const inner = explainedIssue(meant.find((i) => i.path.length > 0) ?? meant[0]!);
    return { path: [...issue.path, ...inner.path], message: inner.message };
  }
  if (matched.length > 1) return issue;
  const expected = [
    ...new Set(
      issue.errors.flatMap((b) => b.flatMap((i) => (i.code === "invalid_type" ? [i.expected] : []))),
    ),
  ];
  return expected.length
    ? { path: issue.path, message: `Invalid input: expected ${expected.join(" or ")}` }
    : issue;
}
