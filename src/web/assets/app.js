// The canhazgpu dashboard. Every piece of data is put on the page with
// textContent or attributes, never as HTML: user names, notes, commands and
// model names come from other users and are shown as text, with control
// characters escaped as in the terminal (shown() below).
'use strict';

const REFRESH_MS = 2000;
// The server asks remote hosts at most every 15 s, whatever we do.
const HOSTS_REFRESH_MS = 5000;

// docs/cli.md, "Text from other users": what EscapeForDisplay does in the
// CLI. The API's JSON already shows bytes that are not UTF-8 as \xNN; here
// C0, DEL, C1, the bidi controls and the line separators become visible
// escapes, so a note cannot reorder or break the text around it.
const HIDDEN = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;
const NAMED = { 7: 'a', 8: 'b', 9: 't', 10: 'n', 11: 'v', 12: 'f', 13: 'r', 27: 'e' };

function shown(text) {
  return String(text).replace(HIDDEN, (c) => {
    const code = c.charCodeAt(0);
    if (NAMED[code]) return '\\' + NAMED[code];
    const hex = code.toString(16);
    return code < 0x80 ? '\\x' + hex.padStart(2, '0') : '\\u' + hex.padStart(4, '0');
  });
}

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') node.className = v;
    else node.setAttribute(k, shown(v));
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    node.append(c instanceof Node ? c : document.createTextNode(shown(c)));
  }
  return node;
}

function humanize(seconds) {
  if (seconds === undefined || seconds === null || seconds < 0) return '';
  if (seconds < 60) return Math.floor(seconds) + 's';
  const m = Math.floor(seconds / 60), h = Math.floor(m / 60), d = Math.floor(h / 24);
  if (h < 1) return m + 'm';
  if (d < 1) return h + 'h ' + (m % 60) + 'm';
  return d + 'd ' + (h % 24) + 'h';
}

async function getJson(path) {
  const response = await fetch(path, { cache: 'no-store' });
  if (!response.ok) throw new Error(path + ': ' + response.status);
  return response.json();
}

function gpuCard(g) {
  const label = { AVAILABLE: 'available', IN_USE: 'in use', UNRESERVED: 'in use, unreserved',
                  ERROR: 'error' }[g.status] || g.status;
  const card = el('div', { class: 'card', 'data-gpu': g.gpu_id, 'data-state': g.status },
    el('div', { class: 'top' }, el('span', {}, 'GPU ' + g.gpu_id),
       el('span', { class: 'state' }, label)));
  if (g.product) card.append(el('div', { class: 'line' }, g.product));
  if (g.memory_total_mib) {
    const share = Math.min(1, (g.memory_used_mib || 0) / g.memory_total_mib);
    const fill = el('div', { class: share >= 0.7 ? 'high' : share >= 0.4 ? 'mid' : '' });
    fill.style.width = (share * 100).toFixed(1) + '%';
    card.append(el('div', { class: 'mem', title: 'memory' }, fill),
                el('div', { class: 'line' },
                   (g.memory_used_mib / 1024).toFixed(1) + ' / ' +
                   (g.memory_total_mib / 1024).toFixed(0) + ' GiB'));
  }
  if (g.user) {
    const who = el('div', { class: 'user' }, g.user);
    if (g.type) who.append(' · ' + g.type.toLowerCase());
    if (g.duration_seconds !== undefined) who.append(' · ' + humanize(g.duration_seconds));
    card.append(who);
  }
  if (g.details && g.status !== 'UNRESERVED') card.append(el('div', { class: 'line' }, g.details));
  if (g.process_info) card.append(el('div', { class: 'line' }, g.process_info));
  if (g.model && g.model.model) card.append(el('div', { class: 'line' }, 'model: ' + g.model.model));
  if (g.note) card.append(el('div', { class: 'line note' }, g.note));
  for (const p of (g.processes || []).slice(0, 4)) {
    card.append(el('div', { class: 'line' },
                   p.pid + ' ' + p.user + ': ' + p.command + ' (' + p.used_memory_mib + ' MiB)'));
  }
  if (g.error) card.append(el('div', { class: 'line' }, g.error));
  return card;
}

function renderStatus(status) {
  document.getElementById('host').textContent = shown(status.host);
  const counts = {};
  for (const g of status.gpus) counts[g.status] = (counts[g.status] || 0) + 1;
  document.getElementById('gpu-summary').textContent =
    (counts.AVAILABLE || 0) + ' of ' + status.gpus.length + ' free';
  document.getElementById('gpus').replaceChildren(...status.gpus.map(gpuCard));
}

function renderQueue(queue) {
  const rows = queue.entries.map((e) => el('tr', { 'data-user': e.user },
    el('td', {}, e.position), el('td', {}, e.user),
    el('td', {}, e.requested_ids ? 'GPUs ' + e.requested_ids.join(',') : e.requested_gpus + ' GPU(s)'),
    el('td', {}, e.held_gpus.length + '/' + e.requested_gpus),
    el('td', {}, humanize(e.waited_seconds)), el('td', {}, e.note || '')));
  document.querySelector('#queue tbody').replaceChildren(...rows);
  document.getElementById('queue').hidden = rows.length === 0;
  document.getElementById('queue-empty').hidden = rows.length !== 0;
  document.getElementById('queue-summary').textContent =
    rows.length ? rows.length + ' waiting' : '';
}

// Largest remainder: `values` (in whole units, not rounded) rounded to whole
// units that add up to `total`, each rounded down or up, the ones that lost
// the most to rounding down going up first. So the parts a row shows add up
// to the total it shows.
function apportion(values, total) {
  const shown = values.map(Math.floor);
  let left = total - shown.reduce((a, b) => a + b, 0);
  const order = values.map((_, i) => i)
    .sort((a, b) => (values[b] - shown[b]) - (values[a] - shown[a]) || a - b);
  for (const i of order) {
    if (left <= 0) break;
    shown[i] += 1;
    left -= 1;
  }
  return shown;
}

