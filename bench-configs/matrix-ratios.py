#!/usr/bin/env python3
"""Ratios per scenario from a matrix runner's report.md: ringmq / FlashMQ (R/F) and ringmq / Mosquitto (R/M).

    bench-configs/matrix-ratios.py bench-results/DATE-reference-stand-b-scaled/report.md [more reports ...]

Throughput rows compare msg/s (higher is better); paced rows (-rate) compare the delivery p99 (lower is better),
with each broker's delivered rate beside it; conn rows compare each level's connect p99. "lost" is the lost column
per broker (ringmq/flashmq/mosquitto); "-" where a broker did not run.
"""
import sys, re
def num(s):
    s = s.replace(',', '').replace('×', '').strip()
    try: return float(s)
    except ValueError: return None
for path in sys.argv[1:]:
    print('==', path)
    scen = None; head = None; rows = {}
    def flush():
        if not scen or not head: return
        if 'connections' in head:
            levels = sorted({k[1] for k in rows})
            for lv in levels:
                g = {b: rows.get((b, lv)) for b in ('ringmq', 'flashmq', 'mosquitto')}
                out(scen + '@' + lv, 'connect p99 ms', g, head.index('connect p99 ms'), False)
            return
        paced = 'p99' in scen_kind
        col = head.index('p99 µs') if paced else 1
        g = {b: rows.get((b, '')) for b in ('ringmq', 'flashmq', 'mosquitto')}
        out(scen, ('p99 µs' if paced else head[1]), g, col, not paced)
    def out(name, metric, g, col, higher):
        v = {b: (num(r[col]) if r else None) for b, r in g.items()}
        def ratio(a, b):
            return '%.2f' % (v[a] / v[b]) if v.get(a) and v.get(b) else '-'
        rate = ''
        if not higher and g.get('ringmq') and len(head) > 1 and 'msg/s' in head[1]:
            rate = ' rates ' + ' '.join('%s %s' % (b[0].upper(), g[b][1]) for b in g if g[b])
        lost = ' lost ' + '/'.join((g[b][head.index('lost')] if g[b] and 'lost' in head else '-') for b in g)
        print('%-28s %-16s R/F %s R/M %s | %s%s%s' % (name, metric, ratio('ringmq', 'flashmq'), ratio('ringmq', 'mosquitto'),
              ' '.join('%s %s' % (b[0].upper(), v[b]) for b in v), rate, lost))
    scen_kind = ''
    for line in open(path):
        if line.startswith('## '):
            flush(); scen = line[3:].strip(); head = None; rows = {}; scen_kind = ''
        elif line.startswith('`-mode'):
            scen_kind = 'p99' if ('-rate' in line and 'unlimited' not in line) else ''
            if 'conn' in line.split()[1]: scen_kind = ''
        elif line.startswith('| broker'):
            head = [c.strip() for c in line.strip().strip('|').split('|')]
        elif line.startswith('|') and head and not line.startswith('|---'):
            cells = [c.strip() for c in line.strip().strip('|').split('|')]
            key = (cells[0], cells[1] if 'connections' in head else '')
            rows[key] = cells
    flush()
