// The gateway console: a management key's view of its account, through the public API only.
// Everything shown is built with createElement and text nodes, never parsed from strings, so API data cannot become markup.

const KEY_STORAGE = "gateway-console-key";
const API = "/api/v1";
const DAYS = 30;

const app = document.getElementById("app");
const key = () => sessionStorage.getItem(KEY_STORAGE);

// ---- DOM helpers ----

/** An element with attributes (`on*` functions become listeners) and children (strings become text). */
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") el.addEventListener(name.slice(2), value);
    else el.setAttribute(name, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

/** Appends children, nested arrays flattened, null/undefined/false skipped, strings as text nodes. */
function append(el, ...children) {
  for (const child of children.flat(Number.POSITIVE_INFINITY)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

const SVG = "http://www.w3.org/2000/svg";
function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, String(value));
  append(el, children);
  return el;
}

function table(columns, rows, empty = "Nothing yet.") {
  if (rows.length === 0) return h("p", { class: "muted" }, empty);
  return h(
    "table",
    {},
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        columns.map((c) => h("th", { class: c.num ? "num" : undefined }, c.title)),
      ),
    ),
    h(
      "tbody",
      {},
      rows.map((row) =>
        h(
          "tr",
          {},
          columns.map((c) => h("td", { class: c.num ? "num" : undefined }, c.cell(row))),
        ),
      ),
    ),
  );
}

const usd = (n) =>
  n === null || n === undefined ? "–" : `$${Number(n).toFixed(n !== 0 && Math.abs(n) < 0.01 ? 6 : 2)}`;
const when = (iso) => (iso ? new Date(iso).toLocaleString() : "–");
const list = (a) => (a?.length ? a.join(", ") : "–");
const pill = (text, kind) => h("span", { class: `pill ${kind ?? ""}` }, text);

// ---- API ----

class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function api(path, { method = "GET", body } = {}) {
  const headers = { Authorization: `Bearer ${key()}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(`${API}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await res.json().catch(() => null);
  if (!res.ok) throw new ApiError(res.status, data?.error?.message ?? `HTTP ${res.status}`);
  return data;
}

const errorBox = (err) =>
  h("div", { class: "error", role: "alert" }, err instanceof Error ? err.message : String(err));

// ---- pages ----

const PAGES = {
  keys: { title: "Keys", render: keysPage },
  spend: { title: "Spend", render: spendPage },
  guardrails: { title: "Guardrails", render: guardrailsPage },
  byok: { title: "BYOK", render: byokPage },
  generations: { title: "Generations", render: generationsPage },
  videos: { title: "Videos", render: videosPage },
};

async function keysPage(main) {
  const { data: keys } = await api("/keys?include_disabled=true");
  const created = h("div");
  const form = h(
    "form",
    { class: "inline", id: "create-key" },
    h(
      "label",
      {},
      "Name",
      h("input", { name: "name", required: true, maxlength: 200, placeholder: "my app" }),
    ),
    h(
      "label",
      {},
      "Cap (USD)",
      h("input", { name: "limit", type: "number", min: 0, step: "0.01", placeholder: "none" }),
    ),
    h(
      "label",
      {},
      "Cap resets",
      h(
        "select",
        { name: "limit_reset" },
        h("option", { value: "" }, "never"),
        ["daily", "weekly", "monthly"].map((r) => h("option", { value: r }, r)),
      ),
    ),
    h("button", { type: "submit" }, "Create key"),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const f = new FormData(form);
    const body = { name: String(f.get("name")) };
    if (f.get("limit") !== "") body.limit = Number(f.get("limit"));
    if (f.get("limit_reset")) body.limit_reset = String(f.get("limit_reset"));
    try {
      const res = await api("/keys", { method: "POST", body });
      await render();
      document
        .getElementById("created-key")
        ?.replaceChildren(
          h("div", { class: "notice" }, "New key (shown only now): ", h("code", { id: "new-key" }, res.key)),
        );
    } catch (err) {
      created.replaceChildren(errorBox(err));
    }
  });

