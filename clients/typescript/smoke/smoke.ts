// Smoke test of the @finsvc/client package against a live `finsvc demo`.
//
// smoke.sh installs the packed tarball into a scratch project outside the
// repository and compiles this file there, so it sees only what an
// integrator sees: the package's exports map and its declarations. It runs
// the OAuth authorization-code flow (login, consent, code, token exchange at
// the token endpoint, with PKCE and state checked), then calls the API
// through createClient: /me, the client list, one act with its data points,
// a 404, and a refresh-token rotation. Any deviation exits non-zero. It
// leaves the last tokens in ./tokens.json, as the README's curl steps do,
// for the README's TypeScript example that smoke.sh runs next.
//
// Usage: node dist/smoke.js <path to demo.json>
import { readFileSync, writeFileSync } from "node:fs";
import { createHash, randomBytes } from "node:crypto";
import { closeLocalConnections, createClient, localhostFetch, parseJSON, stringifyJSON, tenantAddress } from "@finsvc/client";
import type { Decimal, Schema } from "@finsvc/client";
import type { components } from "@finsvc/client/schema";

type Demo = {
  base_url: string;
  tenant: string;
  admin_email: string;
  admin_password: string;
  client_id: string;
  client_secret: string;
  redirect_uri: string;
};

// Token and sign-in requests go to demo.localhost, which the system
// resolver may not know: localhostFetch dials it on loopback.
const httpFetch = localhostFetch;

function fail(msg: string): never {
  throw new Error(msg);
}

function check(cond: unknown, msg: string): asserts cond {
  if (!cond) fail(msg);
}

const b64url = (b: Buffer) => b.toString("base64url");

// A minimal cookie jar: the session cookie set by /login.
class Jar {
  private cookies = new Map<string, string>();
  take(res: { headers: { getSetCookie(): string[] } }) {
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(";");
      const i = pair!.indexOf("=");
      this.cookies.set(pair!.slice(0, i).trim(), pair!.slice(i + 1).trim());
    }
  }
  header() {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
  }
}

// Parse the first <form> of a page: its action, method and input values.
function parseForm(html: string, pick?: (form: string) => boolean) {
  const forms = [...html.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/gi)];
  const form = forms.find((f) => (pick ? pick(f[0]) : true)) ?? fail(`no form in page: ${html.slice(0, 300)}`);
  const attr = (s: string, name: string) => new RegExp(`${name}\\s*=\\s*"([^"]*)"`, "i").exec(s)?.[1];
  const fields = new Map<string, string>();
  for (const m of form[2]!.matchAll(/<(input|button)\b([^>]*)>/gi)) {
    const name = attr(m[2]!, "name");
    if (!name) continue;
    const type = (attr(m[2]!, "type") ?? "").toLowerCase();
    if (m[1]!.toLowerCase() === "button" || type === "submit") continue;
    fields.set(name, unescapeHTML(attr(m[2]!, "value") ?? ""));
  }
  return { action: unescapeHTML(attr(form[1]!, "action") ?? ""), fields };
}

