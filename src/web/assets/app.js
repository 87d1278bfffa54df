// The canhazgpu dashboard. Every piece of data is put on the page with
// textContent or attributes, never as HTML: user names, notes, commands and
// model names come from other users and are shown as text, with control
// characters escaped as in the terminal (shown() below).
'use strict';

const REFRESH_MS = 2000;

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

function renderReport(report) {
  const total = report.total;
  document.getElementById('report-summary').textContent =
    total.gpu_hours.toFixed(1) + ' of ' + report.available_gpu_hours.toFixed(0) +
    ' available GPU-hours reserved (' + (100 * report.used_share).toFixed(1) + '%)';
  const top = report.users.length ? report.users[0].gpu_hours : 1;
  const rows = report.users.map((u) => {
    const bar = el('div', { class: 'bar', title: u.user });
    bar.style.width = (100 * u.gpu_hours / top).toFixed(1) + '%';
    for (const part of ['busy', 'idle', 'unknown']) {
      const piece = el('div', { class: part });
      piece.style.width = (u.gpu_hours ? 100 * u[part + '_gpu_hours'] / u.gpu_hours : 0) + '%';
      bar.append(piece);
    }
    return el('div', { class: 'row' }, el('span', {}, u.user), bar,
              el('span', {}, u.gpu_hours.toFixed(1) + ' h'));
  });
  document.getElementById('report').replaceChildren(...rows);
}

async function refreshLive() {
  try {
    const [status, queue] = await Promise.all([getJson('/api/status'), getJson('/api/queue')]);
    renderStatus(status);
    renderQueue(queue);
    document.getElementById('updated').textContent =
      'updated ' + new Date().toLocaleTimeString();
    document.getElementById('connection').hidden = true;
  } catch (e) {
    document.getElementById('connection').hidden = false;
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
refreshReport();
setInterval(refreshLive, REFRESH_MS);
setInterval(refreshReport, 60000);