  const capForm = (k) => {
    const f = h(
      "form",
      { class: "inline" },
      h("input", {
        name: "limit",
        type: "number",
        min: 0,
        step: "0.01",
        value: k.limit ?? "",
        placeholder: "none",
        "aria-label": `Cap of ${k.name}`,
        style: "width:90px",
      }),
      h("button", { type: "submit", class: "secondary" }, "Set cap"),
    );
    f.addEventListener("submit", async (event) => {
      event.preventDefault();
      const value = new FormData(f).get("limit");
      await act(() =>
        api(`/keys/${k.hash}`, { method: "PATCH", body: { limit: value === "" ? null : Number(value) } }),
      );
    });
    return f;
  };
  const toggle = (k) =>
    h(
      "button",
      {
        class: "secondary",
        onclick: () =>
          act(() => api(`/keys/${k.hash}`, { method: "PATCH", body: { disabled: !k.disabled } })),
      },
      k.disabled ? "Enable" : "Disable",
    );

  append(
    main,
    h("h1", {}, "API keys"),
    h(
      "section",
      { class: "card" },
      h("h2", {}, "Create a key"),
      form,
      created,
      h("div", { id: "created-key" }),
    ),
    h(
      "section",
      { class: "card" },
      table(
        [
          { title: "Name", cell: (k) => [k.name, k.is_management_key ? [" ", pill("management")] : null] },
          { title: "Key", cell: (k) => h("code", {}, k.label) },
          { title: "Status", cell: (k) => (k.disabled ? pill("disabled", "bad") : pill("active", "good")) },
          { title: "Usage today", num: true, cell: (k) => usd(k.usage_daily) },
          { title: "Usage month", num: true, cell: (k) => usd(k.usage_monthly) },
          { title: "Usage total", num: true, cell: (k) => usd(k.usage) },
          {
            title: "Cap",
            num: true,
            cell: (k) =>
              k.limit === null ? "none" : `${usd(k.limit)}${k.limit_reset ? ` / ${k.limit_reset}` : ""}`,
          },
          { title: "Remaining", num: true, cell: (k) => usd(k.limit_remaining) },
          { title: "", cell: (k) => [capForm(k), toggle(k)] },
        ],
        keys,
      ),
    ),
  );
}

/** Runs a change, then redraws the page; an API refusal is shown above the page. */
async function act(change) {
  try {
    await change();
    await render();
  } catch (err) {
    document.querySelector("main")?.prepend(errorBox(err));
  }
}

/** The last 30 UTC days, oldest first, as YYYY-MM-DD. */
function lastDays() {
  const days = [];
  const today = new Date();
  for (let i = DAYS - 1; i >= 0; i--) {
    days.push(
      new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate() - i))
        .toISOString()
        .slice(0, 10),
    );
  }
  return days;
}

