// agent.mjs is an MCP agent written with the official TypeScript SDK
// (@modelcontextprotocol/sdk, installed by hack/tsagent.sh): the tests'
// second independent client, beside the go-sdk.
//
//   MCP_TOKEN=<bearer token> node agent.mjs <url> [steps-json]
//
// It connects over Streamable HTTP (initialize), runs the steps (JSON from
// the second argument, or from stdin when there is none), and prints one
// JSON line per step, after a first line about the connection and before a
// last one about the HTTP requests it made. Steps:
//
//   {"op":"list"}                                 -> {"tools":[names],"taskSupport":{name:support}}
//   {"op":"task","name":N,"arguments":{...}}      -> {"task":{"taskId":..,"statuses":[...]},"isError":b,"content":[...]}
//   {"op":"call","name":N,"arguments":{...}}      -> {"isError":b,"content":[...],"structuredContent":{...},"elicitations":[...]}
//   {"op":"call",...,"progress":true}             -> the same, and "progress":[[progress,total],...]
//   {"op":"ping"}                                 -> {}
//   {"op":"calls","name":N,"arguments":{},"n":K}  -> {"n":K,"failed":f,"p50us":..,"p95us":..}
//   {"op":"calls",...,"n":K,"everyMs":P}          -> the same, one call every P ms (see calls)
//   {"op":"lists","concurrency":C,"ms":T}         -> {"n":..,"failed":f,"listed":..,"p50us":..,"p95us":..}
//   {"op":"terminate"}                            -> {} (DELETE of the session)
//
// A task step calls a tool through the SDK's experimental tasks API
// (client.experimental.tasks.callToolStream): as a task when the server
// declares tasks for tools/call and listed the tool as taking them (list
// first), else plainly; it reports the task's id and every status the SDK
// polled, and the result it fetched.
//
// A step that fails prints {"error":{"code":..,"message":..}} and the next
// step runs. The token is only ever sent in the Authorization header.
//
// With MCP_OAUTH={"clientId":..} (and no MCP_TOKEN) the agent has no token:
// it runs the SDK's own OAuth client flow (an OAuthClientProvider handed to
// the transport, whose auth() discovers the protected resource's metadata
// from the 401, then the authorization server's, and sends the person to
// the authorization endpoint with PKCE and the resource parameter). clientId
// is a client registered in advance (public, no secret); with "clientId"
// empty the SDK registers one itself at the authorization server's
// registration endpoint (RFC 7591) and the agent keeps what it registered,
// reported as {"oauth":{"registered":clientId}}. The authorization
// URL is written as one line to file descriptor 3, where the test plays
// the person's browser; the code comes back to the agent's loopback
// redirect URI (http://127.0.0.1:<port>/callback), the SDK exchanges it,
// and the agent connects again with the token. The connect line then says
// {"oauth":{"authorizations":n,"tokenType":..}}.
//
// MCP_ELICIT={"action":"accept","content":{...}} makes the agent declare
// elicitation (form and URL modes) and answer every elicitation/create with
// that result; a call reports the requests it was asked during it, each as
// {"mode":..,"fields":[names of the form's fields],"url":..}. Asked for
// progress, a call sends a progress token and reports the notifications
// the SDK handed it.
//
// MCP_ORIGINS={"http://localhost":"http://127.0.0.1:8080"} sends requests
// for one origin to another, as a load balancer at a canonical name
// would: the agent connects to the URL the resource is named by.
import { readFileSync, writeSync } from 'node:fs';
import { createServer } from 'node:http';
import { randomBytes } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const [url, stepsArg] = process.argv.slice(2);
const token = process.env.MCP_TOKEN ?? '';
if (!url) {
    console.error('usage: MCP_TOKEN=<token> node agent.mjs <url> [steps-json]');
    process.exit(2);
}
const steps = JSON.parse(stepsArg ?? readFileSync(0, 'utf8'));
const oauth = process.env.MCP_OAUTH ? JSON.parse(process.env.MCP_OAUTH) : null;
const origins = new Map(Object.entries(JSON.parse(process.env.MCP_ORIGINS || '{}')));
const elicit = process.env.MCP_ELICIT ? JSON.parse(process.env.MCP_ELICIT) : null;
// The elicitations asked since the last call step reported them.
let elicitations = [];

const print = line => process.stdout.write(JSON.stringify(line) + '\n');
// code is a JSON-RPC error's code, or a failed HTTP exchange's status.
const failure = err => ({ error: { code: typeof err?.code === 'number' ? err.code : null, message: String(err?.message ?? err) } });

// What went over HTTP, without headers' values: the first 100 requests.
const requests = [];
let requestCount = 0;
const asyncErrors = [];
async function observedFetch(input, init = {}) {
    const headers = new Headers(init.headers);
    const target = new URL(input instanceof Request ? input.url : String(input));
    const seen = {
        method: init.method ?? 'GET',
        path: target.pathname,
        rpc: rpcMethod(init.body),
        sessionId: headers.has('mcp-session-id'),
        protocolVersion: headers.get('mcp-protocol-version'),
        status: null
    };
    if (requestCount++ < 100) requests.push(seen);
    const routed = origins.get(target.origin);
    if (routed) {
        const u = new URL(target.pathname + target.search, routed);
        input = input instanceof Request ? new Request(u, input) : u;
    }
    const response = await fetch(input, init);
    seen.status = response.status;
    seen.contentType = response.headers.get('content-type');
    return response;
}
function rpcMethod(body) {
    try {
        return JSON.parse(body).method ?? null;
    } catch {
        return null;
    }
}

