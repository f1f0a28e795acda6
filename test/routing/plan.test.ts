// The route planner as pure functions: candidates, each filter with its reason, ordering, BYOK, fallback plan.
import { describe, expect, it } from "vitest";
import { freeOnOwnKeys } from "../../src/inference/pipeline";
import { ApiError } from "../../src/lib/errors";
import { assertRoutable, planRoute, type RouteRequest } from "../../src/routing/plan";
import { byokRow, context, endpoint, guardrailRow, model } from "./fixtures";

const req = (over: Partial<RouteRequest> = {}): RouteRequest => ({
  modality: "embeddings",
  model: "v/m",
  ...over,
});
const providers = (plan: ReturnType<typeof planRoute>) => plan.attempts.map((a) => a.endpoint.provider);

function refusal(fn: () => void): ApiError {
  try {
    fn();
  } catch (e) {
    if (e instanceof ApiError) return e;
    throw e;
  }
  throw new Error("expected an ApiError");
}

describe("candidates and fallback plan", () => {
  const catalog = [
    model("v/m", [endpoint("p1"), endpoint("p2")]),
    model("v/fallback", [endpoint("p3")]),
    model("v/tts", [endpoint("p4")], { modality: "speech" }),
  ];

  it("lists the model's endpoints in catalog order, then each fallback model's", () => {
    const plan = planRoute(req({ models: ["v/fallback"] }), context(catalog));
    expect(providers(plan)).toEqual(["p1", "p2", "p3"]);
  });

  it("finds models by canonical slug", () => {
    expect(providers(planRoute(req({ model: "v/m-2026" }), context(catalog)))).toEqual(["p1", "p2"]);
  });

  it("a canonical slug a :free variant shares names the model itself, listed before or after it", () => {
    for (const models of [
      [model("v/m", [endpoint("paid")]), model("v/m:free", [endpoint("free")])],
      [model("v/m:free", [endpoint("free")]), model("v/m", [endpoint("paid")])],
    ]) {
      expect(providers(planRoute(req({ model: "v/m-2026" }), context(models)))).toEqual(["paid"]);
    }
    // A variant with no model of its own keeps the canonical slug.
    const alone = [model("v/solo:free", [endpoint("free")])];
    expect(providers(planRoute(req({ model: "v/solo-2026" }), context(alone)))).toEqual(["free"]);
  });

  it("allow_fallbacks false keeps only each model's first endpoint; the fallback models stay (OpenRouter's two decisions)", () => {
    const plan = planRoute(
      req({ models: ["v/fallback"], provider: { allow_fallbacks: false } }),
      context(catalog),
    );
    expect(providers(plan)).toEqual(["p1", "p3"]);
  });

  it("allow_fallbacks false with order keeps exactly the ordered providers", () => {
    const plan = planRoute(req({ provider: { allow_fallbacks: false, order: ["p2"] } }), context(catalog));
    expect(providers(plan)).toEqual(["p2"]);
  });

  it("allow_fallbacks false with an order naming no provider of the model: 404 saying so, not 'not found'", () => {
    const plan = planRoute(req({ provider: { allow_fallbacks: false, order: ["p9"] } }), context(catalog));
    const e = refusal(() => assertRoutable(plan));
    expect(e.status).toBe(404);
    expect(e.message).toBe(
      "No endpoint of 'v/m' matches your provider preferences: provider 'p1' not in provider.order (allow_fallbacks: false); provider 'p2' not in provider.order (allow_fallbacks: false)",
    );
    expect(e.metadata?.reasons).toHaveLength(2);
  });

  it("unknown model -> 404; wrong modality -> 400", () => {
    expect(refusal(() => assertRoutable(planRoute(req({ model: "v/none" }), context(catalog)))).status).toBe(
      404,
    );
    const wrong = refusal(() => assertRoutable(planRoute(req({ model: "v/tts" }), context(catalog))));
    expect(wrong.status).toBe(400);
    expect(wrong.message).toContain("speech model");
  });

  it("an unknown primary with a routable fallback still routes", () => {
    const plan = planRoute(req({ model: "v/none", models: ["v/fallback"] }), context(catalog));
    expect(providers(plan)).toEqual(["p3"]);
  });
});

