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
//   {"op":"list"}                                 -> {"tools":[names]}
//   {"op":"call","name":N,"arguments":{...}}      -> {"isError":b,"content":[...]}
//   {"op":"ping"}                                 -> {}
//   {"op":"calls","name":N,"arguments":{},"n":K}  -> {"n":K,"failed":f,"p50us":..,"p95us":..}
//   {"op":"calls",...,"n":K,"everyMs":P}          -> the same, one call every P ms (see calls)
//   {"op":"lists","concurrency":C,"ms":T}         -> {"n":..,"failed":f,"listed":..,"p50us":..,"p95us":..}
//   {"op":"terminate"}                            -> {} (DELETE of the session)
//
// A step that fails prints {"error":{"code":..,"message":..}} and the next
// step runs. The token is only ever sent in the Authorization header.
import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [url, stepsArg] = process.argv.slice(2);
const token = process.env.MCP_TOKEN ?? '';
if (!url) {
    console.error('usage: MCP_TOKEN=<token> node agent.mjs <url> [steps-json]');
    process.exit(2);
}
const steps = JSON.parse(stepsArg ?? readFileSync(0, 'utf8'));

const print = line => process.stdout.write(JSON.stringify(line) + '\n');
// code is a JSON-RPC error's code, or a failed HTTP exchange's status.
const failure = err => ({ error: { code: typeof err?.code === 'number' ? err.code : null, message: String(err?.message ?? err) } });

// What went over HTTP, without headers' values: the first 100 requests.
const requests = [];
let requestCount = 0;
const asyncErrors = [];
async function observedFetch(input, init = {}) {
    const headers = new Headers(init.headers);
    const seen = {
        method: init.method ?? 'GET',
        rpc: rpcMethod(init.body),
        sessionId: headers.has('mcp-session-id'),
        protocolVersion: headers.get('mcp-protocol-version'),
        status: null
    };
    if (requestCount++ < 100) requests.push(seen);
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

const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: token ? { headers: { Authorization: `Bearer ${token}` } } : undefined,
    fetch: observedFetch
});
const client = new Client({ name: 'tsagent', version: '1' });
// Errors once closing are of the agent's own making: closing aborts the
// SDK's open streams.
let closing = false;
// The first 100 are kept: an agent that floods may see thousands.
client.onerror = err => closing || (asyncErrors.length < 100 && asyncErrors.push(failure(err).error));

try {
    await client.connect(transport);
    print({ op: 'connect', protocolVersion: transport.protocolVersion ?? null, sessionId: transport.sessionId !== undefined, server: client.getServerVersion() ?? null });
} catch (err) {
    print({ op: 'connect', ...failure(err) });
    await finish(0);
}

const run = {
    async list() {
        const { tools } = await client.listTools();
        return { tools: tools.map(t => t.name) };
    },
    async call(step) {
        const res = await client.callTool({ name: step.name, arguments: step.arguments ?? {} });
        return { isError: res.isError === true, content: res.content };
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

function finish(code) {
    // Standard output may be a pipe, which Node writes asynchronously:
    // exit once the last line is written, not before; nothing runs after.
    process.stdout.write(JSON.stringify({ op: 'http', requests, requestCount, errors: asyncErrors }) + '\n', () => process.exit(code));
    return new Promise(() => {});
}
