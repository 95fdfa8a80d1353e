// @finsvc/client: the typed finsvc API client.
//
// The types (./schema.js) are generated from the published contract,
// openapi/finsvc.yaml, by openapi-typescript; requests go through
// openapi-fetch, so every path, parameter, body and response is checked by
// the compiler. createClient addresses one tenant and sends a bearer token on
// every request, as the Go client's finsvc.New does. Money (Decimal) never
// passes through a JS number: see parseJSON and stringifyJSON.
import openapiFetch from "openapi-fetch";
import type { Client } from "openapi-fetch";
import { isLosslessNumber, LosslessNumber, parse as losslessParse, stringify as losslessStringify } from "lossless-json";
import { decimalProperties } from "./decimal.gen.js";
import type { paths } from "./schema.js";

export type { paths, components, operations, webhooks } from "./schema.js";

/** A schema of the contract by name: `Schema<"Act">`. */
export type Schema<Name extends keyof import("./schema.js").components["schemas"]> =
  import("./schema.js").components["schemas"][Name];

/**
 * A money amount (`type: number, format: decimal` in the contract, e.g.
 * `credit_limit`): the JSON number's digits as a string, "999999999999999999.99".
 * A JS number cannot hold such amounts (it reads that one as 1e18), so the
 * client never turns money into one: createClient reads it from responses
 * and writes it into request bodies as the same number literal. Compute with
 * a decimal library (or BigInt on the cents), not with Number().
 */
export type Decimal = `${number}`;

/** The money properties of the contract, by name (generated from the spec). */
export { decimalProperties };

/**
 * JSON.parse for finsvc bodies (responses, webhook deliveries): money
 * properties become Decimal strings with every digit as sent; every other
 * number is the JS number JSON.parse makes of it.
 */
export function parseJSON(text: string): unknown {
  return losslessParse(text, (key, value) => {
    if (!isLosslessNumber(value)) return value;
    return decimalProperties.has(key) ? value.value : Number(value.value);
  });
}

/**
 * JSON.stringify for finsvc request bodies: a money property given as a
 * Decimal string is written as the number literal it holds (a string that
 * is not a number literal throws); everything else as JSON.stringify writes it.
 */
export function stringifyJSON(value: unknown): string {
  const out = losslessStringify(value, (key, v) =>
    decimalProperties.has(key) && typeof v === "string" ? new LosslessNumber(v) : v,
  );
  if (out === undefined) throw new Error("finsvc: nothing to send");
  return out;
}

// The response with every money property of its JSON body turned into a
// string, so that openapi-fetch's JSON.parse cannot round it.
async function exactMoney(res: Response): Promise<Response> {
  if (res.status === 204 || res.status === 304 || !/\bjson\b/i.test(res.headers.get("content-type") ?? "")) return res;
  const text = await res.text();
  let body = text;
  if (text.trim() !== "") {
    try {
      body = JSON.stringify(parseJSON(text));
    } catch {
      // Not JSON after all: openapi-fetch reports it as it is.
    }
  }
  const headers = new Headers(res.headers);
  headers.delete("content-length");
  headers.delete("content-encoding");
  return new Response(body, { status: res.status, statusText: res.statusText, headers });
}

/** The client createClient returns: GET, POST, PUT, PATCH, DELETE by path. */
export type FinsvcClient = Client<paths>;

export interface ClientOptions {
  /**
   * The service's address: "https://finsvc.example.com" (the tenant's host
   * is formed under it), a tenant host already ("http://demo.localhost:8080"),
   * or an IP address ("http://127.0.0.1:8080": dialled as given, with the
   * tenant's host name under baseDomain).
   */
  baseUrl: string;
  /** The tenant (organization slug), e.g. "demo". */
  tenant: string;
  /**
   * The OAuth access token, or a function that returns the current one
   * (called before every request, so it can refresh).
   */
  token: string | (() => string | Promise<string>);
  /** The domain tenant hosts live under when baseUrl is an IP address (default "localhost"). */
  baseDomain?: string;
  /** A fetch to send requests with instead of globalThis.fetch (for real hosts). */
  fetch?: (request: Request) => Promise<Response>;
}

const slug = /^[a-z0-9-]{2,63}$/;
const ipv4 = /^\d{1,3}(\.\d{1,3}){3}$/;

/** RFC 6761: *.localhost names are loopback, whatever the system resolver says. */
export function isLocalhost(host: string): boolean {
  const h = host.toLowerCase();
  return h === "localhost" || h.endsWith(".localhost");
}

