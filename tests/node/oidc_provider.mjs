// A real OpenID provider on loopback for the identity-provider tests: panva's oidc-provider 9.13.3
// (OpenID certified), issuing access tokens for resource indicators (RFC 8707) by the
// client_credentials grant, so tests drive it headlessly.
//
//   node oidc_provider.mjs '<json config>'   (MCP_TEST_NODE_MODULES names node_modules)
//
// Sign-ins (the authorization code) are scripted: the interaction route logs in `account` and
// grants what the client asked for (OIDC scopes, offline_access included, and resource scopes),
// so a client that follows redirects with a cookie jar signs in headlessly. oidc-provider grants
// offline_access (a refresh token) only when the request says prompt=consent.
//
// Config (every key optional):
//   path      the issuer's path, e.g. "/realms/demo" (Keycloak's shape) or "/" (Auth0's trailing slash);
//             the provider is mounted there
//   host      the host named in the issuer ("127.0.0.1"; "localhost" publishes an issuer other than
//             the 127.0.0.1 URL tests reach it at)
//   format    "jwt" (signed with alg) or "opaque" (introspected) access tokens
//   alg       "ES256" or "RS256", the access tokens' signature
//   scope     the scopes a resource server accepts ("mcp:tools mcp:admin")
//   clients   [{client_id, client_secret, claims}]: confidential clients allowed client_credentials;
//             claims are added to each access token of theirs (extraTokenClaims), like the
//             vendor claims (groups, email, org_id, realm_access...) tests need
//   public_clients [{client_id, redirect_uris}]: public native clients (no secret, PKCE) allowed the
//             authorization code and refresh_token grants
//   code_clients [{client_id, client_secret, redirect_uris}]: confidential clients of the
//             authorization code and refresh_token grants (our OAuth proxy as the IdP's client)
//   account_claims  what the ID token and userinfo say of `account` beyond sub (email,
//             email_verified, name, groups), by the scopes openid, email and profile
//   registration  true: dynamic client registration (RFC 7591) at /reg
//   account   the subject the scripted sign-in logs in ("alice")
//   dpop      {nonce: true|false}: DPoP (RFC 9449), nonces required when nonce is true
//   id_token_claims  account claims put in every ID token (with openid), as the vendors do:
//             Entra's tid, oid, groups, roles; Cognito's cognito:groups, email
//   no_iss    true: no RFC 9207 iss on authorization responses (Entra sends none)
//   routes    oidc-provider's routes renamed (Cognito's /oauth2/authorize, /oauth2/token...)
// Binds 127.0.0.1 on a free port and prints one JSON line: {"issuer", "url"}, url being the
// issuer reached through 127.0.0.1. Every resource indicator gets tokens with aud = itself.
import { createServer } from "node:http";
import { generateKeyPairSync } from "node:crypto";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const modules = process.env.MCP_TEST_NODE_MODULES;
const { default: Provider } = await import(pathToFileURL(join(modules, "oidc-provider/lib/index.js")).href);

const config = JSON.parse(process.argv[2] || "{}");
const path = config.path || "";
const format = config.format || "jwt";
const alg = config.alg || "ES256";
const scope = config.scope || "mcp:tools mcp:admin";
const account = config.account || "alice";
const accountClaims = config.account_claims || {};
const idTokenClaims = config.id_token_claims || [];
const claimsOf = new Map((config.clients || []).map((client) => [client.client_id, client.claims || {}]));

const key = (type, options, kid) => ({
  ...generateKeyPairSync(type, options).privateKey.export({ format: "jwk" }),
  kid,
  use: "sig",
});
const jwks = { keys: [key("ec", { namedCurve: "P-256" }, "es-1"), key("rsa", { modulusLength: 2048 }, "rs-1")] };

const mount = path.replace(/\/$/, ""); // an issuer may end with "/" (Auth0's do): mounted without it
const server = createServer();
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const port = server.address().port;
const issuer = `http://${config.host || "127.0.0.1"}:${port}${path}`;

