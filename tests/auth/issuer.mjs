// A real OAuth 2.1 authorization server for the end-to-end tests: oidc-provider
// (a certified OpenID provider) on loopback, issuing RFC 9068 JWT access tokens
// through the client-credentials grant, with RFC 8707 resource indicators (the
// token's `aud` is the resource asked for), plus an admin API under /admin that
// the tests drive: POST token (a real grant), sign (any claims, any header, or
// forged), rotate (a new key), GET stats (JWKS and discovery fetches) and jwks.
// A test fixture: no admin auth, loopback only.
//
//   node tests/auth/issuer.mjs [--port N] [--alg ES256|RS256|EdDSA] [--clients FILE]
//
// Prints one line of JSON to stdout once listening, {"issuer": …, "admin": …},
// and nothing else there (logs go to stderr). Exits when stdin closes (so a
// killed test never leaves it running) and on SIGTERM. The packages come from
// $CORDON_NODE_MODULES (else target/interop/node/node_modules beside the repo):
// ESM ignores NODE_PATH, so they are resolved from that folder explicitly.
import * as crypto from 'node:crypto';
import * as http from 'node:http';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { readFileSync } from 'node:fs';

// oidc-provider prints notices with console.info: keep stdout for the one line.
console.info = console.log = (...args) => console.error(...args);

const here = dirname(fileURLToPath(import.meta.url));
const modules = process.env.CORDON_NODE_MODULES || join(here, '../../target/interop/node/node_modules');
const load = createRequire(join(modules, 'resolve.js'));
const { default: Provider, errors } = await import(pathToFileURL(load.resolve('oidc-provider')).href);
const jose = await import(pathToFileURL(load.resolve('jose')).href);

const { values: args } = parseArgs({
  options: { port: { type: 'string', default: '0' }, alg: { type: 'string', default: 'ES256' }, clients: { type: 'string' } },
});

// --- Clients: client-credentials only, each with the scope it may be granted
// and the groups (and optionally the sub) its access tokens carry.
const CLIENTS = args.clients ? JSON.parse(readFileSync(args.clients, 'utf8')) : [
  { client_id: 'alice', client_secret: 'alice-secret', scope: 'cordon:read cordon:write', groups: ['eng'] },
  { client_id: 'ci-bot', client_secret: 'ci-bot-secret', scope: 'cordon:read', groups: ['ci'] },
  { client_id: 'reader', client_secret: 'reader-secret', scope: 'cordon:read', groups: ['eng'] },
];
const byId = new Map(CLIENTS.map((c) => [c.client_id, c]));
const RESOURCE_SCOPE = 'cordon:read cordon:write';

// --- Keys: one current signing key per algorithm (rotation adds a newer one,
// the older stay published). Private JWKs go to the provider, which publishes
// their public halves at its jwks_uri.
const ALGS = { ES256: {}, RS256: { modulusLength: 2048 }, EdDSA: { crv: 'Ed25519' } };
const keys = []; // every private JWK ever made, newest first
const current = {}; // alg -> its current private JWK
const made = {}; // alg -> how many keys of it so far, for readable kids (es256-1, es256-2, …)
async function newKey(alg) {
  if (!(alg in ALGS)) throw new Error(`unknown alg ${alg}: one of ${Object.keys(ALGS)}`);
  const { privateKey } = await jose.generateKeyPair(alg, { ...ALGS[alg], extractable: true });
  const jwk = { ...(await jose.exportJWK(privateKey)), kid: `${alg.toLowerCase()}-${(made[alg] = (made[alg] || 0) + 1)}`, use: 'sig', alg };
  keys.unshift(jwk);
  current[alg] = jwk;
  return jwk;
}
for (const alg of Object.keys(ALGS)) await newKey(alg);
const signingAlg = args.alg; // the process's; /admin/token may pick another per token
if (!(signingAlg in ALGS)) throw new Error(`--alg ${signingAlg}: one of ${Object.keys(ALGS)}`);