describe("provider preferences", () => {
  const catalog = [
    model("v/m", [
      endpoint("p1", { pricing: { input_token: 0.3, output_token: 1 } }),
      endpoint("p2", {
        pricing: { input_token: 0.1, output_token: 3 },
        policies: { zdr: false, trains_on_data: true, publishes_prompts: false },
      }),
      endpoint("p3", { pricing: { input_token: 0.2 } }),
    ]),
  ];
  const plan = (provider: RouteRequest["provider"]) =>
    providers(planRoute(req({ provider }), context(catalog)));

  it("order puts listed providers first, others after", () =>
    expect(plan({ order: ["p3"] })).toEqual(["p3", "p1", "p2"]));
  it("only keeps listed providers", () => expect(plan({ only: ["p2", "p3"] })).toEqual(["p2", "p3"]));
  it("ignore drops providers", () => expect(plan({ ignore: ["p1"] })).toEqual(["p2", "p3"]));
  it("sort price orders by unit price", () => expect(plan({ sort: "price" })).toEqual(["p2", "p3", "p1"]));
  it("sort price puts the lower output price first between equal input prices", () => {
    const tied = [
      model("v/m", [
        endpoint("dear", { pricing: { input_token: 0.15, output_token: 0.75 } }),
        endpoint("cheap", { pricing: { input_token: 0.15, output_token: 0.6 } }),
      ]),
    ];
    expect(providers(planRoute(req({ provider: { sort: "price" } }), context(tied)))).toEqual([
      "cheap",
      "dear",
    ]);
  });
  it("sort price across models (partition none) keeps the providers order names first", () => {
    const two = [
      model("v/m", [endpoint("p1", { pricing: { input_token: 0.5 } })]),
      model("v/f", [endpoint("p3", { pricing: { input_token: 0.1 } })]),
    ];
    const across = (provider: RouteRequest["provider"]) =>
      providers(planRoute(req({ models: ["v/f"], provider }), context(two)));
    expect(across({ sort: { by: "price", partition: "none" } })).toEqual(["p3", "p1"]);
    expect(across({ order: ["p1"], sort: { by: "price", partition: "none" } })).toEqual(["p1", "p3"]);
  });
  it("zdr keeps zero-retention providers", () => expect(plan({ zdr: true })).toEqual(["p1", "p3"]));
  it("data_collection deny drops training providers", () =>
    expect(plan({ data_collection: "deny" })).toEqual(["p1", "p3"]));
  it("max_price.prompt is USD per million units", () =>
    expect(plan({ max_price: { prompt: 0.2 } })).toEqual(["p2", "p3"]));
  // They were accepted and ignored: a cap on the completion price served any completion price.
  it("max_price.completion bounds the output price (an endpoint without one costs nothing there)", () =>
    expect(plan({ max_price: { completion: 2 } })).toEqual(["p1", "p3"]));
  it("max_price.image and .audio bound the prompt price media are billed at", () => {
    expect(plan({ max_price: { image: 0.2 } })).toEqual(["p2", "p3"]);
    expect(plan({ max_price: { audio: 0.1 } })).toEqual(["p2"]);
  });

  it("the primary model's refusal decides the status, named by slug or by canonical slug", () => {
    const two = [model("v/m", [endpoint("p1")]), model("v/f", [endpoint("p3")])];
    const policy = [guardrailRow({ ignoredModels: ["v/f"] })];
    for (const id of ["v/m", "v/m-2026"]) {
      const e = refusal(() =>
        assertRoutable(
          planRoute(
            req({ model: id, models: ["v/f"], provider: { ignore: ["p1"] } }),
            context(two, { rows: policy }),
          ),
        ),
      );
      expect(e.status, id).toBe(404);
      expect(e.message, id).toContain("v/m");
    }
  });

  it("nothing left -> 404 naming the preference", () => {
    const e = refusal(() => assertRoutable(planRoute(req({ provider: { only: ["zz"] } }), context(catalog))));
    expect(e.status).toBe(404);
    expect(e.message).toContain("provider.only");
  });
});