/**
 * Where a tenant of the service at baseUrl is reached: the URL to request
 * (with the tenant's host in it, so that it is also the Host header) and,
 * when that host must not go through DNS, the address to dial instead.
 */
export function tenantAddress(baseUrl: string, tenant: string, baseDomain = "localhost"): { url: string; dial?: string } {
  if (!slug.test(tenant)) throw new Error(`finsvc: organization "${tenant}" is not a tenant slug ([a-z0-9-]{2,63})`);
  let u: URL;
  try {
    u = new URL(baseUrl);
  } catch {
    throw new Error(`finsvc: base URL "${baseUrl}" must be an absolute http(s) URL`);
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") throw new Error(`finsvc: base URL "${baseUrl}" must be an absolute http(s) URL`);
  const host = u.hostname.toLowerCase();
  const ip = ipv4.test(host) || host.startsWith("[");
  let dial: string | undefined;
  if (ip) {
    dial = host.replace(/^\[|\]$/g, "");
    u.hostname = `${tenant}.${baseDomain.toLowerCase()}`;
  } else if (!host.startsWith(`${tenant}.`)) {
    u.hostname = `${tenant}.${host}`;
  }
  if (!dial && isLocalhost(u.hostname)) dial = "127.0.0.1";
  u.search = "";
  u.hash = "";
  return { url: u.toString().replace(/\/+$/, ""), dial };
}

const loadUndici = () => import("undici");
type Undici = Awaited<ReturnType<typeof loadUndici>>;
let undici: Promise<Undici> | undefined;
const agents = new Map<string, InstanceType<Undici["Agent"]>>();

// An undici Agent whose resolver sends hostname to address. Node's fetch
// cannot be told to: it resolves *.localhost through the system resolver
// (often ENOTFOUND) and drops a hand-set Host header, so the only way to
// reach demo.localhost with the right Host is to keep the name in the URL
// and change where it is dialled. Loaded on first use, so that code for real
// hosts (and browsers) never needs undici.
async function dialer(address: string) {
  const u = await (undici ??= loadUndici());
  let agent = agents.get(address);
  if (!agent) {
    const family = address.includes(":") ? 6 : 4;
    agent = new u.Agent({
      connect: {
        lookup: (_host: string, opts: { all?: boolean }, cb: (...args: unknown[]) => void) =>
          opts?.all ? cb(null, [{ address, family }]) : cb(null, address, family),
      } as object,
    });
    agents.set(address, agent);
  }
  return { u, agent };
}

/**
 * fetch that dials every *.localhost name on 127.0.0.1 (for token requests
 * to a local `finsvc demo`; createClient does the same by itself). Other
 * hosts go through globalThis.fetch.
 */
export async function localhostFetch(input: string | URL, init: RequestInit = {}): Promise<Response> {
  const url = new URL(input);
  if (!isLocalhost(url.hostname)) return fetch(url, init);
  const { u, agent } = await dialer("127.0.0.1");
  return (await u.fetch(url, { ...(init as object), dispatcher: agent })) as unknown as Response;
}

/** Closes the connections localhostFetch and createClient keep to local hosts. */
export async function closeLocalConnections(): Promise<void> {
  const all = [...agents.values()];
  agents.clear();
  await Promise.all(all.map((a) => a.close()));
}

/**
 * A client of one tenant: `api.GET("/api/1.0/acts/{act_uuid}", { params: { path: { act_uuid } } })`
 * answers `{ data, error, response }`, typed by the contract.
 */
export function createClient(opts: ClientOptions): FinsvcClient {
  if (!opts.token) throw new Error("finsvc: a token is required");
  const { url, dial } = tenantAddress(opts.baseUrl, opts.tenant, opts.baseDomain);
  const token = typeof opts.token === "function" ? opts.token : () => opts.token as string;
  const send = async (req: Request): Promise<Response> => {
    req.headers.set("authorization", `Bearer ${await token()}`);
    if (!dial) return exactMoney(await (opts.fetch ?? fetch)(req));
    // openapi-fetch built a global Request; undici's fetch wants its own.
    const { u, agent } = await dialer(dial);
    const body = req.body ? await req.arrayBuffer() : undefined;
    const res = await u.fetch(req.url, { method: req.method, headers: [...req.headers], body, redirect: "manual", signal: req.signal, dispatcher: agent });
    return exactMoney(res as unknown as Response);
  };
  // The API never redirects; following one would resend the bearer token to
  // wherever it points.
  // Bodies go out through stringifyJSON, so money is sent as the literal.
  return openapiFetch<paths>({ baseUrl: url, fetch: send, redirect: "manual", bodySerializer: stringifyJSON });
}