/** A bar chart of USD per day: one bar per day of the window, the top value and the first and last day labelled. */
function chart(title, perDay, days) {
  const width = 330;
  const height = 120;
  const top = 14;
  const bottom = 18;
  const values = days.map((d) => perDay.get(d) ?? 0);
  const max = Math.max(...values, 0);
  const total = values.reduce((a, b) => a + b, 0);
  const slot = width / days.length;
  const bars = values.map((v, i) => {
    const barHeight = max > 0 ? ((height - top - bottom) * v) / max : 0;
    return s(
      "rect",
      {
        class: "bar",
        x: (i * slot + 1).toFixed(1),
        y: (height - bottom - barHeight).toFixed(1),
        width: Math.max(slot - 2, 1).toFixed(1),
        height: barHeight.toFixed(1),
      },
      s("title", {}, `${days[i]}: ${usd(v)}`),
    );
  });
  return h(
    "div",
    { class: "chart", "data-series": title },
    h("h3", {}, title, " ", h("span", { class: "muted" }, `${usd(total)} in ${DAYS} days`)),
    s(
      "svg",
      { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": `${title}: spend per day` },
      s("line", { class: "axis", x1: 0, x2: width, y1: height - bottom, y2: height - bottom }),
      bars,
      s("text", { x: 0, y: 10 }, `max ${usd(max)}/day`),
      s("text", { x: 0, y: height - 4 }, days[0]),
      s("text", { x: width, y: height - 4, "text-anchor": "end" }, days[days.length - 1]),
    ),
  );
}

/** Sums activity rows' spend (credits and BYOK) per series and day. */
function series(rows, nameOf) {
  const out = new Map();
  for (const r of rows) {
    const name = nameOf(r);
    if (!out.has(name)) out.set(name, new Map());
    const days = out.get(name);
    days.set(r.date, (days.get(r.date) ?? 0) + r.usage + r.byok_usage_inference);
  }
  return out;
}

async function spendPage(main) {
  const days = lastDays();
  const [{ data: rows }, { data: keys }] = await Promise.all([
    api("/activity"),
    api("/keys?include_disabled=true"),
  ]);
  // Per key: the activity of each key that spent anything (the list carries its 30-day usage).
  const perKey = await Promise.all(
    keys.map(async (k) => [k, (await api(`/activity?api_key_hash=${encodeURIComponent(k.hash)}`)).data]),
  );
  const byModel = series(rows, (r) => r.model);
  const all = series(rows, () => "All keys and models").get("All keys and models") ?? new Map();
  append(
    main,
    h("h1", {}, "Spend per day, last 30 days"),
    h(
      "p",
      { class: "muted" },
      "Credits and BYOK spend in USD, per UTC day, from the generation records (GET /activity).",
    ),
    h(
      "section",
      { class: "card" },
      h("div", { class: "grid", id: "chart-total" }, chart("All keys and models", all, days)),
    ),
    h("h2", {}, "Per key"),
    h(
      "section",
      { class: "card" },
      h(
        "div",
        { class: "grid", id: "charts-keys" },
        perKey
          .filter(([, r]) => r.length > 0)
          .map(([k, r]) => chart(`${k.name} (${k.label})`, series(r, () => "k").get("k"), days)),
      ),
      perKey.some(([, r]) => r.length > 0)
        ? null
        : h("p", { class: "muted" }, "No spend in the last 30 days."),
    ),
    h("h2", {}, "Per model"),
    h(
      "section",
      { class: "card" },
      h(
        "div",
        { class: "grid", id: "charts-models" },
        [...byModel].map(([model, perDay]) => chart(model, perDay, days)),
      ),
      byModel.size ? null : h("p", { class: "muted" }, "No spend in the last 30 days."),
    ),
  );
}

const csv = (text) => {
  const items = text
    .split(",")
    .map((x) => x.trim())
    .filter(Boolean);
  return items.length ? items : null;
};

function guardrailForm(g) {
  const field = (label, name, value, attrs = {}) =>
    h("label", {}, label, h("input", { name, value: value ?? "", ...attrs }));
  const form = h(
    "form",
    { id: `guardrail-${g.id}`, "data-guardrail": g.id },
    h(
      "div",
      { class: "fields" },
      field("Name", "name", g.name, { required: true }),
      field("Description", "description", g.description),
      field("Budget (USD, empty for none)", "limit_usd", g.limit_usd, { type: "number", step: "any" }),
      h(
        "label",
        {},
        "Budget resets",
        h(
          "select",
          { name: "reset_interval" },
          h("option", { value: "" }, "never"),
          ["daily", "weekly", "monthly"].map((r) =>
            h("option", { value: r, selected: g.reset_interval === r }, r),
          ),
        ),
      ),
      field(
        "Allowed providers (comma-separated)",
        "allowed_providers",
        list(g.allowed_providers).replace("–", ""),
      ),
      field("Ignored providers", "ignored_providers", list(g.ignored_providers).replace("–", "")),
      field("Allowed models", "allowed_models", list(g.allowed_models).replace("–", "")),
      field("Ignored models", "ignored_models", list(g.ignored_models).replace("–", "")),
    ),
    h(
      "label",
      {},
      'Custom content filters (JSON: [{"pattern", "action": block | redact | flag, "label"}])',
      h(
        "textarea",
        { name: "content_filters" },
        g.content_filters ? JSON.stringify(g.content_filters, null, 1) : "",
      ),
    ),
    h("div", { class: "result" }),
    h("button", { type: "submit" }, "Save"),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const f = new FormData(form);
    const out = form.querySelector(".result");
    const body = {
      name: String(f.get("name")),
      description: f.get("description") ? String(f.get("description")) : null,
      limit_usd: f.get("limit_usd") === "" ? null : Number(f.get("limit_usd")),
      reset_interval: f.get("reset_interval") ? String(f.get("reset_interval")) : null,
      allowed_providers: csv(String(f.get("allowed_providers"))),
      ignored_providers: csv(String(f.get("ignored_providers"))),
      allowed_models: csv(String(f.get("allowed_models"))),
      ignored_models: csv(String(f.get("ignored_models"))),
    };
    const filters = String(f.get("content_filters")).trim();
    try {
      body.content_filters = filters ? JSON.parse(filters) : null;
    } catch {
      out.replaceChildren(errorBox("Content filters must be JSON"));
      return;
    }
    try {
      await api(`/guardrails/${g.id}`, { method: "PATCH", body });
      out.replaceChildren(h("div", { class: "notice" }, "Saved."));
    } catch (err) {
      // The API's own validation message, word for word.
      out.replaceChildren(errorBox(err));
    }
  });
  return form;
}

