#!/usr/bin/env python3
"""Primitive arrays in a JVM heap dump, by length: which byte[] and int[] sizes hold the heap.

    jcmd PID GC.heap_dump /tmp/broker.hprof      # live objects only (a full collection first)
    bench-configs/hprof-arrays.py /tmp/broker.hprof [TOP]

Reads the HPROF format directly (no tool to install): for byte[] the TOP (default 25) lengths by total bytes, with
the count and the first bytes of two of them (a string, a filled buffer and a zeroed one tell themselves apart);
for int[] the same without samples. docs/perf/2026-12-02-idle-ring.md found the ingress ring's 4,096 inline arrays
(256 bytes each, 0xFF-filled) and the jar's central directory (0.5 MB) this way.
"""
import collections
import struct
import sys


def main(path, top):
    data = open(path, 'rb').read()
    p = data.index(b'\0') + 1
    idsize = struct.unpack('>I', data[p:p + 4])[0]
    p += 12
    sizes = {2: idsize, 4: 1, 5: 2, 6: 4, 7: 8, 8: 1, 9: 2, 10: 4, 11: 8}
    byte_arrays = collections.Counter()
    samples = collections.defaultdict(list)
    int_arrays = collections.Counter()
    while p < len(data):
        tag = data[p]
        length = struct.unpack('>I', data[p + 5:p + 9])[0]
        body = p + 9
        p = body + length
        if tag not in (0x0c, 0x1c):  # heap dump and heap dump segment; strings, classes, traces are skipped
            continue
        q, end = body, body + length
        while q < end:
            sub = data[q]
            q += 1
            if sub == 0xff:  # root unknown
                q += idsize
            elif sub == 0x01:  # root JNI global
                q += 2 * idsize
            elif sub in (0x02, 0x03, 0x08):  # JNI local, Java frame, thread object
                q += idsize + 8
            elif sub in (0x04, 0x06):  # native stack, thread block
                q += idsize + 4
            elif sub in (0x05, 0x07):  # sticky class, monitor used
                q += idsize
            elif sub == 0x20:  # class dump
                q += 7 * idsize + 8
                q += 2
                for _ in range(struct.unpack('>H', data[q - 2:q])[0]):  # constant pool
                    q += 3 + sizes[data[q + 2]]
                q += 2
                for _ in range(struct.unpack('>H', data[q - 2:q])[0]):  # static fields
                    q += idsize + 1 + sizes[data[q + idsize]]
                q += 2 + struct.unpack('>H', data[q:q + 2])[0] * (idsize + 1)  # instance fields
            elif sub == 0x21:  # instance dump
                q += 2 * idsize + 8 + struct.unpack('>I', data[q + 2 * idsize + 4:q + 2 * idsize + 8])[0]
            elif sub == 0x22:  # object array
                q += 2 * idsize + 8 + struct.unpack('>I', data[q + idsize + 4:q + idsize + 8])[0] * idsize
            elif sub == 0x23:  # primitive array
                count = struct.unpack('>I', data[q + idsize + 4:q + idsize + 8])[0]
                kind = data[q + idsize + 8]
                start = q + idsize + 9
                if kind == 8:
                    byte_arrays[count] += 1
                    if len(samples[count]) < 2:
                        samples[count].append(data[start:start + min(count, 24)])
                elif kind == 10:
                    int_arrays[count] += 1
                q = start + count * sizes[kind]
            else:
                sys.exit('unknown heap dump record 0x%x at offset %d' % (sub, q - 1))
    print('byte[]: %d arrays, %d bytes' % (sum(byte_arrays.values()), sum(n * c for n, c in byte_arrays.items())))
    for n, c in sorted(byte_arrays.items(), key=lambda e: -e[0] * e[1])[:top]:
        print('  length %9d  x %6d  = %9d bytes  e.g. %s' % (n, c, n * c, samples[n]))
    print('int[]: %d arrays, %d bytes' % (sum(int_arrays.values()), 4 * sum(n * c for n, c in int_arrays.items())))
    for n, c in sorted(int_arrays.items(), key=lambda e: -e[0] * e[1])[:top]:
        print('  length %9d  x %6d  = %9d bytes' % (n, c, 4 * n * c))


if __name__ == '__main__':
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 25)
