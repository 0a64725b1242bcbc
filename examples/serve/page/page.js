'use strict';
// mote serve's page: the API of docs/SERVE.md, nothing else. Every text
// from the model, a tool or the server is put in with textContent or as a
// text node, never as HTML (the CSP's Trusted Types refuse innerHTML).
(function () {
  const $ = (id) => document.getElementById(id);
  const KEY = 'mote.token';
  let token = sessionStorage.getItem(KEY) || '';
  let conv = null;      // the conversation open
  let timer = 0;

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  const show = (id, on) => { $(id).hidden = !on; };
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const count = (n, w) => n + ' ' + w + (n === 1 ? '' : 's');

  // What a terminal would not show, made visible (as mote_show_text does).
  function safe(s, exact) {
    return String(s).replace(exact ? /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb]/g
      : /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, (c) => {
      const n = c.charCodeAt(0);
      if (n < 32) return '^' + String.fromCharCode(n + 64);
      if (n === 127) return '^?';
      return '<U+' + n.toString(16).toUpperCase().padStart(4, '0') + '>';
    });
  }

  function error(msg) {
    $('err').textContent = msg || '';
  }

  class Refused extends Error {}

  function headers(more) {
    const h = Object.assign({}, more);
    if (token) h.Authorization = 'Bearer ' + token;
    return h;
  }

  async function api(method, path, body) {
    const o = { method, headers: headers({}), cache: 'no-store', credentials: 'omit', redirect: 'error' };
    if (body !== undefined) {
      o.headers['Content-Type'] = 'application/json';
      o.body = JSON.stringify(body);
    }
    const r = await fetch(path, o);
    if (r.status === 401) {
      login(token ? 'The token was not accepted.' : '');
      throw new Refused('unauthorized');
    }
    const type = r.headers.get('Content-Type') || '';
    const j = type.startsWith('application/json') ? await r.json().catch(() => null) : null;
    if (!r.ok) {
      const e = new Error(j && j.message ? j.message : 'HTTP ' + r.status);
      e.code = j && j.error;
      throw e;
    }
    return j;
  }

  function fail(x) {
    if (!(x instanceof Refused)) error(x && x.message ? x.message : String(x));
  }

  // ---- logging in --------------------------------------------------------

  function login(why) {
    token = '';
    sessionStorage.removeItem(KEY);
    close();
    show('app', false);
    show('logout', false);
    show('login', true);
    $('login-err').textContent = why || '';
    $('token').focus();
  }

  $('login').addEventListener('submit', (e) => {
    e.preventDefault();
    token = $('token').value.trim();
    $('token').value = '';
    start().then(() => sessionStorage.setItem(KEY, token), (x) => {
      if (!(x instanceof Refused)) $('login-err').textContent = x.message;
    });
  });

  $('logout').addEventListener('click', () => login(''));

  async function start() {
    const h = await api('GET', '/v1/health');
    show('login', false);
    show('app', true);
    show('logout', token !== '');
    health(h);
    await list();
    const m = /^#c=([A-Za-z0-9_-]{1,39})$/.exec(location.hash);
    if (m && (!conv || conv.id !== m[1])) open(m[1]);
    if (!timer) timer = setInterval(refresh, 15000);
  }

  // a link or the history to another conversation (#c=ID)
  window.addEventListener('hashchange', () => {
    const m = /^#c=([A-Za-z0-9_-]{1,39})$/.exec(location.hash);
    if (m && !$('app').hidden && (!conv || conv.id !== m[1])) open(m[1]);
  });

  function refresh() {
    if (document.hidden || $('app').hidden) return;
    api('GET', '/v1/health').then(health, fail);
    list().catch(fail);
  }

  // ---- status ------------------------------------------------------------

  function plain(v) {
    if (v === null || typeof v !== 'object') return String(v);
    return Object.keys(v).filter((k) => v[k] === null || typeof v[k] !== 'object')
      .map((k) => k + ' ' + v[k]).join(', ');
  }

  // The spend budget (GET /v1/health's "budget"): what today used, the
  // limits, and why nothing is sent while it is spent.
  function budget(b) {
    const d = b.day || {};
    let t = 'today ' + count(d.requests || 0, 'request') + ', ' + (d.input_tokens || 0) + ' tokens in, ' +
      (d.output_tokens || 0) + ' out';
    if (b.limits && Object.keys(b.limits).length) t += ' (limits: ' + plain(b.limits) + ')';
    return b.spent && b.reason ? t + ' - ' + b.reason : t;
  }

  function health(h) {
    const p = [];
    if (h.model) p.push(h.model);
    p.push('mote ' + h.version);
    if (h.status !== 'ok') p.push(h.status);
    if (h.conversations) p.push(h.conversations.busy + ' busy');
    if (h.budget) p.push(budget(h.budget));
    $('status').textContent = safe(p.join(' · '), true);
    $('status').className = h.budget && h.budget.spent ? 'warn' : 'dim';
    // schedules (when the server has them): what runs while nobody watches
    if (h.schedules && h.schedules.count) api('GET', '/v1/schedules').then(schedules, fail);
    else show('sched', false);
  }

  function when(x) {
    return x && x.at ? String(x.at).replace('T', ' ').replace(/:\d\dZ$/, 'Z') : '';
  }

  function schedules(j) {
    const all = j && Array.isArray(j.schedules) ? j.schedules : [];
    show('sched', all.length > 0);
    $('sched-list').replaceChildren(...all.map((x) => {
      const li = el('li', '', safe(x.id, true));
      const p = [];
      if (x.running) p.push('running');
      else if (x.next) p.push('next ' + when(x.next));
      if (x.last) p.push('last ' + when(x.last) + ' ' + x.last.outcome);
      li.append(el('small', '', safe(p.join(' · '), true)));
      if (x.error) li.append(el('small', 'err', safe(x.error, true)));
      if (typeof x.prompt === 'string') li.title = safe(x.prompt, true);
      const cid = x.running && x.running.conversation;
      if (typeof cid === 'string' && /^[A-Za-z0-9_-]{1,39}$/.test(cid)) li.addEventListener('click', () => open(cid));
      return li;
    }));
  }

  // ---- the conversations -------------------------------------------------

  async function list() {
    let all = [];
    let after = '';
    for (let page = 0; page < 10; page++) {
      const j = await api('GET', '/v1/conversations' + (after ? '?after=' + encodeURIComponent(after) : ''));
      all = all.concat(j.conversations);
      if (!j.truncated || !j.next) break;
      after = j.next;
    }
    all.sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
    $('convs').replaceChildren(...all.map((c) => {
      const li = el('li', conv && conv.id === c.id ? 'on' : '');
      li.dataset.id = c.id;
      li.append(el('span', '', c.id), ' ', el('span', 'badge', c.state));
      li.append(el('small', '', safe(c.first || '(nothing said yet)', true)));
      li.addEventListener('click', () => open(c.id));
      return li;
    }));
  }

  $('new').addEventListener('click', () => {
    api('POST', '/v1/conversations').then((j) => {
      open(j.id);
      list().catch(fail);
    }, fail);
  });

  $('back').addEventListener('click', () => {
    close();
    history.replaceState(null, '', location.pathname);
  });

  function close() {
    if (conv && conv.ctrl) conv.ctrl.abort();
    conv = null;
    document.body.classList.remove('open');
    show('conv', false);
    dismiss('ask');
    dismiss('q');
  }

  function open(id) {
    close();
    history.replaceState(null, '', '#c=' + id);
    conv = { id, last: null, ctrl: null, answer: null, preview: null, cards: new Map(), ask: null, q: null, busy: false };
    $('conv-id').textContent = id;
    $('conv-state').textContent = '';
    $('log').replaceChildren();
    for (const li of $('convs').children) li.classList.toggle('on', li.dataset.id === id);
    document.body.classList.add('open');
    show('conv', true);
    busy(false);
    follow(conv);
  }

  // ---- the event stream (fetch: the token goes in a header) ---------------

  function parse(block) {
    const ev = { event: 'message', id: null, data: [] };
    for (const line of block.split('\n')) {
      if (line === '' || line[0] === ':') continue;
      const k = line.indexOf(':');
      const f = k < 0 ? line : line.slice(0, k);
      let v = k < 0 ? '' : line.slice(k + 1);
      if (v[0] === ' ') v = v.slice(1);
      if (f === 'event') ev.event = v;
      else if (f === 'data') ev.data.push(v);
      else if (f === 'id') ev.id = v;
    }
    return ev;
  }

  async function follow(c) {
    let delay = 500;
    while (conv === c) {
      const ctrl = new AbortController();
      c.ctrl = ctrl;
      try {
        const h = headers({ Accept: 'text/event-stream' });
        if (c.last !== null) h['Last-Event-ID'] = String(c.last);
        const r = await fetch('/v1/conversations/' + encodeURIComponent(c.id) + '/events' +
          (c.last === null ? '?from=0' : ''), { headers: h, signal: ctrl.signal, cache: 'no-store', credentials: 'omit' });
        if (r.status === 401) {
          login('The token was not accepted.');
          return;
        }
        if (!r.ok) {
          const j = await r.json().catch(() => null);
          note(c, j && j.message ? j.message : 'HTTP ' + r.status, 'err');
          if (r.status === 404) return;
          throw new Error('events');
        }
        $('conv-link').textContent = '';
        delay = 500;
        const rd = r.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = '';
        for (;;) {
          const { value, done } = await rd.read();
          if (done || conv !== c) break;
          buf += value;
          let i;
          while ((i = buf.indexOf('\n\n')) >= 0 && conv === c) {
            const ev = parse(buf.slice(0, i));
            buf = buf.slice(i + 2);
            if (ev.data.length) event(c, ev);
          }
        }
      } catch (x) {
        if (ctrl.signal.aborted) return;
      }
      if (conv !== c) return;
      $('conv-link').textContent = 'reconnecting…';
      await sleep(delay);
      delay = Math.min(delay * 2, 8000);
    }
  }

  function event(c, ev) {
    let d;
    try {
      d = JSON.parse(ev.data.join('\n'));
    } catch (x) {
      return;
    }
    switch (ev.event) {
      case 'record':
        if (ev.id !== null) c.last = Number(ev.id);
        record(c, d);
        break;
      case 'text': live(c, d.text); break;
      case 'state': state(c, d); break;
      case 'approval': ask(c, d); break;
      case 'approval_expired':
        dismiss('ask');
        note(c, safe(d.text, true), 'warn');
        break;
      case 'elicitation': question(c, d); break;
      case 'elicitation_end':
        if (c.q && c.q.ask_id === d.ask_id) dismiss('q');
        if (d.by !== 'client') note(c, safe(d.text, true), 'warn');
        break;
      case 'tool_call': {
        const k = c.cards.get(d.call_id);
        if (k) k.classList.add('run');
        break;
      }
      case 'tool_result': {
        const k = c.cards.get(d.call_id);
        if (k) k.classList.remove('run');
        break;
      }
      case 'turn_end':
        if (d.usage && (d.usage.input_tokens || d.usage.output_tokens)) {
          note(c, '[' + d.usage.input_tokens + ' tokens in, ' + d.usage.output_tokens + ' out]');
        }
        refresh();
        break;
      case 'cancelled': unlive(c); break;
      case 'warning': note(c, 'warning: ' + safe(d.text), 'warn'); break;
      case 'note': case 'recovery': note(c, safe(d.text)); break;
      case 'error': if (d.fatal) note(c, safe(d.text), 'err'); break;
      case 'removed': note(c, 'This conversation was removed.', 'err'); break;
      case 'shutdown': note(c, 'mote is stopping (' + d.reason + ').', 'warn'); break;
      default: break;
    }
  }

  // ---- drawing the conversation ------------------------------------------

  function add(node) {
    const log = $('log');
    const end = log.scrollHeight - log.scrollTop - log.clientHeight < 40;
    if (conv && conv.preview && conv.preview.parentNode === log) log.insertBefore(node, conv.preview);
    else log.append(node);
    if (end) log.scrollTop = log.scrollHeight;
  }

  function note(c, text, cls) {
    if (c === conv) add(el('div', 'note' + (cls ? ' ' + cls : ''), text));
  }

  function live(c, text) {
    if (!c.preview) {
      c.preview = el('div', 'b mote live');
      $('log').append(c.preview);
    }
    c.preview.append(safe(text));
    const log = $('log');
    log.scrollTop = log.scrollHeight;
  }

  function unlive(c) {
    if (c.preview) c.preview.remove();
    c.preview = null;
  }

  function summary(input) {
    const s = input && typeof input === 'object' && (typeof input.command === 'string' ? input.command
      : typeof input.path === 'string' ? input.path : null);
    const t = s !== null && s !== undefined ? s : JSON.stringify(input);
    const one = safe(t, true).replace(/\s+/g, ' ');
    return one.length > 100 ? one.slice(0, 97) + '...' : one;
  }

  function card(c, call) {
    if (c.cards.has(call.id)) return;
    const d = el('details', 'card');
    const s = el('summary');
    s.append(el('span', 'tn', safe(call.name, true)), ' ', el('span', 'ts', summary(call.input)));
    d.append(s, el('pre', '', safe(JSON.stringify(call.input, null, 2), true)));
    if (call.refused) d.append(el('div', 'err', 'refused: ' + safe(call.refused, true)));
    c.cards.set(call.id, d);
    add(d);
  }

  function answer(c, text) {
    if (!c.answer) {
      c.answer = el('div', 'b mote');
      add(c.answer);
    }
    c.answer.append(safe(text));
  }

  function record(c, r) {
    switch (r.t) {
      case 'user':
        unlive(c);
        c.answer = null;
        add(el('div', 'b user', safe(r.text)));
        break;
      case 'text': answer(c, r.text); break;
      case 'call': card(c, r); break;
      case 'assistant':
        unlive(c);
        if (r.text) answer(c, r.text);
        if (r.interrupted && c.answer) c.answer.append(el('span', 'dim', ' (interrupted)'));
        else if (r.interrupted) note(c, '(the answer was interrupted)');
        c.answer = null;
        for (const k of r.calls || []) card(c, k);
        break;
      case 'tool_result': {
        let k = c.cards.get(r.id);
        if (!k) {
          card(c, { id: r.id, name: 'result', input: {} });
          k = c.cards.get(r.id);
        }
        k.classList.remove('run');
        k.append(el('pre', r.error ? 'bad' : 'out', safe(r.text)));
        break;
      }
      case 'cancel': note(c, '(cancelled)'); break;
      case 'allow': note(c, 'always allowed here: ' + safe(r.tool, true)); break;
      case 'compact': note(c, '(the conversation so far was summarised)'); break;
      case 'auto': note(c, '(recovery went on by itself)'); break;
      case 'mark': note(c, '(cut by a shutdown: it goes on when mote is back)', 'warn'); break;
      case 'error': note(c, safe(r.message), 'err'); break;
      default: break;
    }
  }

  function busy(on) {
    if (conv) conv.busy = on;
    show('stop', on);
    $('send').disabled = on;
  }

  function state(c, d) {
    $('conv-state').textContent = d.state;
    for (const li of $('convs').children) {
      if (li.dataset.id === c.id) li.querySelector('.badge').textContent = d.state;
    }
    busy(!!d.busy);
    if (d.approval) ask(c, d.approval);
    else if (d.state !== 'awaiting_approval') dismiss('ask');
    if (!d.busy) unlive(c);
  }

  // ---- a pending question: the approval ('ask') or an MCP server's ('q') --
  // Each is conv[name] while shown, in the box #name with its timer in
  // #name-timer.

  function dismiss(name) {
    if (conv) conv[name] = null;
    show(name, false);
  }

  // The seconds left before the pending question is answered by itself
  // (`word`: what that answer is), each second until it is gone or has none.
  function countdown(name, word) {
    const p = conv && conv[name];
    if (!p || !p.until) {
      $(name + '-timer').textContent = '';
      return;
    }
    const s = Math.max(0, Math.round((p.until - Date.now()) / 1000));
    $(name + '-timer').textContent = '(' + word + ' by itself in ' + (s >= 120 ? Math.round(s / 60) + ' min' : s + ' s') + ')';
    setTimeout(() => countdown(name, word), 1000);
  }

  // ---- approval: the library's display, drawn as the CLI shows it --------

  function line(l) {
    const d = el('div', 'sl k-' + l.kind);
    const t = Array.isArray(l.text) ? l.text : [];
    const pieces = () => t.map((s, i) => (i % 2 ? el('span', 'vis', s) : document.createTextNode(s)));
    switch (l.kind) {
      case 'tool': d.append('* ', ...pieces()); break;
      case 'warn': d.append('  ! this input is ambiguous: ', ...pieces()); break;
      case 'no_input': d.append('  (no input)'); break;
      case 'field':
        d.append('  ' + l.key + ': ', ...pieces());
        if (l.file === 'new') d.append(' (a new file)');
        else if (typeof l.file === 'number') d.append(' (replaces a file of ' + count(l.file, 'byte') + ')');
        break;
      case 'value': d.append('  ' + l.key + ': ', ...pieces()); break;
      case 'size':
        d.append('  ' + l.key + ': ' + count(l.bytes, 'byte') + ', ' + count(l.lines, 'line') +
          (l.no_eol ? ' (no newline at the end)' : ''));
        break;
      case 'line':
        d.append(el('span', l.mark === '-' ? 'm-del' : l.mark === '+' ? 'm-add' : '', '  ' + l.mark + ' '), ...pieces());
        break;
      case 'empty': d.append('  ' + l.mark + ' ', el('span', 'dim', '(empty)')); break;
      case 'gap':
        d.append('  ... ' + count(l.bytes, 'byte') + ' (' + count(l.lines, 'line') + ') not shown here ...');
        break;
      default: break;
    }
    return d;
  }

  function draw(a, display) {
    $('ask-display').replaceChildren(...display.lines.map(line));
    show('ask-all', display.cut);
    a.shown = true;
  }

  async function fetchDisplay(c, a, whole) {
    const j = await api('GET', '/v1/conversations/' + encodeURIComponent(c.id) + '/approval' + (whole ? '?whole=1' : ''));
    if (conv !== c || c.ask !== a || j.call_id !== a.call_id) return;
    draw(a, j.display);
  }

  function ask(c, a) {
    if (c !== conv) return;
    if (c.ask && c.ask.call_id === a.call_id && c.ask.ask_id === a.ask_id) return;
    c.ask = a;
    a.until = typeof a.expires_in_ms === 'number' && a.timeout_ms ? Date.now() + a.expires_in_ms : 0;
    $('ask-display').replaceChildren(el('div', 'dim', '…'));
    $('ask-reason').value = '';
    show('ask-all', false);
    show('ask', true);
    for (const b of ['ask-yes', 'ask-always', 'ask-no']) $(b).disabled = false;
    if (a.display) draw(a, a.display);
    else fetchDisplay(c, a, false).catch(fail);
    $('log').scrollTop = $('log').scrollHeight;
    countdown('ask', 'denied');
  }

  $('ask-all').addEventListener('click', () => {
    if (conv && conv.ask) fetchDisplay(conv, conv.ask, true).catch(fail);
  });

  function answerAsk(answer) {
    const c = conv;
    const a = c && c.ask;
    if (!a || !a.shown) return;
    const body = { call_id: a.call_id, ask_id: a.ask_id, answer };
    const why = $('ask-reason').value.trim();
    if (answer === 'no' && why) body.reason = why;
    for (const b of ['ask-yes', 'ask-always', 'ask-no']) $(b).disabled = true;
    api('POST', '/v1/conversations/' + encodeURIComponent(c.id) + '/approval', body).then(() => {
      if (c.ask === a) dismiss('ask');
    }, (x) => {
      fail(x);
      if (x.code === 'no_question' || x.code === 'stale') dismiss('ask');
      else for (const b of ['ask-yes', 'ask-always', 'ask-no']) $(b).disabled = false;
    });
  }

  $('ask-yes').addEventListener('click', () => answerAsk('yes'));
  $('ask-always').addEventListener('click', () => answerAsk('always'));
  $('ask-no').addEventListener('click', () => answerAsk('no'));

  // ---- an MCP server's question (elicitation): its form, filled -----------

  function fieldInput(f, i) {
    const id = 'q-in-' + i;
    let inp;
    const pick = (values, titles) => {
      const s = el('select');
      if (!f.required || f.default === undefined) s.append(new Option(f.required ? '(choose)' : '(none)', ''));
      values.forEach((v, k) => s.append(new Option(safe(titles && titles[k] !== undefined ? titles[k] : v, true), String(v))));
      return s;
    };
    if (Array.isArray(f.enum)) inp = pick(f.enum, f.enumTitles);
    else if (f.type === 'boolean') inp = pick([true, false], ['yes', 'no']);
    else {
      inp = el('input');
      inp.type = f.type === 'number' || f.type === 'integer' ? 'number' : 'text';
      if (f.type === 'integer') inp.step = '1';
      else if (f.type === 'number') inp.step = 'any';
      if (typeof f.minimum === 'number') inp.min = String(f.minimum);
      if (typeof f.maximum === 'number') inp.max = String(f.maximum);
      inp.autocomplete = 'off';
    }
    inp.id = id;
    if (f.required) inp.required = true;
    if (f.default !== undefined && f.default !== null) inp.value = String(f.default);
    const lab = el('label', null, safe(f.title || f.name, true) + (f.required ? ' *' : ''));
    lab.htmlFor = id;
    const box = el('div', 'q-f');
    box.append(lab);
    if (f.description) box.append(el('span', 'dim', safe(f.description, true)));
    box.append(inp);
    return box;
  }

  function question(c, d) {
    if (c !== conv || (c.q && c.q.ask_id === d.ask_id)) return;
    c.q = d;
    d.until = typeof d.expires_in_ms === 'number' && d.timeout_ms ? Date.now() + d.expires_in_ms : 0;
    $('q-title').textContent = 'The MCP server ' + safe(d.server, true) + ' asks:';
    $('q-msg').textContent = safe(d.message, true);
    $('q-fields').replaceChildren(...(d.fields || []).map(fieldInput));
    $('q-err').textContent = '';
    for (const b of ['q-send', 'q-decline', 'q-cancel']) $(b).disabled = false;
    show('q', true);
    $('log').scrollTop = $('log').scrollHeight;
    countdown('q', 'declined');
  }

  // The form's values as the server's types: an empty optional field left out.
  function content(q) {
    const out = {};
    (q.fields || []).forEach((f, i) => {
      const v = $('q-in-' + i).value;
      if (v === '') return;
      if (f.type === 'boolean') out[f.name] = v === 'true';
      else if (f.type === 'number' || f.type === 'integer') out[f.name] = Number(v);
      else out[f.name] = v;
    });
    return out;
  }

  function answerQ(action) {
    const c = conv;
    const q = c && c.q;
    if (!q) return;
    const body = { ask_id: q.ask_id, action };
    if (action === 'accept') body.content = content(q);
    for (const b of ['q-send', 'q-decline', 'q-cancel']) $(b).disabled = true;
    api('POST', '/v1/conversations/' + encodeURIComponent(c.id) + '/elicitation', body).then(() => {
      if (c.q === q) dismiss('q');
    }, (x) => {
      if (x.code === 'no_question' || x.code === 'stale') {
        fail(x);
        dismiss('q');
        return;
      }
      $('q-err').textContent = x && x.message ? x.message : String(x);
      for (const b of ['q-send', 'q-decline', 'q-cancel']) $(b).disabled = false;
    });
  }

  $('q').addEventListener('submit', (e) => {
    e.preventDefault();
    answerQ('accept');
  });
  $('q-decline').addEventListener('click', () => answerQ('decline'));
  $('q-cancel').addEventListener('click', () => answerQ('cancel'));

  // ---- sending, stopping -------------------------------------------------

  $('compose').addEventListener('submit', (e) => {
    e.preventDefault();
    const c = conv;
    const text = $('msg').value;
    if (!c || !text.trim() || c.busy) return;
    $('send').disabled = true;
    error('');
    api('POST', '/v1/conversations/' + encodeURIComponent(c.id) + '/messages', { text }).then(() => {
      if ($('msg').value === text) $('msg').value = '';
    }, (x) => {
      fail(x);
      $('send').disabled = false;
    });
  });

  $('msg').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      $('compose').requestSubmit();
    }
  });

  $('stop').addEventListener('click', () => {
    if (conv) api('POST', '/v1/conversations/' + encodeURIComponent(conv.id) + '/cancel').catch(fail);
  });

  start().catch((x) => {
    if (!(x instanceof Refused)) {
      error(x.message);
      show('login', true);
    }
  });
})();