async function guardrailsPage(main) {
  const { data } = await api("/guardrails?limit=100");
  const create = h(
    "form",
    { class: "inline", id: "create-guardrail" },
    h("label", {}, "Name", h("input", { name: "name", required: true })),
    h("button", { type: "submit" }, "Create guardrail"),
  );
  create.addEventListener("submit", (event) => {
    event.preventDefault();
    act(() =>
      api("/guardrails", { method: "POST", body: { name: String(new FormData(create).get("name")) } }),
    );
  });
  append(
    main,
    h("h1", {}, "Guardrails"),
    h("section", { class: "card" }, create),
    data.length === 0 ? h("p", { class: "muted" }, "No guardrails yet.") : null,
    data.map((g) =>
      h(
        "section",
        { class: "card" },
        h("h2", {}, g.name, " ", h("span", { class: "muted" }, g.id)),
        h(
          "p",
          { class: "muted" },
          `Regions: ${list(g.allowed_data_regions)} · built-in filters: ${list((g.content_filter_builtins ?? []).map((b) => `${b.slug} (${b.action})`))}`,
        ),
        guardrailForm(g),
      ),
    ),
  );
}

async function byokPage(main) {
  const { data } = await api("/byok?limit=100");
  append(
    main,
    h("h1", {}, "Provider keys (BYOK)"),
    h("p", { class: "muted" }, "Keys are stored encrypted and never shown; only their masked labels are."),
    h(
      "section",
      { class: "card" },
      table(
        [
          { title: "Provider", cell: (b) => b.provider },
          { title: "Name", cell: (b) => b.name },
          { title: "Key", cell: (b) => h("code", {}, b.label) },
          { title: "Status", cell: (b) => (b.disabled ? pill("disabled", "bad") : pill("active", "good")) },
          {
            title: "Mode",
            cell: (b) => [
              b.is_byok_only ? "BYOK only" : "with platform keys",
              b.is_fallback ? ", fallback" : "",
            ],
          },
          { title: "Workspace", cell: (b) => h("code", {}, b.workspace_id) },
        ],
        data,
        "No provider keys.",
      ),
    ),
  );
}

async function generationsPage(main) {
  const params = new URLSearchParams(location.hash.split("?")[1] ?? "");
  const [{ data: keys }] = await Promise.all([api("/keys?include_disabled=true")]);
  const query = new URLSearchParams({ limit: "50" });
  for (const name of ["model", "status", "api_key_hash", "offset"])
    if (params.get(name)) query.set(name, params.get(name));
  const { data, next_offset } = await api(`/generations?${query}`);
  const labels = new Map(keys.map((k) => [k.hash, `${k.name} (${k.label})`]));
  const filters = h(
    "form",
    { class: "inline", id: "generation-filters" },
    h(
      "label",
      {},
      "Model",
      h("input", { name: "model", value: params.get("model") ?? "", placeholder: "any" }),
    ),
    h(
      "label",
      {},
      "Status",
      h(
        "select",
        { name: "status" },
        h("option", { value: "" }, "any"),
        ["completed", "failed", "cancelled"].map((st) =>
          h("option", { value: st, selected: params.get("status") === st }, st),
        ),
      ),
    ),
    h(
      "label",
      {},
      "Key",
      h(
        "select",
        { name: "api_key_hash" },
        h("option", { value: "" }, "any"),
        keys.map((k) =>
          h(
            "option",
            { value: k.hash, selected: params.get("api_key_hash") === k.hash },
            `${k.name} (${k.label})`,
          ),
        ),
      ),
    ),
    h("button", { type: "submit" }, "Filter"),
  );
  filters.addEventListener("submit", (event) => {
    event.preventDefault();
    const chosen = new URLSearchParams();
    for (const [name, value] of new FormData(filters)) if (value) chosen.set(name, String(value));
    location.hash = `#generations?${chosen}`;
  });
  const more =
    next_offset === null
      ? null
      : h(
          "a",
          {
            href: `#generations?${new URLSearchParams({ ...Object.fromEntries(params), offset: String(next_offset) })}`,
          },
          "Older →",
        );
  append(
    main,
    h("h1", {}, "Recent generations"),
    h("section", { class: "card" }, filters),
    h(
      "section",
      { class: "card" },
      table(
        [
          { title: "When", cell: (g) => when(g.created_at) },
          { title: "Model", cell: (g) => g.model },
          { title: "Provider", cell: (g) => g.provider_name ?? "–" },
          { title: "Status", cell: (g) => pill(g.status, g.status === "completed" ? "good" : "bad") },
          {
            title: "Tokens in/out",
            num: true,
            cell: (g) => `${g.tokens_prompt ?? "–"} / ${g.tokens_completion ?? "–"}`,
          },
          { title: "Cost", num: true, cell: (g) => usd(g.total_cost) },
          {
            title: "Key",
            cell: (g) => labels.get(g.api_key_hash) ?? h("code", {}, g.api_key_hash.slice(0, 12)),
          },
          { title: "Id", cell: (g) => h("code", {}, g.id) },
        ],
        data,
        "No generations match.",
      ),
      more,
    ),
  );
}

