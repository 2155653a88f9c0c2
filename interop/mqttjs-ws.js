// MQTT.js 5 over WebSocket against a broker's ws:// (or wss://) listener: connects with subprotocol mqtt on path /mqtt,
// subscribes, publishes QoS 0, 1 and 2 (one of them larger than a WebSocket frame the broker sends, 16 KiB), checks
// every message arrives once, in order, with its payload; MQTT 3.1.1 and 5.0. Exits 0 when all pass, 1 otherwise.
// Run: npm install --prefix /tmp/mqttjs mqtt@5 && NODE_PATH=/tmp/mqttjs/node_modules node interop/mqttjs-ws.js PORT
//      wss: NODE_PATH=/tmp/mqttjs/node_modules node interop/mqttjs-ws.js PORT --tls --cafile ca.pem [--path /mqtt]
//      [--host 127.0.0.1] [--servername localhost]  (the certificate's name, when it is not 127.0.0.1)
const fs = require('fs');
const mqtt = require('mqtt');

const args = process.argv.slice(2);
const option = (name, fallback) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : fallback; };
const port = Number(args[0] || 8080);
const tls = args.includes('--tls') || args.includes('--cafile');
const cafile = option('--cafile', null);
const path = option('--path', '/mqtt');
const host = option('--host', '127.0.0.1');
const servername = option('--servername', null);
const url = `${tls ? 'wss' : 'ws'}://${host}:${port}${path}`;
const results = [];
const wait = (ms) => new Promise((r) => setTimeout(r, ms));

function client(id, version) {
  return new Promise((resolve, reject) => {
    const opts = { protocolVersion: version, clientId: id, reconnectPeriod: 0, connectTimeout: 5000, clean: true };
    if (cafile) { opts.ca = fs.readFileSync(cafile); opts.rejectUnauthorized = true; }
    if (servername) opts.servername = servername;
    const c = mqtt.connect(url, opts);
    c.got = [];
    c.on('message', (t, p, pkt) => c.got.push({ t, p: p.toString(), qos: pkt.qos }));
    c.once('connect', () => resolve(c));
    c.once('error', reject);
  });
}
async function until(pred, ms = 5000) { const end = Date.now() + ms; while (Date.now() < end) { if (pred()) return true; await wait(20); } return pred(); }
async function check(name, fn) {
  try { const ok = await fn(); results.push([name, ok ? 'ok' : 'FAILED']); }
  catch (e) { results.push([name, 'FAILED: ' + e.message]); }
}

(async () => {
  for (const version of [4, 5]) {
    const v = version === 5 ? '5.0' : '3.1.1';
    await check(`${url} MQTT ${v}: QoS 0/1/2 delivered once, in order`, async () => {
      const s = await client(`ws-sub-${version}`, version);
      await s.subscribeAsync(`ws/${version}/#`, { qos: 2 });
      const p = await client(`ws-pub-${version}`, version);
      const big = 'x'.repeat(40 * 1024); // spans several of the broker's frames
      const sent = [];
      for (const q of [0, 1, 2]) {
        for (let i = 0; i < 5; i++) {
          const payload = `q${q}-${i}` + (i === 4 ? big : '');
          sent.push({ t: `ws/${version}/${q}`, p: payload, qos: q });
          await p.publishAsync(`ws/${version}/${q}`, payload, { qos: q });
        }
      }
      const ok = await until(() => s.got.length >= sent.length);
      await wait(200); // nothing more may come
      s.end(); p.end();
      const same = s.got.length === sent.length && s.got.every((m, i) => m.t === sent[i].t && m.p === sent[i].p && m.qos === sent[i].qos);
      if (!same) console.error(`got ${s.got.length} of ${sent.length}:`, s.got.map((m) => `${m.t} q${m.qos} ${m.p.length}`).join(', '));
      return ok && same;
    });
  }
  await check(`${url}: a retained message to a later subscriber`, async () => {
    const p = await client('ws-ret-pub', 5); await p.publishAsync('ws/ret', 'kept', { qos: 1, retain: true }); p.end();
    const s = await client('ws-ret-sub', 5); await s.subscribeAsync('ws/ret', { qos: 1 });
    const ok = await until(() => s.got.length === 1); s.end();
    const c = await client('ws-ret-clear', 5); await c.publishAsync('ws/ret', '', { qos: 1, retain: true }); c.end();
    return ok && s.got[0].p === 'kept';
  });
  let failed = 0;
  for (const [name, verdict] of results) { console.log(`${verdict === 'ok' ? 'ok    ' : 'FAILED'} ${name}${verdict === 'ok' ? '' : ' ' + verdict}`); if (verdict !== 'ok') failed++; }
  console.log(`${results.length - failed}/${results.length} passed`);
  process.exit(failed ? 1 : 0);
})().catch((e) => { console.error(e); process.exit(1); });