describe("capability fit", () => {
  const catalog = [
    model("v/m", [
      endpoint("small", { capabilities: { dimensions: 8 } }),
      endpoint("big", { capabilities: { dimensions: 64 } }),
    ]),
  ];
  const dims = (d: number) => ({
    param: `dimensions=${d}`,
    hard: true,
    fits: (e: { capabilities: { dimensions?: number } }) => e.capabilities.dimensions === d,
  });

  it("hard requirements filter always", () => {
    expect(providers(planRoute(req({ requirements: [dims(64)] }), context(catalog)))).toEqual(["big"]);
    const e = refusal(() => assertRoutable(planRoute(req({ requirements: [dims(3)] }), context(catalog))));
    expect(e.status).toBe(400);
    expect(e.message).toContain("dimensions=3");
  });

  it("soft requirements filter only with require_parameters", () => {
    const soft = { ...dims(64), hard: false };
    expect(providers(planRoute(req({ requirements: [soft] }), context(catalog)))).toEqual(["small", "big"]);
    const strict = planRoute(
      req({ requirements: [soft], provider: { require_parameters: true } }),
      context(catalog),
    );
    expect(providers(strict)).toEqual(["big"]);
  });
});

describe("guardrails", () => {
  const free = model("v/m:free", [
    endpoint("pf", { pricing: {}, policies: { zdr: false, trains_on_data: true, publishes_prompts: true } }),
  ]);
  const paid = model("v/m", [
    endpoint("p1", { policies: { zdr: false, trains_on_data: true, publishes_prompts: false } }),
    endpoint("p2"),
  ]);
  const route = (rows: ReturnType<typeof guardrailRow>[], r = req()) =>
    planRoute(r, context([free, paid], { rows }));

  it("allowed_models accepts slug, canonical slug, and the base of a :free slug", () => {
    expect(providers(route([guardrailRow({ allowedModels: ["v/m-2026"] })]))).toEqual(["p1", "p2"]);
    expect(providers(route([guardrailRow({ allowedModels: ["v/m"] })], req({ model: "v/m:free" })))).toEqual([
      "pf",
    ]);
  });

  it("refusals name the guardrail (403)", () => {
    const e = refusal(() =>
      assertRoutable(route([guardrailRow({ name: "Finance", ignoredModels: ["v/m"] })])),
    );
    expect(e.status).toBe(403);
    expect(e.message).toContain("'Finance'");
    expect(e.message).toContain("ignored_models");
  });

  it("allowed lists intersect across guardrails and ignore lists add up", () => {
    const rows = [
      guardrailRow({ allowedProviders: ["p1", "p2"] }),
      guardrailRow({ allowedProviders: ["p2"] }),
    ];
    expect(providers(route(rows))).toEqual(["p2"]);
    expect(
      providers(
        route([guardrailRow({ ignoredProviders: ["p1"] }), guardrailRow({ ignoredProviders: ["p2"] })]),
      ),
    ).toEqual([]);
  });

  it("ZDR per maker, paid training, free training and publication flags", () => {
    expect(providers(route([guardrailRow({ enforceZdrVendorA: true })]))).toEqual(["p2"]);
    expect(providers(route([guardrailRow({ enforceZdrVendorB: true })]))).toEqual(["p1", "p2"]);
    expect(providers(route([guardrailRow({ enablePaidModelTraining: false })]))).toEqual(["p2"]);
    const freeReq = req({ model: "v/m:free" });
    expect(providers(route([guardrailRow({ enableFreeModelTraining: false })], freeReq))).toEqual([]);
    expect(providers(route([guardrailRow({ enableFreeModelPublication: false })], freeReq))).toEqual([]);
    expect(providers(route([guardrailRow()], freeReq))).toEqual(["pf"]);
  });

  it("data region: endpoints must serve the request's region (403 otherwise)", () => {
    const usOnly = model("v/us", [endpoint("pu", { regions: ["us"] })]);
    const ctx = context([usOnly], { region: "europe" });
    const e = refusal(() => assertRoutable(planRoute(req({ model: "v/us" }), ctx)));
    expect(e.status).toBe(403);
    const eu = planRoute(req({ model: "v/m" }), context([paid], { region: "europe" }));
    expect(eu.attempts[0]!.baseUrl).toBe("https://eu.p1.example/v1");
  });
});

