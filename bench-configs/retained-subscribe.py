#!/usr/bin/env python3
"""How many of a store's retained messages one SUBSCRIBE brings, against any broker on 127.0.0.1.

  bench-configs/retained-subscribe.py PORT COUNT SIZE [SUB_QOS] [PUB_QOS] [READ_KBPS]

Publishes COUNT retained messages of SIZE bytes (topics r/0 .. r/COUNT-1, MQTT 3.1.1, at PUB_QOS, default 0), then a
new client subscribes to '#' at SUB_QOS (default 0) and counts the retained PUBLISHes that arrive until none has for
3 s (acknowledging QoS 1). READ_KBPS (default 0: as fast as it can) makes it a slow reader: a 16 KiB receive buffer,
read at that many KB a second. Prints: received, distinct topics, how long from the SUBSCRIBE to the last. Standard
library only; bounded in count and time, loopback only.
"""
import socket
import struct
import sys
import time


def remaining_length(n):
    out = b''
    while True:
        byte, n = n % 128, n // 128
        out += bytes([byte | 0x80 if n else byte])
        if not n:
            return out


def string(text):
    data = text.encode() if isinstance(text, str) else text
    return struct.pack('>H', len(data)) + data


def connect(port, client_id, receive_buffer=0):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if receive_buffer:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.settimeout(10)
    sock.connect(('127.0.0.1', port))
    body = string('MQTT') + bytes([4, 2]) + struct.pack('>H', 60) + string(client_id)
    sock.sendall(bytes([0x10]) + remaining_length(len(body)) + body)
    if sock.recv(4)[:2] != b'\x20\x02':
        raise SystemExit('no CONNACK')
    return sock


class Pace:
    """Holds reads to a rate (bytes a second; 0: none)."""

    def __init__(self, rate):
        self.rate, self.bytes, self.start = rate, 0, time.time()

    def took(self, n):
        self.bytes += n
        if self.rate:
            ahead = self.bytes / self.rate - (time.time() - self.start)
            if ahead > 0:
                time.sleep(ahead)


def read_packet(sock, buffer, pace=None):
    """Returns (first byte, body, rest of the buffer), or (None, None, buffer) at the end of the stream."""
    while True:
        if len(buffer) >= 2:
            length, multiplier, at = 0, 1, 1
            while at < len(buffer) and at <= 4:
                byte = buffer[at]
                length += (byte & 127) * multiplier
                multiplier *= 128
                at += 1
                if not byte & 128:
                    if len(buffer) >= at + length:
                        return buffer[0], buffer[at:at + length], buffer[at + length:]
                    break
        data = sock.recv(1 << 16)
        if not data:
            return None, None, buffer
        if pace:
            pace.took(len(data))
        buffer += data


def main():
    port, count, size = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    sub_qos = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    pub_qos = int(sys.argv[5]) if len(sys.argv) > 5 else 0
    read_rate = int(sys.argv[6]) * 1000 if len(sys.argv) > 6 else 0
    publisher = connect(port, 'retained-pub')
    payload = b'x' * size
    batch = b''
    for i in range(count):
        packet_id = struct.pack('>H', i % 65000 + 1) if pub_qos else b''
        body = string('r/%d' % i) + packet_id + payload
        batch += bytes([0x31 | (pub_qos << 1)]) + remaining_length(len(body)) + body
        if len(batch) > 1 << 20:
            publisher.sendall(batch)
            batch = b''
    publisher.sendall(batch + b'\xc0\x00')  # a PINGREQ behind them: its PINGRESP says they were all read
    buffer = b''
    while True:
        first, _, buffer = read_packet(publisher, buffer)
        if first is None or first == 0xD0:
            break
    time.sleep(0.5)
    subscriber = connect(port, 'retained-sub', 16 * 1024 if read_rate else 0)
    subscriber.sendall(bytes([0x82]) + remaining_length(2 + 3 + 1) + struct.pack('>H', 1) + string('#') +
                       bytes([sub_qos]))
    subscriber.settimeout(3)
    buffer, received, topics = b'', 0, set()
    start = last = time.time()
    pace = Pace(read_rate)
    try:
        while True:
            first, body, buffer = read_packet(subscriber, buffer, pace)
            if first is None:
                break
            if first >> 4 == 3:
                received += 1
                last = time.time()
                topic_length = struct.unpack('>H', body[:2])[0]
                topics.add(body[2:2 + topic_length])
                if (first >> 1) & 3:
                    subscriber.sendall(b'\x40\x02' + body[2 + topic_length:4 + topic_length])
    except socket.timeout:
        pass
    print('received %d of %d retained messages, %d distinct, the last %.2f s after the SUBSCRIBE'
          % (received, count, len(topics), last - start))
    publisher.close()
    subscriber.close()


if __name__ == '__main__':
    main()
