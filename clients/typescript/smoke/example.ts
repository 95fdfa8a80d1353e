// example.ts: run it where demo-data/ and tokens.json are (steps 1 to 4).
import { readFileSync, writeFileSync } from "node:fs";
import { closeLocalConnections, createClient, localhostFetch } from "@finsvc/client";
import type { Schema } from "@finsvc/client";

const demo = JSON.parse(readFileSync("demo-data/demo.json", "utf8"));
let tokens: Schema<"TokenResponse"> = JSON.parse(readFileSync("tokens.json", "utf8"));

// Step 5 (refresh with rotation); keep the new tokens, the old refresh token is spent.
// localhostFetch dials *.localhost on 127.0.0.1: Node's own fetch cannot reach demo.localhost.
const res = await localhostFetch(new URL("/api/oauth/token", demo.base_url), {
  method: "POST",
  body: new URLSearchParams({
    grant_type: "refresh_token", refresh_token: tokens.refresh_token,
    client_id: demo.client_id, client_secret: demo.client_secret,
  }),
});
if (!res.ok) throw new Error(`refresh: ${res.status} ${await res.text()}`);
tokens = (await res.json()) as Schema<"TokenResponse">;
writeFileSync("tokens.json", JSON.stringify(tokens));

// createClient addresses the tenant (demo.localhost, dialled on loopback too) and sends the token.
const api = createClient({ baseUrl: demo.base_url, tenant: demo.tenant, token: tokens.access_token });
const list = await api.GET("/api/1.0/acts", { params: { query: { limit: 1 } } });
if (!list.data) throw new Error(`GET /acts: ${list.response.status} ${list.error?.message}`);
const act_uuid = list.data.data[0]?.uuid ?? "";
const { data, error } = await api.GET("/api/1.0/acts/{act_uuid}", { params: { path: { act_uuid } } });
if (!data) throw new Error(`GET /acts/${act_uuid}: ${error?.message}`);
console.log(`act "${data.title}" (${data.status}) with ${data.data.length} data points`);
await closeLocalConnections(); // lets Node exit at once
