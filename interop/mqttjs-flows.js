// MQTT.js 5 against a broker on 127.0.0.1:PORT: the main MQTT 5.0 flows, each checked; exits 1 on a failure.
// Run: npm install --prefix /tmp/mqttjs mqtt@5 && NODE_PATH=/tmp/mqttjs/node_modules node interop/mqttjs-flows.js PORT
const mqtt = require('mqtt');
const port = Number(process.argv[2] || 1883);
const url = `mqtt://127.0.0.1:${port}`;
const results = [];
const wait = (ms) => new Promise((r) => setTimeout(r, ms));
function client(id, opts = {}) {
  return new Promise((resolve, reject) => {
    const c = mqtt.connect(url, Object.assign({ protocolVersion: 5, clientId: id, reconnectPeriod: 0, connectTimeout: 5000 }, opts));
    c.early = []; c.on('message', (t, p, pkt) => c.early.push({ t, p: p.toString(), pkt })); // before CONNACK's tick
    c.once('connect', (connack) => { c.connack = connack; resolve(c); });
    c.once('error', reject);
  });
}
function collect(c) { return c.early; }
async function until(pred, ms = 5000) { const end = Date.now() + ms; while (Date.now() < end) { if (pred()) return true; await wait(20); } return pred(); }
async function check(name, fn) {
  try { const ok = await fn(); results.push([name, ok ? 'ok' : 'FAILED']); }
  catch (e) { results.push([name, 'FAILED: ' + e.message]); }
}
(async () => {
  await check('QoS 0/1/2 with user properties in order', async () => {
    const s = await client('js-sub'); const got = collect(s);
    await s.subscribeAsync('js/q/#', { qos: 2 });
    const p = await client('js-pub');
    for (const q of [0, 1, 2]) await p.publishAsync('js/q/' + q, 'm' + q, { qos: q, properties: { userProperties: { a: '1', b: '2' }, contentType: 'text/plain' } });
    const ok = await until(() => got.length === 3);
    const props = got.map((m) => JSON.stringify(m.pkt.properties && m.pkt.properties.userProperties));
    s.end(); p.end();
    return ok && got.map((m) => m.p).join() === 'm0,m1,m2' && props.every((x) => x === '{"a":"1","b":"2"}') &&
      got.every((m) => m.pkt.properties.contentType === 'text/plain');
  });
  await check('retained message to a later subscriber', async () => {
    const p = await client('js-ret-pub'); await p.publishAsync('js/ret', 'kept', { qos: 1, retain: true }); p.end();
    const s = await client('js-ret-sub'); const got = collect(s); await s.subscribeAsync('js/ret', { qos: 1 });
    const ok = await until(() => got.length === 1); s.end();
    await (await client('js-ret-clear')).publishAsync('js/ret', '', { qos: 1, retain: true });
    return ok && got[0].p === 'kept' && got[0].pkt.retain === true;
  });
  await check('will on a lost connection', async () => {
    const s = await client('js-will-sub'); const got = collect(s); await s.subscribeAsync('js/will', { qos: 1 });
    const w = await client('js-mortal', { will: { topic: 'js/will', payload: Buffer.from('gone'), qos: 1 } });
    w.stream.destroy();
    const ok = await until(() => got.length === 1); s.end(); return ok && got[0].p === 'gone';
  });
  await check('persistent session: queued while offline, session present', async () => {
    let s = await client('js-persist', { clean: false, properties: { sessionExpiryInterval: 60 } });
    await s.subscribeAsync('js/persist', { qos: 1 }); await s.endAsync();
    const p = await client('js-persist-pub'); await p.publishAsync('js/persist', 'while-away', { qos: 1 }); p.end();
    s = await client('js-persist', { clean: false, properties: { sessionExpiryInterval: 0 } });
    const present = s.connack.sessionPresent; const got = collect(s);
    const ok = await until(() => got.length === 1); s.end(); return present && ok && got[0].p === 'while-away';
  });
  await check('shared subscription: each message to one member', async () => {
    const a = await client('js-share-a'), b = await client('js-share-b'); const ga = collect(a), gb = collect(b);
    await a.subscribeAsync('$share/g/js/share', { qos: 1 }); await b.subscribeAsync('$share/g/js/share', { qos: 1 });
    const p = await client('js-share-pub'); for (let i = 0; i < 10; i++) await p.publishAsync('js/share', 'n' + i, { qos: 1 });
    const ok = await until(() => ga.length + gb.length === 10); await wait(200);
    a.end(); b.end(); p.end(); return ok && ga.length + gb.length === 10 && ga.length > 0 && gb.length > 0;
  });
  await check('message expiry: forwarded as what remains, expired not delivered', async () => {
    let s = await client('js-exp', { clean: false, properties: { sessionExpiryInterval: 60 } });
    await s.subscribeAsync('js/exp/#', { qos: 1 }); await s.endAsync();
    const p = await client('js-exp-pub');
    await p.publishAsync('js/exp/short', 'short', { qos: 1, properties: { messageExpiryInterval: 1 } });
    await p.publishAsync('js/exp/long', 'long', { qos: 1, properties: { messageExpiryInterval: 60 } }); p.end();
    await wait(1500);
    s = await client('js-exp', { clean: false, properties: { sessionExpiryInterval: 0 } }); const got = collect(s);
    const ok = await until(() => got.length === 1); await wait(300); s.end();
    return ok && got.length === 1 && got[0].p === 'long' && got[0].pkt.properties.messageExpiryInterval <= 60;
  });
  await check('topic aliases both ways', async () => {
    const s = await client('js-alias-sub', { properties: { topicAliasMaximum: 10 } }); const got = collect(s);
    await s.subscribeAsync('js/alias/#', { qos: 0 });
    const p = await client('js-alias-pub', { autoUseTopicAlias: true, autoAssignTopicAlias: true });
    for (let i = 0; i < 5; i++) await p.publishAsync('js/alias/one', 'a' + i, { qos: 1 });
    const ok = await until(() => got.length === 5); s.end(); p.end();
    return ok && got.every((m) => m.t === 'js/alias/one');
  });
  await check('request/response: response topic and correlation data', async () => {
    const r = await client('js-responder'); await r.subscribeAsync('js/req', { qos: 1 });
    r.on('message', (t, payload, pkt) => r.publish(pkt.properties.responseTopic, 'pong', { qos: 1, properties: { correlationData: pkt.properties.correlationData } }));
    const q = await client('js-requester'); const got = collect(q); await q.subscribeAsync('js/resp', { qos: 1 });
    await q.publishAsync('js/req', 'ping', { qos: 1, properties: { responseTopic: 'js/resp', correlationData: Buffer.from('c-42') } });
    const ok = await until(() => got.length === 1); r.end(); q.end();
    return ok && got[0].pkt.properties.correlationData.toString() === 'c-42';
  });
  for (const [name, outcome] of results) console.log(`${outcome === 'ok' ? 'ok    ' : 'FAILED'} ${name}${outcome === 'ok' ? '' : ' ' + outcome}`);
  process.exit(results.every(([, o]) => o === 'ok') ? 0 : 1);
})();