describe("free models on the caller's own key", () => {
  it("drop only that model's platform attempts: a free primary on the platform key stays first", () => {
    const catalog = [model("x/m:free", [endpoint("p1")]), model("y/m:free", [endpoint("p2")])];
    const plan = planRoute(
      req({ model: "x/m:free", models: ["y/m:free"] }),
      context(catalog, { byok: [byokRow("p2", { id: "own" })] }),
    );
    const sources = (p: ReturnType<typeof planRoute>) =>
      p.attempts.map((a) => `${a.model.slug}:${a.credential.source}`);
    expect(sources(plan)).toEqual(["x/m:free:platform", "y/m:free:byok", "y/m:free:platform"]);
    expect(sources(freeOnOwnKeys(plan))).toEqual(["x/m:free:platform", "y/m:free:byok"]);
  });
});

describe("BYOK selection", () => {
  const catalog = [model("v/m", [endpoint("p1"), endpoint("p2")])];
  const creds = (plan: ReturnType<typeof planRoute>) =>
    plan.attempts.map(
      (a) =>
        `${a.endpoint.provider}:${a.credential.source === "byok" ? a.credential.credentialId : "platform"}`,
    );

  it("tries the workspace's key first, then the platform key", () => {
    const b = byokRow("p1", { id: "b1" });
    expect(creds(planRoute(req(), context(catalog, { byok: [b] })))).toEqual([
      "p1:b1",
      "p1:platform",
      "p2:platform",
    ]);
  });

  it("is_fallback keys come after the platform key; sort_order orders keys", () => {
    const byok = [
      byokRow("p1", { id: "late", sortOrder: 2 }),
      byokRow("p1", { id: "early", sortOrder: 1 }),
      byokRow("p1", { id: "fb", isFallback: true }),
    ];
    expect(creds(planRoute(req(), context(catalog, { byok })))).toEqual([
      "p1:early",
      "p1:late",
      "p1:platform",
      "p1:fb",
      "p2:platform",
    ]);
  });

  it("is_byok_only drops the platform key for that provider; disabled keys are ignored", () => {
    const byok = [
      byokRow("p1", { id: "only", isByokOnly: true }),
      byokRow("p2", { id: "off", disabled: true }),
    ];
    expect(creds(planRoute(req(), context(catalog, { byok })))).toEqual(["p1:only", "p2:platform"]);
  });

  it("restrictions: allowed_models, allowed_api_key_hashes, allowed_user_ids", () => {
    const byok = [
      byokRow("p1", { id: "m", allowedModels: ["v/other"] }),
      byokRow("p1", { id: "k", allowedApiKeyHashes: ["kh"] }),
      byokRow("p1", { id: "u", allowedUserIds: ["someone-else"] }),
    ];
    expect(creds(planRoute(req(), context(catalog, { byok })))).toEqual([
      "p1:k",
      "p1:platform",
      "p2:platform",
    ]);
  });

  it("is_required without a usable key refuses the provider instead of using the platform key", () => {
    const byok = [byokRow("p1", { id: "r", isRequired: true, allowedApiKeyHashes: ["other"] })];
    const plan = planRoute(req(), context(catalog, { byok }));
    expect(creds(plan)).toEqual(["p2:platform"]);
    expect(plan.rejections[0]!.reason).toContain("requires a BYOK credential");
  });

  it("no platform key and no BYOK -> 503", () => {
    const e = refusal(() =>
      assertRoutable(planRoute(req(), context(catalog, { platformAvailable: () => false }))),
    );
    expect(e.status).toBe(503);
  });
});
