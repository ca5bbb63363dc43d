// The console's page. It receives the whole view as JSON over Server-Sent
// Events and builds the page from it with DOM calls. Every string of the
// view goes into a text node (or a form value): nothing received is ever
// parsed as markup, and el() refuses attributes that could run or load
// anything.
(() => {
  'use strict';

  const csrf = document.querySelector('meta[name="csrf-token"]').content;
  const $ = (id) => document.getElementById(id);

  const allowedAttrs = new Set(['class', 'type', 'placeholder', 'maxlength', 'title', 'aria-label', 'open', 'colspan']);

  // el builds an element; children that are not nodes become text.
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith('data-') || allowedAttrs.has(k)) {
        e.setAttribute(k, v === true ? '' : String(v));
      } else {
        throw new Error('el: attribute not allowed: ' + k);
      }
    }
    for (const c of children.flat()) {
      if (c === undefined || c === null || c === false) continue;
      e.append(c instanceof Node ? c : String(c));
    }
    return e;
  }

  function short(hash) {
    if (!hash) return '—';
    return hash.length > 19 ? hash.slice(0, 19) + '…' : hash;
  }

  // ---- flash messages -----------------------------------------------------

  let flashTimer = null;
  function flash(kind, text) {
    const f = $('flash');
    f.hidden = false;
    f.className = kind;
    f.setAttribute('data-kind', kind);
    f.textContent = text;
    clearTimeout(flashTimer);
    flashTimer = setTimeout(() => { f.hidden = true; }, kind === 'error' ? 60000 : 15000);
  }

  // ---- changes --------------------------------------------------------------

  async function post(path, body, button) {
    if (button) button.disabled = true;
    let res, text;
    try {
      res = await fetch(path, {
        method: 'POST',
        credentials: 'same-origin',
        headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': csrf },
        body: JSON.stringify(body),
      });
      text = await res.text();
    } catch (e) {
      flash('error', 'The console did not answer: ' + e);
      if (button) button.disabled = false;
      return false;
    }
    let out = {};
    try { out = JSON.parse(text); } catch (e) { out = { error: text }; }
    if (res.ok) {
      flash('ok', out.message || 'done');
    } else {
      flash('error', out.error || ('HTTP ' + res.status));
      if (button) button.disabled = false;
    }
    return res.ok;
  }

  // ---- state kept across renders ---------------------------------------------

  // Review cards a person opened or folded; unless they did, a changed
  // definition is shown open and a new tool folded.
  const cardOpen = new Map();
  function keepInputs(container) {
    const kept = new Map();
    let focused = null;
    for (const i of container.querySelectorAll('input[data-key]')) {
      kept.set(i.getAttribute('data-key'), i.value);
      if (document.activeElement === i) focused = i.getAttribute('data-key');
    }
    return () => {
      for (const i of container.querySelectorAll('input[data-key]')) {
        const k = i.getAttribute('data-key');
        if (kept.has(k)) i.value = kept.get(k);
        if (k === focused) i.focus();
      }
    };
  }

  // ---- calls waiting ----------------------------------------------------------

  function renderPending(pending) {
    const body = $('calls-body');
    const restore = keepInputs(body);
    $('calls-count').textContent = pending.length ? String(pending.length) : '';
    if (!pending.length) {
      body.replaceChildren(el('p', { class: 'empty' }, 'No call is waiting for approval.'));
      return;
    }
    const rows = pending.map((c) => {
      const key = c.namespace + '/' + c.name;
      const reason = el('input', { type: 'text', maxlength: '1024', placeholder: 'reason (shown to the agent)', 'data-key': key, 'aria-label': 'reason for ' + c.name });
      const approve = el('button', { type: 'button', class: 'approve', 'data-action': 'approve-call' }, 'Approve');
      const deny = el('button', { type: 'button', class: 'deny', 'data-action': 'deny-call' }, 'Deny');
      approve.addEventListener('click', () => post('/api/calls/decide', { namespace: c.namespace, name: c.name, decision: 'Approved', reason: reason.value }, approve));
      deny.addEventListener('click', () => post('/api/calls/decide', { namespace: c.namespace, name: c.name, decision: 'Denied', reason: reason.value }, deny));
      return el('tr', { 'data-key': key, 'data-expires': c.expiresAt },
        el('td', {}, el('div', { class: 'strong' }, c.localName || c.tool), el('div', { class: 'sub' }, key)),
        el('td', {}, c.server),
        el('td', { title: (c.callerGroups || []).join(', ') }, c.caller),
        el('td', {}, el('span', { class: 'class class-' + c.dataClass }, c.dataClass)),
        el('td', { class: 'mono', title: c.argumentsHash }, short(c.argumentsHash)),
        el('td', {}, el('div', {}, new Date(c.expiresAt).toLocaleTimeString()), el('div', { class: 'sub timeleft', 'data-until': c.expiresAt }, '')),
        el('td', { class: 'decide' }, reason, el('div', { class: 'buttons' }, approve, deny)));
    });
    body.replaceChildren(el('table', {},
      el('thead', {}, el('tr', {}, ['Tool', 'Server', 'Caller', 'Data class', 'Arguments', 'Expires', 'Decision'].map((h) => el('th', {}, h)))),
      el('tbody', {}, rows)));
    restore();
    tick();
  }

  // ---- definitions to review ------------------------------------------------------

  // What a kind is called in the page: a tool, a prompt, a resource.
  const kindWords = { McpTool: 'tool', McpPrompt: 'prompt', McpResource: 'resource' };
  function kindWord(kind) {
    return kindWords[kind] || kind;
  }

  function pre(lines, cls) {
    return el('pre', { class: cls || '' }, (lines || []).join('\n'));
  }

  function diffBlock(lines) {
    return el('pre', { class: 'diff' }, (lines || []).map((l) => {
      let cls = 'ctx';
      if (l.startsWith('+++') || l.startsWith('---')) cls = 'file';
      else if (l.startsWith('@@')) cls = 'hunk';
      else if (l.startsWith('+')) cls = 'add';
      else if (l.startsWith('-')) cls = 'del';
      return el('span', { class: cls }, l + '\n');
    }));
  }

  function renderReviews(reviews) {
    const body = $('reviews-body');
    $('reviews-count').textContent = reviews.length ? String(reviews.length) : '';
    if (!reviews.length) {
      body.replaceChildren(el('p', { class: 'empty' }, 'Every definition is approved.'));
      return;
    }
    // A card the person opened or folded since it was shown keeps that
    // state. Read from the page at render time: a toggle event is queued,
    // and a render that ran before it would fold a card just opened.
    // A tool, a prompt and a resource may have one name: the kind is part
    // of what the page remembers.
    for (const d of body.querySelectorAll('details[data-key]')) {
      if (d.open !== d.shownOpen) cardOpen.set(d.getAttribute('data-object') + ' ' + d.getAttribute('data-key'), d.open);
    }
    body.replaceChildren(...reviews.map((r) => {
      const key = r.namespace + '/' + r.name;
      const kind = r.objectKind;
      const approve = el('button', { type: 'button', class: 'approve', 'data-action': 'approve-definition', 'data-hash': r.currentHash }, 'Approve ' + short(r.currentHash));
      approve.addEventListener('click', () => post('/api/tools/approve', { kind: kind, namespace: r.namespace, name: r.name, hash: r.currentHash }, approve));
      const toggle = el('button', { type: 'button', 'data-action': r.enabled ? 'disable' : 'enable' }, r.enabled ? 'Disable' : 'Enable');
      toggle.addEventListener('click', () => post('/api/tools/enable', { kind: kind, namespace: r.namespace, name: r.name, enabled: !r.enabled }, toggle));
      const parts = [];
      if (r.warnings && r.warnings.length) {
        parts.push(el('ul', { class: 'warnings' }, r.warnings.map((w) => el('li', {}, w))));
      }
      if (r.approved && r.approved.length) {
        parts.push(el('div', { class: 'side' },
          el('div', {}, el('h4', {}, 'Approved ', el('span', { class: 'mono' }, short(r.approvedHash))), pre(r.approved, 'def approved')),
          el('div', {}, el('h4', {}, 'Current ', el('span', { class: 'mono' }, short(r.currentHash))), pre(r.current, 'def current'))));
        parts.push(el('h4', {}, 'What changed'), diffBlock(r.diff));
      } else {
        if (r.kind === 'drifted') {
          parts.push(el('p', { class: 'note' }, 'The definition changed, and the approved text is not on record (it was approved after the importer last replaced it): compare the current definition with what you approved.'));
        }
        parts.push(el('h4', {}, 'Current definition ', el('span', { class: 'mono' }, short(r.currentHash))), pre(r.current, 'def current'));
      }
      const openKey = kind + ' ' + key;
      const open = cardOpen.has(openKey) ? cardOpen.get(openKey) : r.kind === 'drifted';
      const details = el('details', { 'data-key': key, 'data-object': kind, 'data-kind': r.kind, open: open },
        el('summary', {},
          el('span', { class: 'badge ' + r.kind }, r.kind === 'drifted' ? 'changed' : 'new'),
          el('span', { class: 'badge object' }, kindWord(kind)),
          el('span', { class: 'strong' }, r.localName || (kind === 'McpResource' ? r.remoteName : r.name)),
          el('span', { class: 'sub' }, key + ' (' + kind + ') · ' + kindWord(kind) + ' ' + r.remoteName + ' of McpServer ' + r.server + ' · ' + (r.enabled ? 'enabled' : 'disabled'))),
        el('div', { class: 'card-body' }, parts,
          el('div', { class: 'buttons' }, approve, toggle),
          el('p', { class: 'sub' }, 'Approving approves exactly ', el('span', { class: 'mono' }, r.currentHash),
            '; if the server changes the definition meanwhile, the approval is refused.')));
      details.shownOpen = open;
      return details;
    }));
  }

  // ---- overview ---------------------------------------------------------------------

  function status(s, reason) {
    return el('span', { class: 'status status-' + s }, s + (reason ? ' · ' + reason : ''));
  }

  // The overview's lists a person opened stay open across updates.
  const sectionOpen = new Map();

  function renderOverview(namespaces) {
    const body = $('overview-body');
    for (const d of body.querySelectorAll('details[data-section]')) {
      sectionOpen.set(d.closest('[data-namespace]').getAttribute('data-namespace') + ' ' + d.getAttribute('data-section'), d.open);
    }
    const section = (ns, name, summary, table) => el('details', { 'data-section': name, open: sectionOpen.get(ns + ' ' + name) === true },
      el('summary', {}, summary), table);
    if (!namespaces.length) {
      body.replaceChildren(el('p', { class: 'empty' }, 'No McpServer here.'));
      return;
    }
    body.replaceChildren(...namespaces.map((n) => {
      const servers = el('table', {},
        el('thead', {}, el('tr', {}, ['Server', 'Ready', 'Reachable', 'Last contact', 'Era', 'Class', 'Tools'].map((h) => el('th', {}, h)))),
        el('tbody', {}, n.servers.map((s) => el('tr', { 'data-key': n.name + '/' + s.name },
          el('td', {}, el('div', { class: 'strong' }, s.name), s.serverName ? el('div', { class: 'sub' }, s.serverName + (s.version ? ' ' + s.version : '')) : null),
          el('td', { title: s.message || '' }, status(s.ready, s.ready === 'True' ? '' : s.reason), s.suspended ? el('div', { class: 'sub' }, 'suspended') : null),
          el('td', {}, status(s.reachable, '')),
          el('td', {}, s.lastContact ? el('span', { 'data-since': s.lastContact }, '') : '—', s.latency ? el('div', { class: 'sub' }, s.latency) : null),
          el('td', { class: 'mono' }, s.era || '—'),
          el('td', {}, el('span', { class: 'class class-' + s.dataClass }, s.dataClass), s.approvalRequired ? el('div', { class: 'sub' }, 'approval per call') : null),
          el('td', { class: 'counts' },
            el('span', { class: 'n served' }, s.counts.served + ' served'),
            el('span', { class: 'n review' }, s.counts.review + ' to review'),
            el('span', { class: 'n disabled' }, s.counts.disabled + ' disabled'),
            s.counts.notReady ? el('span', { class: 'n notready' }, s.counts.notReady + ' not ready') : null)))));
      const tools = el('table', { class: 'tools' },
        el('thead', {}, el('tr', {}, ['Tool', 'Server', 'Class', 'Ready', ''].map((h) => el('th', {}, h)))),
        el('tbody', {}, n.tools.map((t) => {
          const b = el('button', { type: 'button', 'data-action': t.enabled ? 'disable' : 'enable' }, t.enabled ? 'Disable' : 'Enable');
          b.addEventListener('click', () => post('/api/tools/enable', { kind: 'McpTool', namespace: t.namespace, name: t.name, enabled: !t.enabled }, b));
          return el('tr', { 'data-key': t.namespace + '/' + t.name },
            el('td', {}, el('div', { class: 'strong' }, t.localName || t.name), el('div', { class: 'sub' }, t.name)),
            el('td', {}, t.server),
            el('td', {}, t.dataClass || '—'),
            el('td', {}, status(t.ready, t.ready === 'True' ? '' : t.reason)),
            el('td', {}, b));
        })));
      const features = n.features || [];
      const featureTable = el('table', { class: 'features' },
        el('thead', {}, el('tr', {}, ['Prompt or resource', 'Kind', 'Server', 'Class', 'Ready', ''].map((h) => el('th', {}, h)))),
        el('tbody', {}, features.map((f) => {
          const b = el('button', { type: 'button', 'data-action': f.enabled ? 'disable' : 'enable' }, f.enabled ? 'Disable' : 'Enable');
          b.addEventListener('click', () => post('/api/tools/enable', { kind: f.objectKind, namespace: f.namespace, name: f.name, enabled: !f.enabled }, b));
          return el('tr', { 'data-key': f.namespace + '/' + f.name, 'data-object': f.objectKind },
            el('td', {}, el('div', { class: 'strong' }, f.localName || f.remoteName), el('div', { class: 'sub' }, f.name)),
            el('td', {}, kindWord(f.objectKind)),
            el('td', {}, f.server),
            el('td', {}, f.dataClass || '—'),
            el('td', {}, status(f.ready, f.ready === 'True' ? '' : f.reason)),
            el('td', {}, b));
        })));
      return el('div', { class: 'namespace', 'data-namespace': n.name }, el('h3', {}, 'namespace ' + n.name), servers,
        n.tools.length ? section(n.name, 'tools', n.tools.length + ' tools', tools) : null,
        features.length ? section(n.name, 'features', features.length + ' prompts and resources', featureTable) : null);
    }));
  }

  // ---- decided calls ------------------------------------------------------------------

  function renderDecided(decided) {
    const body = $('decided-body');
    if (!decided.length) {
      body.replaceChildren(el('p', { class: 'empty' }, 'No call was decided yet.'));
      return;
    }
    body.replaceChildren(el('table', {},
      el('thead', {}, el('tr', {}, ['Call', 'Tool', 'Caller', 'State', 'Decided by', 'Reason', 'Used'].map((h) => el('th', {}, h)))),
      el('tbody', {}, decided.map((c) => el('tr', { 'data-key': c.namespace + '/' + c.name, 'data-state': c.state },
        el('td', { class: 'mono' }, c.namespace + '/' + c.name),
        el('td', {}, c.localName || c.tool),
        el('td', {}, c.caller),
        el('td', {}, el('span', { class: 'state state-' + c.state }, c.state)),
        el('td', {}, c.decidedBy || '—'),
        el('td', {}, c.reason || ''),
        el('td', {}, c.usedAt ? new Date(c.usedAt).toLocaleTimeString() : '—'))))));
  }

  // ---- your upstream authorizations ---------------------------------------------------
  // Read on demand, not from the view: only the signed-in person's own,
  // from the Secrets' metadata (the console's backend filters them).

  function when(t) {
    return t ? new Date(t).toLocaleString() : '—';
  }

  async function loadAuthorizations() {
    const body = $('authorizations-body');
    let res, out;
    try {
      res = await fetch('/api/authorizations', { credentials: 'same-origin' });
      out = JSON.parse(await res.text());
    } catch (e) {
      body.replaceChildren(el('p', { class: 'empty' }, 'The console did not answer: ' + e));
      return;
    }
    if (!res.ok) {
      body.replaceChildren(el('p', { class: 'refused', 'data-refused': 'authorizations' }, out.error || ('HTTP ' + res.status)));
      return;
    }
    renderAuthorizations(out.items || []);
  }

  function renderAuthorizations(items) {
    const body = $('authorizations-body');
    $('authorizations-count').textContent = items.length ? String(items.length) : '';
    const refresh = el('button', { type: 'button', 'data-action': 'refresh-authorizations' }, 'Refresh');
    refresh.addEventListener('click', loadAuthorizations);
    if (!items.length) {
      body.replaceChildren(el('p', { class: 'empty' }, 'You have no stored authorization of a per-person McpServer here.'), refresh);
      return;
    }
    const rows = items.map((a) => {
      const revoke = el('button', { type: 'button', class: 'deny', 'data-action': 'revoke-authorization' }, 'Revoke');
      revoke.addEventListener('click', async () => {
        if (await post('/api/authorizations/revoke', { namespace: a.namespace, name: a.name }, revoke)) loadAuthorizations();
      });
      return el('tr', { 'data-key': a.namespace + '/' + a.server, 'data-state': a.state },
        el('td', {}, el('div', { class: 'strong' }, a.server), el('div', { class: 'sub' }, a.namespace)),
        el('td', {}, el('span', { class: 'state state-' + a.state }, a.state)),
        el('td', {}, when(a.granted)),
        el('td', { class: 'mono' }, a.scopes || '—'),
        el('td', {}, when(a.expires)),
        el('td', {}, revoke));
    });
    body.replaceChildren(el('table', {},
      el('thead', {}, el('tr', {}, ['Server', 'State', 'Granted', 'Scopes', 'Access token expires', ''].map((h) => el('th', {}, h)))),
      el('tbody', {}, rows)),
    el('p', { class: 'sub' }, 'Revoke revokes the tokens at the server\'s authorization server (when it offers revocation), then deletes them; your next call of the server\'s tools asks you to authorize it again.'),
    refresh);
  }

  // ---- the whole view -------------------------------------------------------------------

  let renders = 0;
  function render(v) {
    $('user').textContent = v.user ? 'as ' + v.user : '';
    const problems = v.problems || [];
    $('problems').hidden = problems.length === 0;
    $('problem-list').replaceChildren(...problems.map((p) => el('li', {}, el('span', { class: 'strong' }, p.what + ': '), p.message)));
    renderPending(v.pending || []);
    renderReviews(v.reviews || []);
    renderOverview(v.namespaces || []);
    renderDecided(v.decided || []);
    renders++;
    document.body.setAttribute('data-renders', String(renders));
    tick();
  }

  // tick keeps times relative to now: time left on waiting calls (a call
  // that expired can no longer be decided), time since last contact.
  function tick() {
    const now = Date.now();
    for (const e of document.querySelectorAll('[data-until]')) {
      const left = Math.floor((Date.parse(e.getAttribute('data-until')) - now) / 1000);
      const row = e.closest('tr');
      if (left <= 0) {
        e.textContent = 'expired';
        if (row) {
          row.classList.add('expired');
          for (const b of row.querySelectorAll('button')) b.disabled = true;
        }
      } else {
        e.textContent = Math.floor(left / 60) + 'm ' + String(left % 60).padStart(2, '0') + 's left';
      }
    }
    for (const e of document.querySelectorAll('[data-since]')) {
      const ago = Math.max(0, Math.floor((now - Date.parse(e.getAttribute('data-since'))) / 1000));
      e.textContent = ago < 60 ? ago + 's ago' : ago < 3600 ? Math.floor(ago / 60) + 'm ago' : Math.floor(ago / 3600) + 'h ago';
    }
  }
  setInterval(tick, 1000);

  function setLive(state, text) {
    const l = $('live');
    l.setAttribute('data-live', state);
    l.textContent = text;
  }

  loadAuthorizations();

  const events = new EventSource('/events');
  events.addEventListener('open', () => setLive('live', 'live'));
  events.addEventListener('error', () => setLive('down', events.readyState === EventSource.CLOSED ? 'disconnected: reload, or restart kubectl mcp console' : 'reconnecting…'));
  events.addEventListener('view', (e) => {
    setLive('live', 'live');
    render(JSON.parse(e.data));
  });
})();