// --- The provider, rebuilt (with the same clients and the grown key set) on
// each rotation, and swapped in behind the one HTTP server.
function makeProvider(issuer) {
  const provider = new Provider(issuer, {
    jwks: { keys: structuredClone(keys) },
    // The cordon scopes are the server's, but clients carry no `scope` metadata:
    // oidc-provider would refuse (invalid_scope) a request beyond it, where these
    // tests want the intersection, which getResourceServerInfo makes instead.
    scopes: ['openid', 'offline_access', 'cordon:read', 'cordon:write'],
    clients: CLIENTS.map((c) => ({
      client_id: c.client_id,
      client_secret: c.client_secret,
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
      token_endpoint_auth_method: c.token_endpoint_auth_method || 'client_secret_basic',
    })),
    cookies: { keys: [crypto.randomBytes(32).toString('hex')] },
    ttl: { ClientCredentials: (ctx, token) => token.resourceServer?.accessTokenTTL || 600 },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: { enabled: false },
      revocation: { enabled: false },
      resourceIndicators: {
        enabled: true,
        defaultResource: async () => undefined,
        useGrantedResource: async () => true,
        // Any http(s) resource is a resource server whose audience is itself
        // (RFC 8707); its scope is what this client may be granted there.
        getResourceServerInfo: async (ctx, resource, client) => {
          if (!/^https?:\/\//.test(resource)) throw new errors.InvalidTarget('resource must be an http(s) URL');
          const allowed = new Set((byId.get(client.clientId)?.scope || '').split(' '));
          const alg = ctx.get('x-issuer-alg') || signingAlg; // /admin/token's per-token alg
          return {
            scope: RESOURCE_SCOPE.split(' ').filter((s) => allowed.has(s)).join(' '),
            audience: resource,
            accessTokenFormat: 'jwt',
            accessTokenTTL: 600,
            jwt: { sign: { alg, kid: current[alg]?.kid } },
          };
        },
      },
    },
    // The client's groups in every access token it gets.
    extraTokenClaims: async (ctx, token) => ({ groups: byId.get(token.clientId)?.groups || [] }),
    // A client file's `sub` replaces the default (the client_id).
    formats: {
      customizers: {
        jwt: async (ctx, token, jwt) => {
          const sub = byId.get(token.clientId)?.sub;
          if (sub) jwt.payload.sub = sub;
        },
      },
    },
  });
  provider.on('server_error', (ctx, err) => console.error('server_error', err));
  return provider;
}

// --- The admin API (JSON in, JSON out).
const b64 = (value) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');
const privateKey = (jwk) => crypto.createPrivateKey({ key: jwk, format: 'jwk' });

// Signs `claims` under `header` (merged over the defaults of `key`; a null
// value drops a default) with the current key of that kind, whatever the
// header says: tests make mismatched, confused and unsigned tokens this way.
function sign(header, claims, key) {
  const rsa = current.RS256;
  const base = {
    ES256: { alg: 'ES256', kid: current.ES256.kid },
    RS256: { alg: 'RS256', kid: rsa.kid },
    EdDSA: { alg: 'EdDSA', kid: current.EdDSA.kid },
    'hs256-public': { alg: 'HS256', kid: rsa.kid },
    none: { alg: 'none', kid: current[signingAlg].kid },
  }[key];
  if (!base) throw new Error(`unknown key ${key}`);
  const merged = { ...base, typ: 'at+jwt', ...header };
  for (const name of Object.keys(merged)) if (merged[name] === null) delete merged[name];
  const input = `${b64(merged)}.${b64(claims)}`;
  let signature;
  if (key === 'ES256') signature = crypto.sign('sha256', Buffer.from(input), { key: privateKey(current.ES256), dsaEncoding: 'ieee-p1363' });
  else if (key === 'RS256') signature = crypto.sign('sha256', Buffer.from(input), privateKey(rsa));
  else if (key === 'EdDSA') signature = crypto.sign(null, Buffer.from(input), privateKey(current.EdDSA));
  else if (key === 'hs256-public') {
    // The classic key confusion: the RSA public key (SPKI PEM) as an HMAC secret.
    const pem = crypto.createPublicKey({ key: rsa, format: 'jwk' }).export({ type: 'spki', format: 'pem' });
    signature = crypto.createHmac('sha256', pem).update(input).digest();
  } else signature = Buffer.alloc(0);
  return `${input}.${signature.toString('base64url')}`;
}