// The report table in tenths of GPU-hours (and of percent): the users'
// totals add up to the TOTAL row's, each user's RUN + MANUAL + K8S to the
// user's total, and the TOTAL row's parts are the sums of the columns as
// shown, so every sum on the page holds as displayed.
function reportTable(report) {
  const k8s = report.total.k8s_gpu_hours > 0;
  const grand = Math.round(report.total.gpu_hours * 10);
  const totals = apportion(report.users.map((u) => u.gpu_hours * 10), grand);
  const sum = report.users.reduce((a, u) => a + u.gpu_hours, 0);
  const shares = sum > 0 ? apportion(report.users.map((u) => 1000 * u.gpu_hours / sum), 1000)
                         : report.users.map(() => 0);
  const columns = [0, 0, 0];
  const rows = report.users.map((u, i) => {
    const parts = apportion([u.run_gpu_hours, u.manual_gpu_hours, u.k8s_gpu_hours]
      .map((h) => h * 10), totals[i]);
    parts.forEach((p, c) => { columns[c] += p; });
    return { user: u, total: totals[i], share: shares[i], parts };
  });
  return { k8s, grand, rows, columns, shares: sum > 0 ? 1000 : 0 };
}

function tenths(n) { return (n / 10).toFixed(1); }

function renderReport(report) {
  const table = reportTable(report);
  document.getElementById('report-summary').textContent =
    report.start.slice(0, 10) + ' to ' + report.end.slice(0, 10) + ': ' + tenths(table.grand) +
    ' of ' + report.available_gpu_hours.toFixed(0) + ' available GPU-hours reserved (' +
    (100 * report.used_share).toFixed(1) + '%)';
  const top = report.users.length ? report.users[0].gpu_hours : 1;
  const cells = (total, share, parts, bar) => {
    const out = [el('td', { class: 'num' }, tenths(total)), el('td', { class: 'barcell' }, bar),
                 el('td', { class: 'num' }, tenths(share) + '%'),
                 el('td', { class: 'num' }, tenths(parts[0])),
                 el('td', { class: 'num' }, tenths(parts[1]))];
    if (table.k8s) out.push(el('td', { class: 'num' }, tenths(parts[2])));
    return out;
  };
  const rows = table.rows.map(({ user: u, total, share, parts }) => {
    const bar = el('div', { class: 'bar', title: u.user });
    bar.style.width = (100 * u.gpu_hours / top).toFixed(1) + '%';
    for (const part of ['busy', 'idle', 'unknown']) {
      const piece = el('div', { class: part });
      piece.style.width = (u.gpu_hours ? 100 * u[part + '_gpu_hours'] / u.gpu_hours : 0) + '%';
      bar.append(piece);
    }
    return el('tr', { 'data-user': u.user }, el('td', {}, u.user),
              ...cells(total, share, parts, bar));
  });
  const element = document.getElementById('report');
  element.querySelector('tbody').replaceChildren(...rows);
  element.querySelector('tfoot').replaceChildren(...(rows.length
    ? [el('tr', {}, el('td', {}, 'TOTAL'), ...cells(table.grand, table.shares, table.columns, null))]
    : []));
  element.classList.toggle('with-k8s', table.k8s);
}

function renderHosts(hosts) {
  document.getElementById('hosts-section').hidden = hosts.length < 2;
  const rows = hosts.map((h) => {
    const name = el('td', {}, h.host + (h.local ? ' (this host)' : ''));
    if (h.error !== undefined || !h.summary) {
      return el('tr', { 'data-host': h.host }, name,
                el('td', { class: 'unreachable', colspan: '6' }, 'unreachable: ' + (h.error || '')));
    }
    const s = h.summary;
    return el('tr', { 'data-host': h.host }, name, el('td', { class: 'num' }, s.gpus),
              el('td', {}, s.products || '-'), el('td', { class: 'num' }, s.available),
              // GPUs shared by memory are their own count (status --summary's SHARED).
              el('td', { class: 'num' },
                 s.shared > 0 ? `${s.in_use} + ${s.shared} shared` : s.in_use),
              el('td', { class: 'num' }, s.unreserved),
              el('td', { class: 'num' }, s.waiting));
  });
  document.querySelector('#hosts tbody').replaceChildren(...rows);
}

async function refreshLive() {
  try {
    const [status, queue] = await Promise.all([getJson('/api/status'), getJson('/api/queue')]);
    renderStatus(status);
    renderQueue(queue);
    document.getElementById('demo').hidden = !status.demo;
    document.title = status.demo ? 'canhazgpu (demo)' : 'canhazgpu';
    document.getElementById('updated').textContent =
      'updated ' + new Date().toLocaleTimeString();
    document.getElementById('connection').hidden = true;
  } catch (e) {
    document.getElementById('connection').hidden = false;
  }
}

async function refreshHosts() {
  try {
    renderHosts((await getJson('/api/hosts')).hosts);
  } catch (e) {
    // The live refresh shows the connection's state.
  }
}

async function refreshReport() {
  try {
    renderReport(await getJson('/api/report?days=' + document.getElementById('days').value));
  } catch (e) {
    document.getElementById('report-summary').textContent = 'report unavailable';
  }
}

document.getElementById('days').addEventListener('change', refreshReport);
refreshLive();
refreshHosts();
refreshReport();
setInterval(refreshLive, REFRESH_MS);
setInterval(refreshHosts, HOSTS_REFRESH_MS);
setInterval(refreshReport, 60000);
