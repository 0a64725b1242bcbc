// mcp_sdk_client.js - the official MCP TypeScript SDK's client (and the
// official `openai` client), driven by test_mcp_server.py: commands come
// as JSON lines on stdin, what happens goes out as JSON lines on stdout.
// The packages come from .deps/npm (make deps), pinned in scripts/deps.sh.
//
//   {"op":"connect","transport":"http","url":U,"token":T,"elicit":A}   A: "yes"|"no"|"wait"|null
//   {"op":"connect","transport":"stdio","command":C,"args":[...],"env":{...}}
//   {"op":"list"}                          every page, following nextCursor
//   {"op":"call","id":K,"name":N,"args":{...},"progress":true,"timeout":MS}
//                                          runs on; "progress", then "result" or "error"
//   {"op":"cancel","id":K}                 the call's AbortSignal: notifications/cancelled
//   {"op":"terminate"}                     DELETE the session
//   {"op":"close"}
//   {"op":"openai","base":U,"key":K,"stream":B,"user":U,"prompt":P,"headers":{...}}
//   {"op":"models","base":U,"key":K}
//   {"op":"exit"}
'use strict';
const path = require('path');
const readline = require('readline');
const { createRequire } = require('module');

const deps = createRequire(path.join(__dirname, '..', '..', '.deps', 'npm', 'package.json'));
const { Client } = deps('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = deps('@modelcontextprotocol/sdk/client/streamableHttp.js');
const { StdioClientTransport } = deps('@modelcontextprotocol/sdk/client/stdio.js');
const { ElicitRequestSchema, ToolListChangedNotificationSchema } = deps('@modelcontextprotocol/sdk/types.js');

let client = null;
let transport = null;
const calls = new Map();

function say(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

function errInfo(e) {
  return { message: String(e && e.message ? e.message : e), code: e && e.code !== undefined ? e.code : null,
           name: e && e.name ? e.name : null, status: e && e.status !== undefined ? e.status : null };
}

async function connect(c) {
  const caps = c.elicit ? { elicitation: {} } : {};
  client = new Client({ name: 'sdk-test', version: '1.0.0' }, { capabilities: caps });
  client.onerror = (e) => say({ event: 'client_error', ...errInfo(e) });
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => say({ event: 'list_changed' }));
  if (c.elicit) {
    client.setRequestHandler(ElicitRequestSchema, async (req, extra) => {
      say({ event: 'elicit', message: req.params.message, schema: req.params.requestedSchema });
      if (c.elicit === 'wait') {
        // never answered here: the device's front doors answer; a
        // withdrawn question aborts this handler
        await new Promise((resolve) => extra.signal.addEventListener('abort', resolve));
        say({ event: 'elicit_withdrawn' });
        return { action: 'cancel' };
      }
      if (c.elicit === 'decline')
        return { action: 'decline' };
      const content = { answer: c.elicit };
      if (c.reason) content.reason = c.reason;
      return { action: 'accept', content };
    });
  }
  if (c.transport === 'stdio') {
    transport = new StdioClientTransport({ command: c.command, args: c.args || [], env: c.env || {}, stderr: 'inherit' });
  } else {
    const headers = c.token ? { Authorization: 'Bearer ' + c.token } : {};
    transport = new StreamableHTTPClientTransport(new URL(c.url), { requestInit: { headers } });
  }
  await client.connect(transport);
  return { session: transport.sessionId || null, version: transport.protocolVersion || null,
           server: client.getServerVersion(), caps: client.getServerCapabilities(),
           instructions: client.getInstructions() };
}

async function listAll() {
  const names = [];
  let cursor, pages = 0;
  do {
    const r = await client.listTools(cursor ? { cursor } : {});
    pages++;
    for (const t of r.tools) names.push({ name: t.name, readOnly: !!(t.annotations && t.annotations.readOnlyHint),
                                          schema: t.inputSchema });
    cursor = r.nextCursor;
  } while (cursor && pages < 100);
  return { tools: names, pages };
}

function call(c) {
  const ac = new AbortController();
  calls.set(c.id, ac);
  const opts = { signal: ac.signal, timeout: c.timeout || 60000, resetTimeoutOnProgress: true };
  if (c.progress)
    opts.onprogress = (p) => say({ event: 'progress', id: c.id, progress: p.progress, message: p.message || null });
  const t0 = process.hrtime.bigint();
  client.callTool({ name: c.name, arguments: c.args || {} }, undefined, opts).then((r) => {
    say({ event: 'result', id: c.id, result: r, ms: Number(process.hrtime.bigint() - t0) / 1e6 });
  }, (e) => {
    say({ event: 'error', id: c.id, ...errInfo(e) });
  }).finally(() => calls.delete(c.id));
}

async function openai(c) {
  const OpenAI = deps('openai');
  const o = new (OpenAI.default || OpenAI)({ apiKey: c.key || 'none', baseURL: c.base, maxRetries: 0,
                                           defaultHeaders: c.headers || {} });
  const req = { model: 'mote', messages: [{ role: 'system', content: 'You are a device.' },
                                          { role: 'user', content: c.prompt }] };
  if (c.user) req.user = c.user;
  if (!c.stream) {
    const r = await o.chat.completions.create(req);
    return { completion: r };
  }
  const stream = await o.chat.completions.create({ ...req, stream: true, stream_options: { include_usage: true } });
  const chunks = [];
  let text = '', finish = null, usage = null;
  for await (const ch of stream) {
    chunks.push(ch);
    if (ch.choices && ch.choices.length > 0) {
      text += ch.choices[0].delta.content || '';
      if (ch.choices[0].finish_reason) finish = ch.choices[0].finish_reason;
    }
    if (ch.usage) usage = ch.usage;
  }
  return { text, finish, usage, chunks: chunks.length, id: chunks.length ? chunks[0].id : null };
}

async function models(c) {
  const OpenAI = deps('openai');
  const o = new (OpenAI.default || OpenAI)({ apiKey: c.key || 'none', baseURL: c.base, maxRetries: 0 });
  const ids = [];
  for await (const m of o.models.list()) ids.push(m.id);
  return { models: ids };
}

async function run(c) {
  switch (c.op) {
  case 'connect': return connect(c);
  case 'list': return listAll();
  case 'call': call(c); return { started: c.id };
  case 'cancel': {
    const ac = calls.get(c.id);
    if (ac) ac.abort('the test cancels it');
    return { cancelled: !!ac };
  }
  case 'terminate': await transport.terminateSession(); return {};
  case 'close': await client.close(); return {};
  case 'openai': return openai(c);
  case 'models': return models(c);
  case 'exit': process.exit(0);
  default: throw new Error('unknown op ' + c.op);
  }
}

const rl = readline.createInterface({ input: process.stdin });
let chain = Promise.resolve();
rl.on('line', (line) => {
  if (!line.trim()) return;
  const c = JSON.parse(line);
  chain = chain.then(() => run(c)).then(
    (r) => say({ event: 'done', op: c.op, tag: c.tag || null, ok: true, ...r }),
    (e) => say({ event: 'done', op: c.op, tag: c.tag || null, ok: false, ...errInfo(e) }));
});
rl.on('close', () => { chain.then(() => process.exit(0)); });