const admin = {
  // A real client-credentials grant at our own token endpoint.
  async 'POST /admin/token'({ client_id, resource, scope, alg }) {
    const client = byId.get(client_id);
    if (!client) throw new Error(`unknown client ${client_id}`);
    const form = new URLSearchParams({ grant_type: 'client_credentials', resource, scope: scope ?? client.scope });
    const auth = Buffer.from(`${encodeURIComponent(client_id)}:${encodeURIComponent(client.client_secret)}`).toString('base64');
    const headers = { authorization: `Basic ${auth}`, 'content-type': 'application/x-www-form-urlencoded' };
    if (alg) headers['x-issuer-alg'] = alg;
    const response = await fetch(`${issuer}/token`, { method: 'POST', headers, body: form });
    const body = await response.json();
    if (!response.ok) throw new Error(`token endpoint ${response.status}: ${JSON.stringify(body)}`);
    return { access_token: body.access_token };
  },
  async 'POST /admin/sign'({ header, claims, key }) {
    return { token: sign(header ?? {}, claims ?? {}, key ?? signingAlg) };
  },
  // A new current key for `alg`, published beside the old ones.
  async 'POST /admin/rotate'({ alg }) {
    const { kid } = await newKey(alg ?? signingAlg);
    provider = makeProvider(issuer);
    handler = provider.callback();
    return { kid };
  },
  async 'GET /admin/stats'() {
    return stats;
  },
  // The published keys, for tests that want a kid, without counting as a JWKS fetch.
  async 'GET /admin/jwks'() {
    return {
      keys: keys.map(({ kid, use, alg, ...jwk }) => ({
        ...crypto.createPublicKey({ key: jwk, format: 'jwk' }).export({ format: 'jwk' }), kid, use, alg,
      })),
    };
  },
};

async function serveAdmin(req, res) {
  const route = admin[`${req.method} ${new URL(req.url, issuer).pathname}`];
  let status = 200;
  let out;
  try {
    if (!route) { status = 404; throw new Error(`no admin route ${req.method} ${req.url}`); }
    let text = '';
    for await (const chunk of req) text += chunk;
    out = await route(text.trim() ? JSON.parse(text) : {});
  } catch (err) {
    if (status === 200) status = 400;
    out = { error: String(err.message || err) };
    console.error(`admin ${req.method} ${req.url}: ${out.error}`);
  }
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(out));
}

// --- One HTTP server for its whole life: count the discovery and JWKS
// fetches, serve RFC 8414's metadata as the OpenID one (the same document),
// route /admin, and hand the rest to the current provider.
const stats = { jwks_requests: 0, metadata_requests: 0 };
let issuer;
let provider;
let handler;
const server = http.createServer((req, res) => {
  const path = req.url.split('?')[0];
  if (path.startsWith('/admin/')) return void serveAdmin(req, res);
  if (path === '/.well-known/oauth-authorization-server') req.url = '/.well-known/openid-configuration';
  if (path.startsWith('/.well-known/')) stats.metadata_requests += 1;
  if (path === new URL(provider.urlFor('jwks')).pathname) stats.jwks_requests += 1;
  return handler(req, res);
});

server.listen(Number(args.port), '127.0.0.1', () => {
  issuer = `http://127.0.0.1:${server.address().port}`;
  provider = makeProvider(issuer);
  handler = provider.callback();
  process.stdout.write(`${JSON.stringify({ issuer, admin: `${issuer}/admin` })}\n`);
  console.error(`issuer ${issuer}: signing access tokens with ${signingAlg} (${current[signingAlg].kid})`);
});

// Gone with the test that started it.
const stop = () => { server.close(); process.exit(0); };
process.stdin.on('end', stop).on('close', stop).resume();
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