// The person's side of the OAuth flow: a loopback listener for the
// redirect, and what the SDK asks an OAuthClientProvider to keep.
let callback;
let authProvider;
const authorizations = [];
if (oauth && !token) {
    callback = await loopbackRedirect();
    const state = randomBytes(16).toString('hex');
    let tokens;
    let verifier;
    let registered;
    authProvider = {
        get redirectUrl() {
            return callback.url;
        },
        get clientMetadata() {
            return { client_name: 'tsagent', redirect_uris: [callback.url], grant_types: ['authorization_code'], response_types: ['code'], token_endpoint_auth_method: 'none' };
        },
        state: () => state,
        // Registered in advance, without saveClientInformation the SDK
        // never tries dynamic registration; otherwise it registers once
        // and the agent keeps what it was given.
        clientInformation: () => (oauth.clientId ? { client_id: oauth.clientId } : registered),
        ...(oauth.clientId
            ? {}
            : {
                  saveClientInformation: info => {
                      registered = info;
                  }
              }),
        tokens: () => tokens,
        saveTokens: t => {
            tokens = t;
        },
        redirectToAuthorization: authorizationUrl => {
            const u = new URL(authorizationUrl);
            authorizations.push({ resource: u.searchParams.get('resource'), scope: u.searchParams.get('scope'), codeChallengeMethod: u.searchParams.get('code_challenge_method'), state: u.searchParams.get('state') === state });
            writeSync(3, u.href + '\n');
        },
        saveCodeVerifier: v => {
            verifier = v;
        },
        codeVerifier: () => verifier,
        tokenType: () => tokens?.token_type ?? null,
        registeredId: () => registered?.client_id ?? null
    };
    callback.state = state;
}

function newClient() {
    const t = new StreamableHTTPClientTransport(new URL(url), {
        requestInit: token ? { headers: { Authorization: `Bearer ${token}` } } : undefined,
        fetch: observedFetch,
        authProvider
    });
    const c = new Client({ name: 'tsagent', version: '1' }, elicit ? { capabilities: { elicitation: { form: {}, url: {} } } } : undefined);
    if (elicit) {
        c.setRequestHandler(ElicitRequestSchema, async req => {
            const p = req.params;
            elicitations.push({ mode: p.mode ?? 'form', fields: Object.keys(p.requestedSchema?.properties ?? {}), url: p.url ?? null });
            return elicit;
        });
    }
    // The first 100 are kept: an agent that floods may see thousands.
    c.onerror = err => closing || (asyncErrors.length < 100 && asyncErrors.push(failure(err).error));
    return [t, c];
}
// Errors once closing are of the agent's own making: closing aborts the
// SDK's open streams.
let closing = false;
let [transport, client] = newClient();

try {
    try {
        await client.connect(transport);
    } catch (err) {
        if (!(err instanceof UnauthorizedError) || !authProvider || authorizations.length === 0) throw err;
        // The SDK sent the person to the authorization endpoint: wait for
        // the code at the redirect URI, let the SDK exchange it, and
        // connect again, now with the token.
        const code = await callback.code;
        await transport.finishAuth(code);
        [transport, client] = newClient();
        await client.connect(transport);
    }
    const auth = authProvider ? { oauth: { authorizations, tokenType: authProvider.tokenType(), registered: authProvider.registeredId() } } : {};
    print({ op: 'connect', protocolVersion: transport.protocolVersion ?? null, sessionId: transport.sessionId !== undefined, server: client.getServerVersion() ?? null, ...auth });
} catch (err) {
    print({ op: 'connect', ...failure(err), ...(authProvider ? { oauth: { authorizations } } : {}) });
    await finish(0);
}
callback?.server.close();

