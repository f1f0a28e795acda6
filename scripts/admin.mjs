// Operator commands that have no HTTP operation: accounts, credits, the first management key.
// Usage: npm run admin -- <command> [--flags] [--remote]
import { accountSql, creditsSql, executeSql, keySql, newKey, query } from "./lib/d1.mjs";

const [command, ...rest] = process.argv.slice(2);
const flags = {};
for (let i = 0; i < rest.length; i++) {
  const name = rest[i].replace(/^--/, "");
  const next = rest[i + 1];
  if (next === undefined || next.startsWith("--")) flags[name] = true;
  else flags[name] = rest[++i];
}
const remote = Boolean(flags.remote);

function need(name) {
  if (flags[name] === undefined || flags[name] === true) {
    console.error(`--${name} is required`);
    process.exit(2);
  }
  return flags[name];
}

function accountWorkspace(accountId) {
  const [row] = query(
    `SELECT default_workspace_id AS ws FROM accounts WHERE id = '${accountId.replaceAll("'", "''")}'`,
    { remote },
  );
  if (!row) {
    console.error(`No account '${accountId}'`);
    process.exit(1);
  }
  if (!row.ws) {
    console.error(`Account '${accountId}' has no default workspace; pass --workspace`);
    process.exit(1);
  }
  return row.ws;
}

const commands = {
  "create-account"() {
    const name = need("name");
    const ids = {
      accountId: `acct_${crypto.randomUUID()}`,
      workspaceId: crypto.randomUUID(),
      userId: `user_${crypto.randomUUID()}`,
    };
    const statements = accountSql({ ...ids, name, email: flags.email ?? `${ids.userId}@accounts.local` });
    if (flags.credits)
      statements.push(creditsSql({ accountId: ids.accountId, usd: flags.credits, note: "initial" }));
    executeSql(statements, { remote });
    console.log(JSON.stringify(ids, null, 2));
  },
  "add-credits"() {
    const accountId = need("account");
    const usd = Number(need("usd"));
    if (!Number.isFinite(usd) || usd <= 0) {
      console.error("--usd must be a positive number");
      process.exit(2);
    }
    accountWorkspace(accountId);
    executeSql([creditsSql({ accountId, usd, note: flags.note ?? "admin" })], { remote });
    console.log(`Added $${usd} to ${accountId}`);
  },
  "create-management-key"() {
    const accountId = need("account");
    const workspaceId = flags.workspace ?? accountWorkspace(accountId);
    const [user] = query(
      `SELECT id FROM users WHERE account_id = '${accountId.replaceAll("'", "''")}' LIMIT 1`,
      { remote },
    );
    const key = newKey();
    executeSql(
      [
        keySql({
          key,
          accountId,
          workspaceId,
          userId: user?.id ?? null,
          name: flags.name ?? "management",
          management: true,
        }),
      ],
      { remote },
    );
    console.log(key);
  },
};

if (!commands[command]) {
  console.error(`Usage: npm run admin -- <command> [--remote]
  create-account --name NAME [--email EMAIL] [--credits USD]
  add-credits --account ID --usd AMOUNT [--note TEXT]
  create-management-key --account ID [--workspace ID] [--name NAME]`);
  process.exit(2);
}
commands[command]();
