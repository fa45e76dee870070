#!/usr/bin/env python3
"""Network probes for harness_check (run in a host's namespace):

    probe.py serve PORT              accept TCP connections; read each to its end,
                                     answer with the byte count read; runs until killed
    probe.py connect HOST PORT BYTES connect (1 s limit), send BYTES bytes, check the
                                     answer; print the connect time in ms. Exit 1 if any
                                     step fails or times out (5 s)
    probe.py udp HOST PORT COUNT     send COUNT datagrams of 1000 bytes
"""
import socket
import sys
import threading
import time


def serve(port):
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("0.0.0.0", port))
    listener.listen(64)
    print("ready", flush=True)

    def one(connection):
        with connection:
            total = 0
            while True:
                chunk = connection.recv(1 << 20)
                if not chunk:
                    break
                total += len(chunk)
            connection.sendall(str(total).encode())

    while True:
        connection, _ = listener.accept()
        threading.Thread(target=one, args=(connection,), daemon=True).start()


def connect(host, port, count):
    began = time.monotonic()
    connection = socket.create_connection((host, port), timeout=1.0)
    connected = time.monotonic()
    connection.settimeout(5.0)
    block = b"x" * 65536
    left = count
    while left > 0:
        connection.sendall(block[: min(left, len(block))])
        left -= min(left, len(block))
    connection.shutdown(socket.SHUT_WR)
    answer = b""
    while True:
        chunk = connection.recv(64)
        if not chunk:
            break
        answer += chunk
    if int(answer or b"-1") != count:
        sys.exit(f"probe: sent {count} bytes, the peer read {answer.decode() or 'nothing'}")
    print(f"{(connected - began) * 1000.0:.1f}")


def udp(host, port, count):
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for _ in range(count):
        sender.sendto(b"u" * 1000, (host, port))


def main():
    verb = sys.argv[1] if len(sys.argv) > 1 else ""
    try:
        if verb == "serve" and len(sys.argv) == 3:
            serve(int(sys.argv[2]))
        elif verb == "connect" and len(sys.argv) == 5:
            connect(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
        elif verb == "udp" and len(sys.argv) == 5:
            udp(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
        else:
            sys.exit(__doc__)
    except OSError as failure:
        sys.exit(f"probe: {failure}")


if __name__ == "__main__":
    main()