async function videosPage(main) {
  const { data } = await api("/videos?limit=100");
  append(
    main,
    h("h1", {}, "Video jobs"),
    h("p", { class: "muted" }, "Jobs submitted by keys of this key's workspace."),
    h(
      "section",
      { class: "card" },
      table(
        [
          { title: "Submitted", cell: (j) => when(j.created_at) },
          { title: "Model", cell: (j) => j.model },
          { title: "Provider", cell: (j) => j.provider_name ?? "–" },
          {
            title: "Status",
            cell: (j) =>
              pill(j.status, j.status === "completed" ? "good" : j.status === "failed" ? "bad" : ""),
          },
          { title: "Cost", num: true, cell: (j) => (j.usage ? usd(j.usage.cost) : "–") },
          { title: "Error", cell: (j) => j.error ?? "" },
          { title: "Id", cell: (j) => h("code", {}, j.id) },
        ],
        data,
        "No video jobs.",
      ),
    ),
  );
}

// ---- shell ----

function signIn(message) {
  const form = h(
    "form",
    { class: "card", id: "signin" },
    h("h1", {}, "Gateway console"),
    h(
      "p",
      { class: "muted" },
      "Sign in with a management key. It stays in this tab (session storage) and is sent only to this gateway's API.",
    ),
    message ? errorBox(message) : null,
    h(
      "label",
      {},
      "Management key",
      h("input", { name: "key", type: "password", autocomplete: "off", required: true }),
    ),
    h("p", {}, h("button", { type: "submit" }, "Sign in")),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    sessionStorage.setItem(KEY_STORAGE, String(new FormData(form).get("key")).trim());
    try {
      const { data } = await api("/key");
      if (!data.is_management_key)
        throw new Error("That is a regular API key; the console needs a management key.");
      if (!location.hash) location.hash = "#keys";
      await render();
    } catch (err) {
      sessionStorage.removeItem(KEY_STORAGE);
      signIn(err.status === 401 ? "That key is not valid." : err.message);
    }
  });
  app.replaceChildren(h("div", { class: "signin" }, form));
}

async function render() {
  if (!key()) return signIn();
  const name = (location.hash.slice(1).split("?")[0] || "keys").toLowerCase();
  const page = PAGES[name] ?? PAGES.keys;
  const main = h("main", { "aria-busy": "true" });
  const signOut = h(
    "a",
    {
      href: "#",
      onclick: (e) => {
        e.preventDefault();
        sessionStorage.removeItem(KEY_STORAGE);
        signIn();
      },
    },
    "Sign out",
  );
  app.replaceChildren(
    h(
      "header",
      {},
      h("strong", {}, "Gateway console"),
      h(
        "nav",
        {},
        Object.entries(PAGES).map(([id, p]) =>
          h("a", { href: `#${id}`, "aria-current": PAGES[name] === p ? "page" : undefined }, p.title),
        ),
      ),
      h("span", { class: "who" }, signOut),
    ),
    main,
  );
  try {
    await page.render(main);
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) {
      sessionStorage.removeItem(KEY_STORAGE);
      return signIn("The key stopped working; sign in again.");
    }
    append(main, errorBox(err));
  }
  main.setAttribute("aria-busy", "false");
}

window.addEventListener("hashchange", render);
render();