const provider = new Provider(issuer, {
  jwks,
  scopes: ["openid", "offline_access", "email", "profile", ...scope.split(" ")],
  claims: { openid: ["sub", ...idTokenClaims], email: ["email", "email_verified"], profile: ["name", "groups"] },
  // Claims named in id_token_claims go in the ID token of a code flow too (not only userinfo).
  conformIdTokenClaims: idTokenClaims.length === 0,
  ...(config.routes ? { routes: config.routes } : {}),
  findAccount: (_ctx, sub) => ({ accountId: sub, claims: () => ({ sub, ...(sub === account ? accountClaims : {}) }) }),
  clients: [
    ...(config.clients || []).map((client) => ({
      client_id: client.client_id,
      client_secret: client.client_secret,
      grant_types: ["client_credentials"],
      response_types: [],
      redirect_uris: [],
      scope,
      token_endpoint_auth_method: "client_secret_basic",
      id_token_signed_response_alg: "ES256",
    })),
    ...(config.code_clients || []).map((client) => ({
      client_id: client.client_id,
      client_secret: client.client_secret,
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      redirect_uris: client.redirect_uris,
      token_endpoint_auth_method: "client_secret_basic",
      id_token_signed_response_alg: "ES256",
    })),
    ...(config.public_clients || []).map((client) => ({
      client_id: client.client_id,
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      redirect_uris: client.redirect_uris,
      application_type: "native",
      token_endpoint_auth_method: "none",
      id_token_signed_response_alg: "ES256",
    })),
  ],
  // A keystore's first key is EC: clients that register get ES256 ID tokens unless they say otherwise.
  clientDefaults: {
    grant_types: ["authorization_code"],
    id_token_signed_response_alg: "ES256",
    response_types: ["code"],
    token_endpoint_auth_method: "client_secret_basic",
  },
  interactions: { url: (_ctx, interaction) => `${mount}/interaction/${interaction.uid}` },
  pkce: { required: () => true },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    introspection: { enabled: true },
    revocation: { enabled: true },
    registration: { enabled: Boolean(config.registration) },
    dPoP: {
      enabled: Boolean(config.dpop),
      requireNonce: () => Boolean(config.dpop?.nonce),
      nonceSecret: Buffer.alloc(32, 7),
    },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => undefined,
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, resourceIndicator) => ({
        scope,
        audience: resourceIndicator,
        accessTokenFormat: format,
        ...(format === "jwt" ? { jwt: { sign: { alg } } } : {}),
      }),
    },
  },
  extraTokenClaims: (_ctx, token) => claimsOf.get(token.clientId),
});
provider.on("server_error", (_ctx, error) => console.error(error));

// The scripted user: logs in `account`, then consents to everything asked (what devInteractions'
// forms would do, lib/actions/interaction.js), answering each step with a redirect.
async function interact(req, res) {
  const details = await provider.interactionDetails(req, res);
  let result;
  if (details.prompt.name === "login") {
    result = { login: { accountId: account } };
  } else {
    const grant = details.grantId
      ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId: details.session.accountId, clientId: details.params.client_id });
    const missing = details.prompt.details;
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(" "));
    if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
    for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes || {})) {
      grant.addResourceScope(indicator, scopes.join(" "));
    }
    result = { consent: { grantId: await grant.save() } };
  }
  await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: true });
}

const callback = provider.callback();
server.on("request", (req, res) => {
  if (mount && !req.url.startsWith(mount + "/")) {
    res.statusCode = 404;
    res.end();
    return;
  }
  if (req.url.startsWith(`${mount}/interaction/`)) {
    interact(req, res).catch((error) => {
      console.error(error);
      res.statusCode = 400;
      res.end();
    });
    return;
  }
  if (config.no_iss) {
    // Entra sends no iss on its redirects: strip what oidc-provider adds (RFC 9207).
    const setHeader = res.setHeader.bind(res);
    res.setHeader = (name, value) => {
      if (String(name).toLowerCase() === "location" && typeof value === "string" && value.includes("?")) {
        const url = new URL(value);
        url.searchParams.delete("iss");
        value = url.toString();
      }
      return setHeader(name, value);
    };
  }
  // Mounted under the issuer's path: oidc-provider reads the mount point from originalUrl.
  req.originalUrl = req.url;
  req.url = req.url.slice(mount.length);
  callback(req, res);
});

console.log(JSON.stringify({ issuer, url: `http://127.0.0.1:${port}${path}` }));
process.on("SIGTERM", () => process.exit(0));