const run = {
    async list() {
        const { tools } = await client.listTools();
        const taskSupport = Object.fromEntries(tools.filter(t => t.execution?.taskSupport).map(t => [t.name, t.execution.taskSupport]));
        return { tools: tools.map(t => t.name), taskSupport };
    },
    async task(step) {
        const task = { taskId: null, statuses: [] };
        for await (const m of client.experimental.tasks.callToolStream({ name: step.name, arguments: step.arguments ?? {} })) {
            switch (m.type) {
                case 'taskCreated':
                    task.taskId = m.task.taskId;
                    task.statuses.push(m.task.status);
                    break;
                case 'taskStatus':
                    task.statuses.push(m.task.status);
                    break;
                case 'result':
                    return { task, isError: m.result.isError === true, content: m.result.content };
                case 'error':
                    throw m.error;
            }
        }
        throw new Error('the task stream ended without a result');
    },
    async call(step) {
        const progress = [];
        const options = step.progress ? { onprogress: p => progress.push([p.progress, p.total ?? null]) } : undefined;
        elicitations = [];
        const res = await client.callTool({ name: step.name, arguments: step.arguments ?? {} }, undefined, options);
        const asked = elicitations;
        elicitations = [];
        return { isError: res.isError === true, content: res.content, structuredContent: res.structuredContent, elicitations: asked, ...(step.progress ? { progress } : {}) };
    },
    async ping() {
        await client.ping();
        return {};
    },
    async terminate() {
        await transport.terminateSession();
        return {};
    },
    // calls times n sequential calls (after one untimed warm-up call).
    // With everyMs, the calls are paced, one every everyMs from the first
    // (an agent that calls now and then, not as fast as it can), and a call
    // that throws is counted as failed, its message kept in firstError, and
    // the next call made; the warm-up is counted too, so that failed is
    // every call of the step that failed. Without it, the first call that
    // throws ends the step.
    async calls(step) {
        const params = { name: step.name, arguments: step.arguments ?? {} };
        const paced = step.everyMs > 0;
        const micros = [];
        let failed = 0;
        let firstError;
        const call = async () => {
            try {
                const res = await client.callTool(params);
                if (res.isError) failed++;
            } catch (err) {
                if (!paced) throw err;
                failed++;
                firstError ??= failure(err).error.message;
            }
        };
        if (paced) await call();
        else await client.callTool(params);
        const t0 = Date.now();
        for (let i = 0; i < step.n; i++) {
            if (paced) await sleepUntil(t0 + i * step.everyMs);
            const start = process.hrtime.bigint();
            await call();
            micros.push(Number(process.hrtime.bigint() - start) / 1000);
        }
        return { n: step.n, failed, ...percentiles(micros), ...(firstError ? { firstError } : {}) };
    },
    // lists lists the tools on concurrency requests in flight at once (the
    // transport's fetch opens a connection for each), each worker listing
    // again as soon as its list returned, until ms milliseconds have passed.
    // A list that throws is counted as failed (its message in firstError);
    // listed is how many tools the last list that succeeded named.
    async lists(step) {
        const end = Date.now() + step.ms;
        const micros = [];
        let failed = 0;
        let listed = 0;
        let firstError;
        const worker = async () => {
            while (Date.now() < end) {
                const start = process.hrtime.bigint();
                try {
                    const { tools } = await client.listTools();
                    listed = tools.length;
                    micros.push(Number(process.hrtime.bigint() - start) / 1000);
                } catch (err) {
                    failed++;
                    firstError ??= failure(err).error.message;
                }
            }
        };
        await Promise.all(Array.from({ length: Math.max(1, step.concurrency ?? 1) }, worker));
        return { n: micros.length, failed, listed, ...percentiles(micros), ...(firstError ? { firstError } : {}) };
    }
};

function sleepUntil(t) {
    const wait = t - Date.now();
    return wait > 0 ? new Promise(resolve => setTimeout(resolve, wait)) : Promise.resolve();
}

// percentiles are the median and 95th percentile of latencies in
// microseconds.
function percentiles(micros) {
    micros.sort((a, b) => a - b);
    const pct = p => Math.round(micros[Math.min(micros.length - 1, Math.floor(p * micros.length))] ?? 0);
    return { p50us: pct(0.5), p95us: pct(0.95) };
}

for (const step of steps) {
    const op = run[step.op];
    try {
        if (!op) throw new Error(`unknown op ${JSON.stringify(step.op)}`);
        print({ op: step.op, ...(await op(step)) });
    } catch (err) {
        print({ op: step.op, ...failure(err) });
    }
}
closing = true;
await client.close();
await finish(0);

// loopbackRedirect listens on a free loopback port for the authorization
// response (RFC 8252): code resolves with the code of the first response
// whose state is the agent's, and rejects on an error response.
function loopbackRedirect() {
    return new Promise((resolve, reject) => {
        const r = {};
        r.code = new Promise((ok, fail) => {
            r.server = createServer((req, res) => {
                const q = new URL(req.url, 'http://127.0.0.1').searchParams;
                if (q.get('state') !== r.state) {
                    res.writeHead(400).end('unexpected state');
                    return;
                }
                if (q.get('error')) {
                    res.writeHead(200).end('authorization refused');
                    fail(new Error(`authorization refused: ${q.get('error')}: ${q.get('error_description') ?? ''}`));
                    return;
                }
                res.writeHead(200).end('signed in; you may close this window');
                ok(q.get('code'));
            });
        });
        r.code.catch(() => {});
        r.server.on('error', reject);
        r.server.listen(0, '127.0.0.1', () => {
            r.url = `http://127.0.0.1:${r.server.address().port}/callback`;
            resolve(r);
        });
    });
}

function finish(code) {
    // Standard output may be a pipe, which Node writes asynchronously:
    // exit once the last line is written, not before; nothing runs after.
    process.stdout.write(JSON.stringify({ op: 'http', requests, requestCount, errors: asyncErrors }) + '\n', () => process.exit(code));
    return new Promise(() => {});
}
