"""MQTT packets written by hand for the hostile-client scripts beside it (3.1.1 and 5.0), and loopback sockets that
each come from their own source address (127.0.x.y), so --max-connections-per-address is no obstacle."""
import socket
import struct
import time


def vbi(value):
    """A variable byte integer (MQTT 1.5.5)."""
    out = b''
    while True:
        byte = value % 128
        value //= 128
        out += bytes([byte | 0x80 if value else byte])
        if not value:
            return out


def utf8(data):
    """A two-byte length and the bytes (MQTT 1.5.4)."""
    return struct.pack('>H', len(data)) + data


def packet(first_byte, body):
    return bytes([first_byte]) + vbi(len(body)) + body


def connect(client_id, version=4, flags=0x02, properties=None, payload_after_id=b''):
    """CONNECT; 5.0 (version 5) with its property section (empty unless given)."""
    header = utf8(b'MQTT') + bytes([version, flags]) + struct.pack('>H', 60)
    if version == 5:
        header += vbi(len(properties or b'')) + (properties or b'')
    return packet(0x10, header + utf8(client_id) + payload_after_id)


def accepted(connack):
    return len(connack) >= 4 and connack[0] == 0x20 and connack[3] == 0


def dial(port, index, timeout=10):
    """A TCP socket to 127.0.0.1:port from source address number `index`."""
    sock = socket.socket()
    sock.bind(('127.0.%d.%d' % (1 + (index // 250) % 250, 1 + index % 250), 0))
    sock.settimeout(timeout)
    sock.connect(('127.0.0.1', port))
    return sock


def dial_from(port, source, timeout=10):
    """A TCP socket to 127.0.0.1:port from the loopback address `source` (e.g. '127.0.0.2': a host of its own)."""
    sock = socket.socket()
    sock.bind((source, 0))
    sock.settimeout(timeout)
    sock.connect(('127.0.0.1', port))
    return sock


def recv_exactly(sock, n):
    """n bytes from the socket (OSError when it closes first)."""
    data = b''
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise OSError('closed')
        data += chunk
    return data


def read_packet(sock):
    """One packet: (first byte, body)."""
    first = recv_exactly(sock, 1)[0]
    length, shift = 0, 0
    while True:
        byte = recv_exactly(sock, 1)[0]
        length |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return first, recv_exactly(sock, length)


def live_receives(live, pub, count=200):
    """The publisher `pub` sends `count` QoS 1 messages of 100 B to 'live/x' and reads their PUBACKs; the subscriber
    `live` (subscribed to them) acknowledges what arrives within 3 s of the one before. Returns how many arrived."""
    for i in range(count):
        pub.sendall(packet(0x32, utf8(b'live/x') + struct.pack('>H', 1 + i) + b'l' * 100))
    for _ in range(count):
        read_packet(pub)
    got = 0
    live.settimeout(3)
    try:
        while got < count:
            first, body = read_packet(live)
            if first >> 4 == 3:
                got += 1
                if first & 0x06:
                    live.sendall(b'\x40\x02' + body[2 + struct.unpack('>H', body[:2])[0]:][:2])  # PUBACK
    except OSError:
        pass
    return got


def hold_open(port, n, payload, hold):
    """Opens n sockets to 127.0.0.1:port, each from its own source address, sends payload on each, says how many
    opened, and keeps them open for hold seconds."""
    socks, bad, t0 = [], 0, time.time()
    for i in range(n):
        try:
            c = dial(port, i, timeout=5)
            c.sendall(payload)
            socks.append(c)
        except OSError:
            bad += 1
    print('opened', len(socks), 'failed', bad, 'in', round(time.time() - t0, 1), 's', flush=True)
    time.sleep(hold)
    return socks