function unescapeHTML(s: string) {
  return s.replace(/&amp;/g, "&").replace(/&#43;/g, "+").replace(/&#39;/g, "'").replace(/&quot;/g, '"').replace(/&lt;/g, "<").replace(/&gt;/g, ">");
}

async function authorize(demo: Demo): Promise<{ code: string; verifier: string }> {
  const jar = new Jar();
  const state = b64url(randomBytes(16));
  const verifier = b64url(randomBytes(32));
  const challenge = b64url(createHash("sha256").update(verifier).digest());
  const q = new URLSearchParams({
    client_id: demo.client_id,
    redirect_uri: demo.redirect_uri,
    response_type: "code",
    state,
    scope: "clients:read clients:write acts:read acts:write offline_access",
    code_challenge: challenge,
    code_challenge_method: "S256",
  });
  let url = new URL(`/oauth/authorize?${q}`, demo.base_url).toString();
  for (let hop = 0; hop < 10; hop++) {
    const res = await httpFetch(url, { redirect: "manual", headers: { cookie: jar.header() } });
    jar.take(res);
    if (res.status === 302 || res.status === 303) {
      const loc = new URL(res.headers.get("location") ?? fail("redirect without Location"), url);
      if (loc.toString().startsWith(demo.redirect_uri)) {
        check(loc.searchParams.get("state") === state, `state changed: ${loc.searchParams.get("state")}`);
        const code = loc.searchParams.get("code") ?? fail(`no code: ${loc}`);
        return { code, verifier };
      }
      url = loc.toString();
      continue;
    }
    const html = await res.text();
    check(res.status === 200, `GET ${url}: ${res.status} ${html.slice(0, 300)}`);
    const isLogin = /type\s*=\s*"password"/i.test(html);
    const form = parseForm(html, isLogin ? undefined : (f) => /name\s*=\s*"decision"|value\s*=\s*"allow"/i.test(f));
    const body = new URLSearchParams();
    for (const [k, v] of form.fields) body.set(k, v);
    if (isLogin) {
      for (const k of form.fields.keys()) {
        if (/email|user/i.test(k)) body.set(k, demo.admin_email);
        if (/pass/i.test(k)) body.set(k, demo.admin_password);
      }
    } else {
      body.set("decision", "allow");
    }
    const action = new URL(form.action || url, url).toString();
    const post = await httpFetch(action, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", cookie: jar.header() },
      body: body.toString(),
    });
    jar.take(post);
    if (post.status !== 302 && post.status !== 303) fail(`POST ${action}: ${post.status} ${(await post.text()).slice(0, 300)}`);
    const loc = new URL(post.headers.get("location") ?? fail("no Location"), action);
    if (loc.toString().startsWith(demo.redirect_uri)) {
      check(loc.searchParams.get("state") === state, "state changed on the consent redirect");
      check(!loc.searchParams.get("error"), `authorization failed: ${loc}`);
      return { code: loc.searchParams.get("code") ?? fail(`no code: ${loc}`), verifier };
    }
    url = loc.toString();
  }
  fail("too many redirects in the authorization flow");
}

type Tokens = components["schemas"]["TokenResponse"];
// The same type through the package's Schema helper.
const _same: Schema<"TokenResponse"> | undefined = undefined as Tokens | undefined;
void _same;

async function token(demo: Demo, body: Record<string, string>): Promise<Tokens> {
  const res = await httpFetch(new URL("/api/oauth/token", demo.base_url).toString(), {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json" },
    body: JSON.stringify({ client_id: demo.client_id, client_secret: demo.client_secret, ...body }),
  });
  const json = (await res.json()) as Tokens & { error?: string };
  check(res.status === 200, `token endpoint: ${res.status} ${JSON.stringify(json)}`);
  check(json.access_token && json.refresh_token && json.expires_in > 0, `incomplete token response ${JSON.stringify(json)}`);
  return json;
}

async function main() {
  const path = process.argv[2] ?? fail("usage: smoke <demo.json>");
  const demo = JSON.parse(readFileSync(path, "utf8")) as Demo;

  const { code, verifier } = await authorize(demo);
  const first = await token(demo, { grant_type: "authorization_code", code, redirect_uri: demo.redirect_uri, code_verifier: verifier });
  console.log(`token: issued (expires_in ${first.expires_in}s, scope "${first.scope}")`);

  const api = createClient({ baseUrl: demo.base_url, tenant: demo.tenant, token: first.access_token });
  // The same tenant addressed by IP: dialled as given, with the tenant's host name.
  const byIP = createClient({ baseUrl: demo.base_url.replace(`${demo.tenant}.localhost`, "127.0.0.1"), tenant: demo.tenant, token: async () => first.access_token });
  check(tenantAddress("https://finsvc.example.com", "acme").url === "https://acme.finsvc.example.com", "tenant host under a domain");

  const me = await api.GET("/api/1.0/me");
  check(me.response.status === 200 && me.data, `GET /me: ${me.response.status} ${JSON.stringify(me.error)}`);
  check(me.data.organization === demo.tenant, `me.organization = ${me.data.organization}`);
  console.log(`me: ${me.data.email} (${me.data.role}) in ${me.data.organization}`);
  const me2 = await byIP.GET("/api/1.0/me");
  check(me2.response.status === 200 && me2.data?.organization === demo.tenant, `GET /me by IP: ${me2.response.status} ${JSON.stringify(me2.error)}`);

  const clients = await api.GET("/api/1.0/clients", { params: { query: { page: 1, limit: 5 } } });
  check(clients.response.status === 200 && clients.data, `GET /clients: ${clients.response.status} ${JSON.stringify(clients.error)}`);
  check(clients.data.data.length > 0 && clients.data.meta.total >= clients.data.data.length, "the demo has clients");
  console.log(`clients: ${clients.data.data.length} of ${clients.data.meta.total}, first ${clients.data.data[0]!.company_name}`);

  // Money never passes through a JS number, which reads 99999999999999999.99
  // as 1e17: it goes out as the number literal and comes back with every
  // digit, as a Decimal string. The service refuses a string where the
  // contract says number, so a 201 also shows it went out as a number.
  check(Number("99999999999999999.99") === 1e17, "a JS number rounds the amount (the reason for Decimal)");
  check(stringifyJSON({ credit_limit: "99999999999999999.99", n: 1.5 }) === '{"credit_limit":99999999999999999.99,"n":1.5}', "stringifyJSON writes money as its literal");
  const parsed = parseJSON('{"credit_limit":999999999999999999.99,"id":7}') as { credit_limit: unknown; id: unknown };
  check(parsed.credit_limit === "999999999999999999.99" && parsed.id === 7, `parseJSON: ${JSON.stringify(parsed)}`);
  const big: Decimal = "99999999999999999.99";
  const created = await api.POST("/api/1.0/clients", {
    body: { company_name: "Exact Money AS", org_number: `TS-${randomBytes(6).toString("hex")}`, country: "NO", credit_limit: big },
  });
  check(created.response.status === 201 && created.data, `POST /clients: ${created.response.status} ${JSON.stringify(created.error)}`);
  check(created.data.credit_limit === big, `created credit_limit ${created.data.credit_limit}, want ${big}`);
  const id = created.data.id;
  const read = await api.GET("/api/1.0/clients/{id}", { params: { path: { id } } });
  check(read.data?.credit_limit === big && typeof read.data.credit_limit === "string", `read back ${read.data?.credit_limit}`);
  const max: Decimal = "999999999999999999.99";
  const raised = await api.PATCH("/api/1.0/clients/{id}", { params: { path: { id } }, body: { credit_limit: max } });
  check(raised.response.status === 200 && raised.data?.credit_limit === max, `PATCH credit_limit: ${raised.response.status} ${raised.data?.credit_limit ?? JSON.stringify(raised.error)}`);
  const over = await api.PATCH("/api/1.0/clients/{id}", { params: { path: { id } }, body: { credit_limit: "1000000000000000000.00" } });
  check(over.response.status === 400 && over.error?.errors?.credit_limit, `one cent over the maximum: ${over.response.status} ${JSON.stringify(over.error)}`);
  const after = await api.GET("/api/1.0/clients/{id}", { params: { path: { id } } });
  check(after.data?.credit_limit === max, `after the refused change: ${after.data?.credit_limit}`);
  console.log(`money: ${big} and ${max} sent and read back exactly`);

  const acts = await api.GET("/api/1.0/acts", { params: { query: { limit: 1 } } });
  check(acts.response.status === 200 && acts.data && acts.data.data.length > 0, `GET /acts: ${acts.response.status}`);
  const uuid = acts.data.data[0]!.uuid;
  const act = await api.GET("/api/1.0/acts/{act_uuid}", { params: { path: { act_uuid: uuid } } });
  check(act.response.status === 200 && act.data, `GET /acts/${uuid}: ${act.response.status}`);
  check(act.data.data.length > 0, "the act has data points");
  console.log(`act: "${act.data.title}" (${act.data.status}) with ${act.data.data.length} data points`);

  const missing = await api.GET("/api/1.0/clients/{id}", { params: { path: { id: 999999 } } });
  check(missing.response.status === 404 && missing.error?.message, "a missing client is a 404 in the error format");

  const second = await token(demo, { grant_type: "refresh_token", refresh_token: first.refresh_token });
  check(second.refresh_token !== first.refresh_token, "refresh rotates the refresh token");
  const reuse = await httpFetch(new URL("/api/oauth/token", demo.base_url).toString(), {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: first.refresh_token, client_id: demo.client_id, client_secret: demo.client_secret }).toString(),
  });
  const reuseBody = (await reuse.json()) as { error?: string };
  check(reuse.status === 400 && reuseBody.error === "invalid_grant", `reused refresh token: ${reuse.status} ${JSON.stringify(reuseBody)}`);
  console.log("refresh: rotated; reuse refused with invalid_grant");
  // Reuse revoked the whole grant (second included): sign in again, as the
  // README's steps 3 and 4 do, and leave those tokens for example.ts.
  const again = await authorize(demo);
  const fresh = await token(demo, { grant_type: "authorization_code", code: again.code, redirect_uri: demo.redirect_uri, code_verifier: again.verifier });
  writeFileSync("tokens.json", JSON.stringify(fresh, null, 2));
  console.log("typescript smoke: 8 passed, 0 failed");
}

main()
  .catch((err) => {
    console.error(`typescript smoke failed: ${err instanceof Error ? err.message : err}`);
    process.exitCode = 1;
  })
  .finally(closeLocalConnections);
